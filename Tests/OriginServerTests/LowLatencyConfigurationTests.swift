import Foundation
import LiveTimeline
import OriginCore
import OriginServer
import TestSupport
import Testing

/// `lowLatency:` of a channel in the YAML configuration.
@Suite("Configuration: Low-Latency HLS", .offThePool)
struct LowLatencyConfigurationTests {
    static let lowLatencyPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("config/low-latency.yaml").path

    @Test func partTargetIsReadAndFixesTheTargetDuration() throws {
        let configuration = try ConfigurationFile.parse(
            "channels:\n  - name: sport\n    segmentDuration: 2\n    lowLatency: { partTarget: 0.4 }\n"
                + "  - name: plain\n")
        let sport = try #require(configuration.origin.channels.first)
        #expect(sport.lowLatency == LowLatencyConfiguration(partTarget: 0.4))
        #expect(sport.lowLatency?.partTargetMilliseconds == 400)
        #expect(sport.targetDuration == 2)
        let plain = try #require(configuration.origin.channels.last)
        #expect(plain.lowLatency == nil)
        #expect(plain.targetDuration == nil)
    }

    @Test func aConfiguredTargetDurationIsKept() throws {
        let configuration = try ConfigurationFile.parse(
            "channels:\n  - name: a\n    targetDuration: 4\n    segmentDuration: 2\n    lowLatency: { partTarget: 2 }\n"
        )
        #expect(configuration.origin.channels.first?.targetDuration == 4)
        #expect(configuration.origin.channels.first?.lowLatency?.partTarget == 2)
    }

    @Test func autoCreatedChannelsTakeIt() throws {
        let configuration = try ConfigurationFile.parse(
            "ingest:\n  defaults:\n    segmentDuration: 1\n    lowLatency: { partTarget: 0.2 }\n")
        #expect(configuration.origin.ingest.autoCreatedChannel.lowLatency?.partTarget == 0.2)
        #expect(configuration.origin.ingest.autoCreatedChannel.targetDuration == 1)
    }

    @Test(arguments: [
        (
            "channels:\n  - name: a\n    lowLatency: { partTarget: 0.05 }\n",
            "test.yaml: channel 'a': lowLatency.partTarget 0.05 must be between 0.1 and half the target duration (1.0)"
        ),
        (
            "channels:\n  - name: a\n    segmentDuration: 2\n    lowLatency: { partTarget: 1.5 }\n",
            "test.yaml: channel 'a': lowLatency.partTarget 1.5 must be between 0.1 and half the target duration (1.0)"
        ),
        (
            "channels:\n  - name: a\n    lowLatency: {}\n",
            "test.yaml: channel 'a': lowLatency.partTarget is required (seconds, e.g. 0.4)"
        ),
        (
            "ingest:\n  defaults:\n    lowLatency: { partTarget: 3 }\n",
            "test.yaml: ingest.defaults: lowLatency.partTarget 3.0 must be between 0.1 and half the target duration "
                + "(1.0)"
        ),
    ])
    func outOfRangePartTargetsAreRefusedByKeyPath(text: String, message: String) throws {
        #expect(ConfigurationFileTests.refusal(text) == message)
    }

    @Test func aPartTargetThatIsNoNumberNamesItsKeyPath() throws {
        let message = try #require(
            ConfigurationFileTests.refusal("channels:\n  - name: a\n    lowLatency: { partTarget: fast }\n"))
        #expect(message.contains("lowLatency.partTarget"), "\(message)")
    }

    @Test func unknownKeysUnderLowLatencyAreRefused() throws {
        let message = try #require(
            ConfigurationFileTests.refusal("channels:\n  - name: a\n    lowLatency: { partTargt: 0.4 }\n"))
        #expect(message.contains("unknown key 'partTargt'"), "\(message)")
    }

    @Test func theShippedLowLatencyExampleLoads() throws {
        let configuration = try ConfigurationFile.load(path: Self.lowLatencyPath)
        let channels = configuration.origin.channels
        let demo = try #require(channels.first { $0.name == "demo" })
        #expect(demo.source == .testSource)
        #expect(demo.lowLatency?.partTarget == 0.4)
        #expect(demo.targetDuration == 2)
        #expect(configuration.origin.ingest.autoCreatedChannel.lowLatency?.partTarget == 0.4)
    }
}
