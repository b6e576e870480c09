import LiveTimeline
import OriginCore
import OriginServer
import TestSupport
import Testing

/// `redundancy:` in the YAML configuration: every channel of the origin, configured or auto-created, takes the
/// group's shared timeline.
@Suite("Configuration: redundancy group", .offThePool)
struct RedundancyConfigurationTests {
    @Test func everyChannelAndTheAutoCreatedOnesShareTheTimeline() throws {
        let configuration = try ConfigurationFile.parse(
            "redundancy: { clockTolerance: 0.25 }\nchannels:\n  - name: a\n  - name: b\n")
        let expected = SharedTimeline(toleranceMilliseconds: 250)
        #expect(configuration.origin.channels.map(\.sharedTimeline) == [expected, expected])
        #expect(configuration.origin.ingest.autoCreatedChannel.sharedTimeline == expected)
    }

    @Test func theToleranceDefaultsToHalfASecond() throws {
        let configuration = try ConfigurationFile.parse("redundancy: {}\n")
        #expect(configuration.origin.ingest.autoCreatedChannel.sharedTimeline?.toleranceMilliseconds == 500)
    }

    @Test func withoutItAChannelIsALoneOrigin() throws {
        let configuration = try ConfigurationFile.parse("channels:\n  - name: a\n")
        #expect(configuration.origin.channels.first?.sharedTimeline == nil)
        #expect(configuration.origin.ingest.autoCreatedChannel.sharedTimeline == nil)
    }

    @Test(arguments: [
        (
            "redundancy: { clockTolerance: 0 }\n",
            "test.yaml: redundancy.clockTolerance must be between 0.01 and 10 seconds (got 0.0)"
        ),
        (
            "redundancy: { clockTolerance: 60 }\n",
            "test.yaml: redundancy.clockTolerance must be between 0.01 and 10 seconds (got 60.0)"
        ),
    ])
    func anOutOfRangeToleranceIsRefused(text: String, message: String) {
        #expect(ConfigurationFileTests.refusal(text) == message)
    }

    @Test func anUnknownKeyIsRefused() {
        #expect(ConfigurationFileTests.refusal("redundancy: { group: a }\n")?.contains("group") == true)
    }

    @Test func peersAreKeptInOrder() throws {
        let configuration = try ConfigurationFile.parse(
            "redundancy: { peers: [\"http://10.0.0.2:8080\", \"http://origin-c\"] }\n")
        #expect(configuration.peers == ["http://10.0.0.2:8080", "http://origin-c"])
    }

    @Test func aPeerThatIsNotAnHTTPURLIsRefused() {
        #expect(
            ConfigurationFileTests.refusal("redundancy: { peers: [\"https://b:8443\"] }\n")
                == "test.yaml: redundancy.peers: 'https://b:8443' is not an http://host[:port] URL")
    }
}
