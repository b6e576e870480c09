import TestSupport
import Testing

@testable import HLSPlaylist

@Suite("EXT-X-DEFINE, EXT-X-KEY and I-frame stream validation (HLS rules 30, 33, 36)", .offThePool)
struct DefineKeyValidationTests {
    static func media(
        definitions: [VariableDefinition] = [.import(name: "token")], keys: [Int: EncryptionKey] = [:],
        mediaSequence: UInt64 = 100, count: Int = 4
    ) -> MediaPlaylist {
        let segments = (0..<count).map { index in
            var segment = MediaSegment(uri: "\(mediaSequence + UInt64(index)).ts?token={$token}", duration: 2)
            segment.key = keys[index]
            return segment
        }
        return MediaPlaylist(
            targetDuration: 2, mediaSequence: mediaSequence, definitions: definitions, segments: segments)
    }

    static let key33 = EncryptionKey.aes128(uri: "../key-33.key?token={$token}")
    static let key34 = EncryptionKey.aes128(uri: "../key-34.key?token={$token}")

    @Test("the worked example's media playlist breaks no rule")
    func goodMediaPlaylist() {
        let playlist = Self.media(keys: [0: Self.key33, 2: Self.key34])
        #expect(playlist.validateDefinesAndKeys(importable: ["token"], declaredVersion: 8) == [])
        #expect(playlist.validateDefinesAndKeys(importable: ["token"], declaredVersion: playlist.minimumVersion) == [])
    }

    @Test("rule 30: IMPORT of a name the multivariant lacks, a version below 8, an undefined reference")
    func badDefines() {
        let playlist = Self.media()
        #expect(
            playlist.validateDefinesAndKeys(importable: ["other"], declaredVersion: 7).map(\.description) == [
                "HLS rule 30: EXT-X-DEFINE needs EXT-X-VERSION 8 or more; the playlist declares 7",
                #"HLS rule 30: EXT-X-DEFINE:IMPORT="token" names no variable of the multivariant playlist"#,
            ])
        let queryParameter = Self.media(definitions: [.queryParameter(name: "token")])
        #expect(
            queryParameter.validateDefinesAndKeys(importable: [], declaredVersion: 8).map(\.description) == [
                "HLS rule 30: EXT-X-DEFINE with QUERYPARAM needs EXT-X-VERSION 11 or more; the playlist declares 8"
            ])
        let undefined = Self.media(definitions: [])
        #expect(
            undefined.validateDefinesAndKeys(importable: ["token"]).map(\.description) == [
                "HLS rule 30: {$token} in 100.ts?token={$token} refers to no EXT-X-DEFINE of the playlist"
            ])
        let badName = Self.media(definitions: [.import(name: "token"), .value(name: "a b", value: "1")])
        #expect(
            badName.validateDefinesAndKeys(importable: ["token"]).map(\.rule) == [.define])
        let twice = Self.media(definitions: [.import(name: "token"), .queryParameter(name: "token")])
        #expect(
            twice.validateDefinesAndKeys(importable: ["token"]).map(\.message) == ["variable token is defined twice"])
    }

    @Test("rule 33: an AES-128 key needs a URI and a 128-bit IV")
    func badKeys() {
        let playlist = Self.media(keys: [0: .aes128(uri: ""), 1: .aes128(uri: "k", iv: [1, 2])])
        #expect(
            playlist.validateDefinesAndKeys(importable: ["token"]).map(\.message) == [
                "EXT-X-KEY METHOD=AES-128 has an empty URI",
                "EXT-X-KEY IV has 2 bytes; it must be 128 bits (0x + 32 hex digits)",
            ])
    }

    @Test("rule 33: the key in force at each MSN stays across snapshots")
    func keyContinuity() {
        let before = Self.media(keys: [0: Self.key33, 2: Self.key34])
        // Slid by one: 101 is first and re-states key 33, which still applies to it.
        let good = Self.media(keys: [0: Self.key33, 1: Self.key34], mediaSequence: 101)
        #expect(good.validateKeyContinuity(after: before) == [])
        // Slid by one but the KEY for 101 was dropped with 100.
        let dropped = Self.media(keys: [1: Self.key34], mediaSequence: 101)
        #expect(
            dropped.validateKeyContinuity(after: before).map(\.description) == [
                "HLS rule 33: segment 101 (101.ts?token={$token}) had key "
                    + #"METHOD=AES-128,URI="../key-33.key?token={$token}" and now has METHOD=NONE: the KEY that "#
                    + "applies to it was removed or changed"
            ])
        // Clear segments: no KEY and METHOD=NONE are the same key.
        let clear = Self.media(keys: [:])
        #expect(Self.media(keys: [0: EncryptionKey.none]).validateKeyContinuity(after: clear) == [])
    }

    static func multivariant(
        definitions: [VariableDefinition] = [.value(name: "token", value: "T")], sessionKeys: [EncryptionKey]
    ) -> MultivariantPlaylist {
        var playlist = MultivariantPlaylist(
            independentSegments: true, definitions: definitions,
            variants: [VariantStream(uri: "hi/index.m3u8", bandwidth: 1000)])
        playlist.sessionKeys = sessionKeys
        playlist.iFrameStreams = [IFrameStream(uri: "hi/iframes.m3u8", bandwidth: 100)]
        return playlist
    }

    /// Resolves `key-N.key…` (multivariant-relative) and `../key-N.key…` (media-relative) to one form.
    static func resolve(_ uri: String) -> String {
        "/live/news/" + (uri.hasPrefix("../") ? String(uri.dropFirst(3)) : uri)
    }

    @Test("rule 33: SESSION-KEY matches a media KEY, never NONE")
    func sessionKeys() {
        let mediaKeys = [Self.key33, Self.key34].map { key -> EncryptionKey in
            guard case .aes128(let uri, let iv) = key else { return key }
            return .aes128(uri: Self.resolve(uri), iv: iv)
        }
        let good = Self.multivariant(sessionKeys: [.aes128(uri: "key-34.key?token={$token}")])
        #expect(good.validateSessionKeys(against: mediaKeys, resolve: Self.resolve) == [])
        #expect(good.validateDefines(declaredVersion: 8) == [])
        let mismatched = Self.multivariant(sessionKeys: [.aes128(uri: "key-35.key?token={$token}"), .none])
        #expect(
            mismatched.validateSessionKeys(against: mediaKeys, resolve: Self.resolve).map(\.message) == [
                "EXT-X-SESSION-KEY URI /live/news/key-35.key?token={$token} matches no EXT-X-KEY of the media playlists",
                "EXT-X-SESSION-KEY has METHOD=NONE",
            ])
    }

    @Test("rule 30 in a multivariant playlist: no IMPORT, references defined, version")
    func multivariantDefines() {
        let importing = Self.multivariant(definitions: [.import(name: "token")], sessionKeys: [])
        #expect(
            importing.validateDefines(declaredVersion: 8).map(\.message) == [
                #"EXT-X-DEFINE:IMPORT="token" is only allowed in media playlists"#
            ])
        var undefined = Self.multivariant(definitions: [], sessionKeys: [.aes128(uri: "key-1.key?token={$token}")])
        undefined.variants[0].uri = "hi/index.m3u8?token={$token}"
        #expect(
            undefined.validateDefines().map(\.message) == [
                "{$token} in hi/index.m3u8?token={$token} refers to no EXT-X-DEFINE of the playlist"
            ])
    }

    @Test("rule 36: I-frame streams need BANDWIDTH, URI, and an I-FRAMES-ONLY target")
    func iFrameStreams() {
        var playlist = Self.multivariant(sessionKeys: [])
        var iFrames = MediaPlaylist(targetDuration: 2)
        iFrames.iFramesOnly = true
        #expect(playlist.validateIFrameStreams(targets: ["hi/iframes.m3u8": iFrames]) == [])
        #expect(
            playlist.validateIFrameStreams(targets: ["hi/iframes.m3u8": MediaPlaylist(targetDuration: 2)]).map(
                \.message) == ["I-frame playlist hi/iframes.m3u8 lacks EXT-X-I-FRAMES-ONLY"])
        playlist.iFrameStreams.append(IFrameStream(uri: "lo/iframes.m3u8", bandwidth: 0))
        #expect(
            playlist.validateIFrameStreams(targets: ["hi/iframes.m3u8": iFrames]).map(\.message) == [
                "EXT-X-I-FRAME-STREAM-INF lo/iframes.m3u8 has BANDWIDTH 0",
                "I-frame playlist lo/iframes.m3u8 was not given to check",
            ])
    }

    @Test("the declared version is read from the text")
    func declaredVersion() {
        #expect(PlaylistVersion.declared(in: "#EXTM3U\n#EXT-X-VERSION:11\n#EXT-X-TARGETDURATION:2\n") == 11)
        #expect(PlaylistVersion.declared(in: "#EXTM3U\r\n#EXT-X-TARGETDURATION:2\r\n") == nil)
    }
}
