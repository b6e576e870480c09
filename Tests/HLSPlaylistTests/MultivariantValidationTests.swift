import TestSupport
import Testing

@testable import HLSPlaylist

/// `MultivariantPlaylist.validate()`: one playlist per rule that breaks only that rule, and the fixed playlist.
@Suite("Multivariant playlist validation", .offThePool)
struct MultivariantValidationTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var rule: MultivariantRule
        var what: String
        var broken: String
        var fixed: String
        var testDescription: String { "\(rule.rawValue): \(what)" }
    }

    static let english =
        #"#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="English",LANGUAGE="en",DEFAULT=YES,AUTOSELECT=YES,URI="en.m3u8""#
    static let french = #"#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="Français",LANGUAGE="fr",URI="fr.m3u8""#
    static let subtitles = #"#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="English",LANGUAGE="en",URI="s.m3u8""#
    static let captions = #"#EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS,GROUP-ID="cc",NAME="CC1",INSTREAM-ID="CC1""#
    static let hi = #"#EXT-X-STREAM-INF:BANDWIDTH=2000000,AUDIO="aud",SUBTITLES="subs",CLOSED-CAPTIONS="cc""#
    static let lo = #"#EXT-X-STREAM-INF:BANDWIDTH=800000,AUDIO="aud",SUBTITLES="subs",CLOSED-CAPTIONS="cc""#

    /// A valid playlist (English and French audio, English subtitles, CC1 captions, two video variants) with
    /// `replacements` applied to its lines.
    static func playlist(_ replacements: [String: String] = [:], adding extra: [String] = []) -> String {
        let lines = ["#EXTM3U", english, french, subtitles, captions] + extra + [hi, "hi.m3u8", lo, "lo.m3u8"]
        return lines.map { replacements[$0] ?? $0 }.joined(separator: "\n") + "\n"
    }

    static let cases: [Case] = [
        Case(
            rule: .uniqueNameInGroup, what: "two AUDIO renditions named English",
            broken: playlist([french: french.replacingOccurrences("Français", "English")]), fixed: playlist()),
        Case(
            rule: .oneDefaultPerGroup, what: "English and French both DEFAULT=YES",
            broken: playlist([french: french.replacingOccurrences(#"fr",URI"#, #"fr",DEFAULT=YES,AUTOSELECT=YES,URI"#)]
            ),
            fixed: playlist([french: french.replacingOccurrences(#"fr",URI"#, #"fr",AUTOSELECT=YES,URI"#)])),
        Case(
            rule: .autoselectWhenDefault, what: "DEFAULT=YES with AUTOSELECT=NO",
            broken: playlist([english: english.replacingOccurrences("AUTOSELECT=YES", "AUTOSELECT=NO")]),
            fixed: playlist()),
        Case(
            rule: .forcedOnlyOnSubtitles, what: "FORCED on an AUDIO rendition",
            broken: playlist([french: french.replacingOccurrences(#"URI="#, #"FORCED=NO,URI="#)]),
            fixed: playlist([subtitles: subtitles.replacingOccurrences(#"URI="#, #"FORCED=YES,URI="#)])),
        Case(
            rule: .instreamIDOnClosedCaptions, what: "CLOSED-CAPTIONS without INSTREAM-ID",
            broken: playlist([captions: captions.replacingOccurrences(#",INSTREAM-ID="CC1""#, "")]),
            fixed: playlist()),
        Case(
            rule: .instreamIDOnClosedCaptions, what: "INSTREAM-ID CC5",
            broken: playlist([captions: captions.replacingOccurrences(#"ID="CC1""#, #"ID="CC5""#)]),
            fixed: playlist([captions: captions.replacingOccurrences(#"ID="CC1""#, #"ID="CC4""#)])),
        Case(
            rule: .instreamIDOnClosedCaptions, what: "INSTREAM-ID on SUBTITLES",
            broken: playlist([subtitles: subtitles + #",INSTREAM-ID="CC1""#]), fixed: playlist()),
        Case(
            rule: .closedCaptionsWithoutURI, what: "CLOSED-CAPTIONS with a URI",
            broken: playlist([captions: captions + #",URI="cc.m3u8""#]), fixed: playlist()),
        Case(
            rule: .distinctInstreamIDs, what: "two CC1 renditions in one group",
            broken: playlist(adding: [captions.replacingOccurrences(#"NAME="CC1""#, #"NAME="Second""#)]),
            fixed: playlist(adding: [
                captions.replacingOccurrences(#"NAME="CC1""#, #"NAME="Second""#).replacingOccurrences(
                    #"ID="CC1""#, #"ID="CC3""#)
            ])),
        Case(
            rule: .referencedGroupExists, what: "AUDIO naming a group that does not exist",
            broken: playlist([lo: lo.replacingOccurrences(#"AUDIO="aud""#, #"AUDIO="audio""#)]), fixed: playlist()),
        Case(
            rule: .referencedGroupExists, what: "SUBTITLES naming an AUDIO group",
            broken: playlist([lo: lo.replacingOccurrences(#"SUBTITLES="subs""#, #"SUBTITLES="aud""#)]),
            fixed: playlist()),
        Case(
            rule: .sameGroupsOnEveryVariant, what: "SUBTITLES offered to one variant only",
            broken: playlist([lo: lo.replacingOccurrences(#",SUBTITLES="subs""#, "")]), fixed: playlist()),
        Case(
            rule: .sameGroupsOnEveryVariant, what: "a video variant without AUDIO beside one with it",
            broken: playlist([hi: hi.replacingOccurrences(#"AUDIO="aud","#, "")]), fixed: playlist()),
        Case(
            rule: .closedCaptionsNoneEverywhere, what: "NONE on one variant, no attribute on the other",
            broken: playlist([
                captions: "", hi: hi.replacingOccurrences(#""cc""#, "NONE"),
                lo: lo.replacingOccurrences(#",CLOSED-CAPTIONS="cc""#, ""),
            ]),
            fixed: playlist([
                captions: "", hi: hi.replacingOccurrences(#""cc""#, "NONE"),
                lo: lo.replacingOccurrences(#""cc""#, "NONE"),
            ])),
        Case(
            rule: .closedCaptionsNoneEverywhere, what: "an audio-only variant without the NONE its video variants have",
            broken: playlist(
                [
                    captions: "", hi: hi.replacingOccurrences(#""cc""#, "NONE"),
                    lo: lo.replacingOccurrences(#""cc""#, "NONE"),
                ], adding: [#"#EXT-X-STREAM-INF:BANDWIDTH=80000,CODECS="mp4a.40.2",AUDIO="aud""#, "en.m3u8"]),
            fixed: playlist(
                [
                    captions: "", hi: hi.replacingOccurrences(#""cc""#, "NONE"),
                    lo: lo.replacingOccurrences(#""cc""#, "NONE"),
                ],
                adding: [
                    #"#EXT-X-STREAM-INF:BANDWIDTH=80000,CODECS="mp4a.40.2",AUDIO="aud",CLOSED-CAPTIONS=NONE"#,
                    "en.m3u8",
                ])),
        Case(
            rule: .languageTag, what: "LANGUAGE english!",
            broken: playlist([english: english.replacingOccurrences(#"LANGUAGE="en""#, #"LANGUAGE="english!""#)]),
            fixed: playlist([english: english.replacingOccurrences(#"LANGUAGE="en""#, #"LANGUAGE="en-GB""#)])),
    ]

    @Test("a playlist breaking one rule gets exactly that error; the fixed playlist none", arguments: cases)
    func brokenAndFixed(_ validationCase: Case) throws {
        let broken = try MultivariantPlaylist.parse(validationCase.broken)
        let errors = broken.validate()
        #expect(errors.map(\.rule) == [validationCase.rule], "\(errors)")
        #expect(try MultivariantPlaylist.parse(validationCase.fixed).validate() == [])
    }

    @Test("the untouched base playlist is valid, so each case's error comes from its change")
    func basePlaylistIsValid() throws {
        #expect(try MultivariantPlaylist.parse(Self.playlist()).validate() == [])
    }

    @Test("every rule has a case")
    func everyRuleIsCovered() {
        #expect(Set(Self.cases.map(\.rule)) == Set(MultivariantRule.allCases))
    }

    @Test("errors name the attribute, the group and the values at fault")
    func errorMessages() throws {
        let playlist = try MultivariantPlaylist.parse(
            Self.playlist([Self.french: Self.french.replacingOccurrences("Français", "English")]))
        #expect(
            playlist.validate()
                == [
                    PlaylistValidationError(
                        attribute: "NAME", message: #""English" appears twice in AUDIO group "aud""#,
                        rule: .uniqueNameInGroup)
                ])
        let missing = try MultivariantPlaylist.parse(
            Self.playlist([Self.lo: Self.lo.replacingOccurrences(#",SUBTITLES="subs""#, "")]))
        #expect(
            missing.validate().map(\.description) == [
                "SUBTITLES: variant lo.m3u8 has no SUBTITLES while variant hi.m3u8 has one; every variant must be "
                    + "offered the same groups"
            ])
    }

    static let languageTags: [(String, Bool)] = [
        ("en", true), ("fra", true), ("EN", true), ("en-US", true), ("zh-Hant-TW", true), ("es-419", true),
        ("de-CH-1996", true), ("x-abcdefgh", false), ("", false), ("e", false), ("engl", false), ("english!", false),
        ("en_US", false), ("en-", false), ("-en", false), ("en--US", false), ("en-abcdefghi", false), ("e1", false),
        ("ën", false), ("en US", false),
    ]

    @Test("isLanguageTag accepts RFC 5646 shaped tags only", arguments: languageTags)
    func languageTagShape(tag: String, valid: Bool) {
        #expect(MultivariantPlaylist.isLanguageTag(tag) == valid)
    }

    static let instreamIDs: [(String, Bool)] = [
        ("CC1", true), ("CC4", true), ("SERVICE1", true), ("SERVICE63", true), ("CC0", false), ("CC5", false),
        ("CC01", false), ("SERVICE0", false), ("SERVICE64", false), ("SERVICE07", false), ("cc1", false),
        ("SERVICE", false), ("", false),
    ]

    @Test("INSTREAM-ID is CC1-CC4 or SERVICE1-SERVICE63", arguments: instreamIDs)
    func instreamIDShape(id: String, valid: Bool) {
        #expect(MultivariantPlaylist.isInstreamID(id) == valid)
    }
}

extension String {
    /// This text with every `target` replaced by `replacement` (without Foundation).
    fileprivate func replacingOccurrences(_ target: String, _ replacement: String) -> String {
        var result = ""
        var rest = self[...]
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound] + replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}
