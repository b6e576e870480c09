import Foundation
import IngestLoop
import OriginCore
import OriginServer
import Testing

/// The YAML configuration: the shipped default, unknown keys, bad values.
@Suite("Configuration file")
struct ConfigurationFileTests {
    static let defaultPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("config/default.yaml").path

    /// The message of the `ConfigurationError` that parsing `text` throws.
    static func refusal(_ text: String) -> String? {
        do {
            _ = try ConfigurationFile.parse(text, source: "test.yaml")
            return nil
        } catch let error as ConfigurationError {
            return error.message
        } catch {
            return "unexpected error type: \(error)"
        }
    }

    @Test func defaultConfigurationIsTheDemoChannel() throws {
        let configuration = try ConfigurationFile.load(path: Self.defaultPath)
        #expect(configuration.host == "0.0.0.0")
        #expect(configuration.port == 8080)
        #expect(configuration.dataDirectory == "./data")
        #expect(configuration.multivariantMaxAge == 5)
        #expect(configuration.connectionMemoryKiB == 8)
        #expect(configuration.adminToken == nil)
        #expect(configuration.ingestToken == nil)
        #expect(configuration.origin.ingest.autoCreate)
        #expect(configuration.origin.ingest.maxSegmentBytes == 64 << 20)
        #expect(configuration.origin.ingest.autoCreatedChannel.segmentDuration == 2)
        #expect(configuration.origin.ingest.autoCreatedChannel.window == .segments(6))
        let channels = configuration.origin.channels
        #expect(channels.map(\.name) == ["demo"])
        let demo = try #require(channels.first)
        #expect(demo.source == .testSource)
        #expect(demo.segmentDuration == 2)
        #expect(demo.window == .segments(6))
        #expect(
            demo.renditions == [
                RenditionConfiguration(name: "360p", testSourceProfile: "360p"),
                RenditionConfiguration(name: "180p", testSourceProfile: "180p"),
            ])
    }

    @Test func emptyFileGivesTheDefaults() throws {
        let configuration = try ConfigurationFile.parse("{}")
        #expect(configuration.port == 8080)
        #expect(configuration.origin.channels.isEmpty)
    }

    @Test(arguments: [
        ("servr:\n  port: 1\n", "servr"),
        ("server:\n  prot: 1\n", "prot"),
        ("ingest:\n  autocreate: true\n", "autocreate"),
        ("admin:\n  tokn: x\n", "tokn"),
        ("channels:\n  - name: a\n    windw: { segments: 3 }\n", "windw"),
        ("channels:\n  - name: a\n    window: { segment: 3 }\n", "segment"),
        ("channels:\n  - name: a\n    renditions:\n      - name: r\n        profil: 360p\n", "profil"),
        ("ingest:\n  defaults:\n    targetDurationn: 2\n", "targetDurationn"),
        ("channels:\n  - name: a\n    dvr: { hour: 2 }\n", "hour"),
    ])
    func unknownKeysAreRefusedByName(text: String, key: String) throws {
        let message = try #require(Self.refusal(text))
        #expect(message.hasPrefix("test.yaml: "), "\(message)")
        #expect(message.contains("unknown key '\(key)'"), "\(message)")
    }

    @Test(arguments: [
        ("server:\n  port: 70000\n", "test.yaml: port 70000 out of range"),
        ("server:\n  port: -1\n", "test.yaml: port -1 out of range"),
        (
            "channels:\n  - name: a\n    window: { segments: 3, seconds: 10 }\n",
            "test.yaml: channel 'a': window takes one of segments or seconds"
        ),
        (
            "channels:\n  - name: a\n    source: rtmp\n",
            "test.yaml: channel 'a': source 'rtmp' is not push or test-source"
        ),
        ("channels:\n  - name: a\n  - name: a\n", "test.yaml: channel 'a' is declared twice"),
        ("channels:\n  - source: push\n", "test.yaml: a channel has no name"),
        (
            "channels:\n  - name: a/b\n",
            "test.yaml: channel 'a/b': name must be 1-64 characters of A-Z a-z 0-9 _ -"
        ),
        ("channels:\n  - name: \"\"\n", "test.yaml: a channel has no name"),
        (
            "channels:\n  - name: a\n    renditions:\n      - name: \"7 20p\"\n",
            "test.yaml: channel 'a': rendition name '7 20p' must be 1-64 characters of A-Z a-z 0-9 _ -"
        ),
        (
            "channels:\n  - name: a\n    renditions:\n      - name: r\n      - name: r\n",
            "test.yaml: channel 'a': rendition names must be distinct"
        ),
        (
            "channels:\n  - name: a\n    source: test-source\n",
            "test.yaml: channel 'a': a test-source channel needs at least one rendition"
        ),
        (
            "channels:\n  - name: a\n    window: { segments: 0 }\n",
            "test.yaml: channel 'a': window.segments must be >= 1"
        ),
        (
            "channels:\n  - name: a\n    targetDuration: 2\n    segmentDuration: 4\n",
            "test.yaml: channel 'a': segmentDuration 4.0 rounds above targetDuration 2"
        ),
        ("ingest:\n  maxSegmentBytes: 0\n", "test.yaml: maxSegmentBytes must be positive"),
        ("server:\n  connectionMemoryKiB: 2\n", "test.yaml: connectionMemoryKiB must be between 4 and 1024"),
        (
            "channels:\n  - name: a\n    dvr: { hours: 0 }\n",
            "test.yaml: channel 'a': dvr.hours must be a positive number of hours"
        ),
    ])
    func badValuesAreRefusedWithAClearMessage(text: String, message: String) throws {
        #expect(Self.refusal(text) == message)
    }

    @Test func wrongTypesNameTheirPlace() throws {
        let message = try #require(Self.refusal("server:\n  port: eighty\n"))
        #expect(message.hasPrefix("test.yaml: "), "\(message)")
        #expect(message.contains("server.port"), "\(message)")
    }

    @Test func unreadableFileIsNamed() throws {
        #expect(throws: ConfigurationError.self) { try ConfigurationFile.load(path: "/nonexistent/hlsorigin.yaml") }
        do {
            _ = try ConfigurationFile.load(path: "/nonexistent/hlsorigin.yaml")
        } catch let error as ConfigurationError {
            #expect(error.message == "cannot read configuration file '/nonexistent/hlsorigin.yaml'")
        }
    }
}

@Suite("Configuration: DVR")
struct DVRConfigurationTests {
    @Test func dvrHoursAreReadPerChannelAndForAutoCreatedChannelsAndDefaultOff() throws {
        let configuration = try ConfigurationFile.parse(
            "ingest:\n  defaults:\n    dvr: { hours: 24 }\nchannels:\n  - name: a\n    dvr: { hours: 1.5 }\n"
                + "  - name: b\n")
        #expect(configuration.origin.ingest.autoCreatedChannel.dvr == DVRConfiguration(hours: 24))
        #expect(configuration.origin.channels.map(\.dvr) == [DVRConfiguration(hours: 1.5), nil])
        #expect(configuration.origin.channels.first?.dvr?.milliseconds == 5_400_000)
        #expect(try ConfigurationFile.parse("logLevel: info\n").origin.ingest.autoCreatedChannel.dvr == nil)
    }
}

@Suite("Configuration: clock offset")
struct ClockOffsetConfigurationTests {
    @Test func clockOffsetIsReadAndDefaultsToZero() throws {
        #expect(
            try ConfigurationFile.parse("server:\n  clockOffsetMilliseconds: -1500\n").clockOffsetMilliseconds == -1500)
        #expect(try ConfigurationFile.parse("logLevel: info\n").clockOffsetMilliseconds == 0)
    }
}
