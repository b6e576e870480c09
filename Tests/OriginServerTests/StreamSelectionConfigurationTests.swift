import LiveTimeline
import MediaProbe
import OriginCore
import OriginServer
import TestSupport
import Testing

/// `srt:` of a rendition: cut from another rendition's SRT stream by program, PID or language (docs/srt.md).
@Suite("Configuration: renditions cut from one SRT stream", .offThePool)
struct StreamSelectionConfigurationTests {
    static func channel(_ renditions: String) -> String {
        "channels:\n  - name: a\n    renditions:\n      - { name: main }\n" + renditions
    }

    @Test func selectionsAreRead() throws {
        let configuration = try ConfigurationFile.parse(
            Self.channel(
                "      - { name: en, srt: { from: main, language: eng } }\n"
                    + "      - { name: b, srt: { from: main, program: 2 } }\n"
                    + "      - { name: v, srt: { from: main, pid: 256 } }\n"
                    + "      - { name: w, srt: { from: main, type: video } }\n"))
        let renditions = try #require(configuration.origin.channels.first).renditions
        #expect(
            renditions.map(\.srt) == [
                nil, StreamSelection(from: "main", language: "eng"), StreamSelection(from: "main", program: 2),
                StreamSelection(from: "main", pid: 256), StreamSelection(from: "main", kind: .video),
            ])
    }

    @Test(arguments: [
        ("      - { name: x, srt: { from: main, program: 1, pid: 256 } }\n", "give program or pid, not both"),
        ("      - { name: x, srt: { from: main, language: english } }\n", "language must be an ISO 639-2 code"),
        ("      - { name: x, srt: { from: main, language: ENG } }\n", "language must be an ISO 639-2 code"),
        ("      - { name: x, srt: { from: nope, pid: 256 } }\n", "from 'nope' is not a rendition of the channel"),
        ("      - { name: x, srt: { from: main, pid: 8191 } }\n", "pid must be 32-8190"),
        ("      - { name: x, srt: { from: main, program: 0 } }\n", "program must be 1-65535"),
        ("      - { name: x, srt: { from: main, pid: 256, language: eng } }\n", "pid selects one stream alone"),
        ("      - { name: x, srt: { from: main, language: eng, type: video } }\n", "language selects an audio stream"),
        (
            "      - { name: x, srt: { from: main, pid: 256 } }\n      - { name: y, srt: { from: x, pid: 257 } }\n",
            "from 'x', which is itself cut from 'main'"
        ),
    ])
    func badSelectionsAreRefusedNamingTheRendition(renditions: String, message: String) throws {
        let refusal = try #require(ConfigurationFileTests.refusal(Self.channel(renditions)))
        #expect(refusal.hasPrefix("test.yaml: channel 'a': rendition '"), "\(refusal)")
        #expect(refusal.contains(message), "\(refusal)")
    }

    @Test(arguments: [
        ("      - { name: x, srt: { from: main, lang: eng } }\n", "lang"),
        ("      - { name: x, srt: { from: main, type: data } }\n", "type must be video or audio"),
    ])
    func unknownKeysAndTypesAreRefused(renditions: String, message: String) throws {
        let refusal = try #require(ConfigurationFileTests.refusal(Self.channel(renditions)))
        #expect(refusal.contains(message) && refusal.contains("srt"), "\(refusal)")
    }
}
