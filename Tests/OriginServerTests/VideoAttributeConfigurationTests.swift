import HLSPlaylist
import LiveTimeline
import OriginCore
import OriginServer
import TestSupport
import Testing

/// `hdcpLevel:` and `allowedCPC:` of a channel and of a rendition (docs/hls-playlist.md, video attributes).
@Suite("Configuration: HDCP-LEVEL and ALLOWED-CPC", .offThePool)
struct VideoAttributeConfigurationTests {
    @Test func hdcpLevelAndAllowedCPCAreReadPerChannel() throws {
        let configuration = try ConfigurationFile.parse(
            """
            channels:
              - name: uhd
                hdcpLevel: TYPE-1
                allowedCPC: "com.apple.streamingkeydelivery:AppleMain/Main"
              - name: plain
              - name: tv
                allowedCPC: "com.example.drm1:SMART-TV/PC"
            """)
        let channels = configuration.origin.channels
        #expect(channels[0].hdcpLevel == .type1)
        #expect(channels[0].allowedCPC?.rendered == "com.apple.streamingkeydelivery:AppleMain/Main")
        #expect(channels[1].hdcpLevel == nil)
        #expect(channels[1].allowedCPC == nil)
        #expect(channels[2].allowedCPC?.rendered == "com.example.drm1:SMART-TV/PC")
    }

    @Test func aRenditionsOwnHDCPLevelAndAllowedCPCAreReadBesideTheChannels() throws {
        let configuration = try ConfigurationFile.parse(
            """
            channels:
              - name: uhd
                hdcpLevel: TYPE-0
                allowedCPC: "com.apple.streamingkeydelivery:AppleMain"
                renditions:
                  - name: 2160p
                    hdcpLevel: TYPE-1
                    allowedCPC: "com.apple.streamingkeydelivery:AppleMain/Main"
                  - name: 1080p
                  - name: 540p
                    hdcpLevel: NONE
            """)
        let channel = try #require(configuration.origin.channels.first)
        #expect(channel.hdcpLevel == .type0)
        #expect(channel.renditions.map(\.hdcpLevel) == [.type1, nil, HDCPLevel.none])
        #expect(
            channel.renditions.map { $0.allowedCPC?.rendered } == [
                "com.apple.streamingkeydelivery:AppleMain/Main", nil, nil,
            ])
    }

    @Test(arguments: [
        (
            "{name: 2160p, hdcpLevel: TYPE-2}",
            "test.yaml: channel 'a': rendition '2160p': hdcpLevel 'TYPE-2' is not one of TYPE-0, TYPE-1, NONE"
        ),
        (
            "{name: 2160p, allowedCPC: \"com.example.drm1:\"}",
            "test.yaml: channel 'a': rendition '2160p': ALLOWED-CPC entry 'com.example.drm1:': CPC labels are "
                + "letters, digits and '-', '/'-separated"
        ),
        (
            "{name: en, audio: {group: aud}, hdcpLevel: TYPE-1}",
            "test.yaml: channel 'a': rendition 'en': hdcpLevel and allowedCPC are for video renditions, not audio "
                + "or subtitles ones"
        ),
    ])
    func badRenditionValuesAreRefusedByChannelAndRendition(rendition: String, message: String) {
        #expect(ConfigurationFileTests.refusal("channels:\n  - name: a\n    renditions: [\(rendition)]\n") == message)
    }

    @Test(arguments: [
        ("hdcpLevel: TYPE-2", "test.yaml: channel 'a': hdcpLevel 'TYPE-2' is not one of TYPE-0, TYPE-1, NONE"),
        ("hdcpLevel: type-0", "test.yaml: channel 'a': hdcpLevel 'type-0' is not one of TYPE-0, TYPE-1, NONE"),
        (
            "allowedCPC: \"com.apple.streamingkeydelivery:Apple Main\"",
            "test.yaml: channel 'a': ALLOWED-CPC entry 'com.apple.streamingkeydelivery:Apple Main': CPC labels are "
                + "letters, digits and '-', '/'-separated"
        ),
    ])
    func badValuesAreRefusedByName(line: String, message: String) {
        #expect(ConfigurationFileTests.refusal("channels:\n  - name: a\n    \(line)\n") == message)
    }
}
