import HLSPlaylist
import LiveTimeline
import OriginCore
import OriginServer
import Testing

/// `hdcpLevel:` and `allowedCPC:` of a channel (docs/hls-playlist.md, video attributes).
@Suite("Configuration: HDCP-LEVEL and ALLOWED-CPC")
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
