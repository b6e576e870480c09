import Foundation
import HLSPlaylist
import LiveTimeline
import Logging
import MicroHTTPD
import SRTInput
import Synchronization
import TestSource
import TestSupport
import Testing

@testable import OriginCore
@testable import OriginServer

/// Reload without restart: an origin with a data directory behind a real HTTP server on a manual clock; the
/// configuration a reload reads is swapped by the test.
final class ReloadStack {
    let clock = ManualClock()
    let origin: Origin
    let reloader: ConfigurationReloader
    private let server: HTTPServer
    let port: Int
    /// What the next reload reads; nil makes it fail to load.
    final class NextConfiguration: Sendable {
        let value: Mutex<ServerConfiguration?>
        init(_ value: ServerConfiguration) { self.value = Mutex(value) }
        func get() -> ServerConfiguration? { value.withLock { $0 } }
        func set(_ configuration: ServerConfiguration?) { value.withLock { $0 = configuration } }
    }
    let next: NextConfiguration
    private var generators: [String: TestStreamGenerator] = [:]

    static func configuration(directory: String, channels: [ChannelConfiguration]) -> ServerConfiguration {
        var configuration = ServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.threads = 1
        configuration.dataDirectory = directory
        configuration.origin.channels = channels
        configuration.origin.dataDirectory = directory
        return configuration
    }

    static func pushed(_ name: String, window: Int = 3) -> ChannelConfiguration {
        var channel = ChannelConfiguration(
            name: name, renditions: [RenditionConfiguration(name: "360p")])
        channel.window = .segments(window)
        return channel
    }

    init(channels: [ChannelConfiguration]) throws {
        let directory = try TemporaryDirectory.make("reload").path
        let configuration = Self.configuration(directory: directory, channels: channels)
        next = NextConfiguration(configuration)
        let logger = Logger(label: "reload-tests", factory: { _ in SwiftLogNoOpLogHandler() })
        origin = try Origin(configuration: configuration.origin, clock: clock, logger: logger)
        let next = self.next
        let access = AccessControl(configuration)
        reloader = ConfigurationReloader(
            origin: origin, running: configuration,
            source: {
                guard let configuration = next.get() else {
                    throw ConfigurationError("channels[0].window: must be at least 3 segments")
                }
                return configuration
            }, access: access, logger: logger)
        let handler = OriginHTTPHandler(
            origin: origin, configuration: configuration, metrics: RequestMetrics(), reloader: reloader,
            access: access, logger: logger)
        server = HTTPServer(
            configuration: OriginService.httpConfiguration(configuration, threadCount: 1), handler: handler)
        try server.start()
        port = server.boundPort
    }

    deinit { server.stop() }

    /// What the next reload reads: the running configuration changed by `change`.
    func prepare(_ change: (inout ServerConfiguration) -> Void) {
        var changed = next.get() ?? Self.configuration(directory: "", channels: [])
        change(&changed)
        next.set(changed)
    }

    func get(_ target: String) throws -> RawHTTPResponse { try RawHTTPConnection(port: port).request("GET", target) }

    /// 2 s pass; the next segment is pushed to `360p` of each of `channels`; the ingest loop runs.
    func slot(_ channels: [String]) throws {
        clock.advance(seconds: 2)
        for channel in channels {
            if generators[channel] == nil {
                generators[channel] = try TestStreamGenerator(
                    profile: TestSourceProfile.named("360p")!, segmentDuration: 2)
            }
            let response = try RawHTTPConnection(port: port).request(
                "PUT", "/ingest/\(channel)/360p/s.ts", body: generators[channel]!.nextSegment().bytes)
            guard response.status == 201 else {
                throw TestFailure("push answered \(response.status): \(response.text)")
            }
        }
        origin.tick()
    }

    func playlist(_ channel: String) throws -> MediaPlaylist {
        let response = try get("/live/\(channel)/360p/index.m3u8")
        guard response.status == 200 else { throw TestFailure("\(channel): \(response.status) \(response.text)") }
        return try MediaPlaylist.parse(response.text)
    }
}

@Suite(
    "Reload without restart: channels added, removed and changed, the others untouched, bad configurations refused",
    .offThePool)
struct ReloadTests {
    @Test func aChangedChannelContinuesItsNumberingAndTheOthersAreNotTouched() throws {
        let stack = try ReloadStack(channels: [
            ReloadStack.pushed("a"), ReloadStack.pushed("b"), ReloadStack.pushed("d"),
        ])
        try stack.slot(["a", "b", "d"])
        try stack.slot(["a", "b", "d"])
        try stack.slot(["a", "b", "d"])
        let aBefore = try stack.playlist("a")
        let bObject = try #require(stack.origin.channel(named: "b"))
        let aObject = try #require(stack.origin.channel(named: "a"))
        #expect(aBefore.segments.count == 3)

        stack.prepare { configuration in
            configuration.origin.channels = [
                ReloadStack.pushed("a", window: 5), ReloadStack.pushed("b"), ReloadStack.pushed("c"),
            ]
        }
        guard case .applied(let report, _) = stack.reloader.reload() else {
            Issue.record("the reload was refused")
            return
        }
        #expect(report.changed == ["a"])
        #expect(report.unchanged == ["b"])
        #expect(report.added == ["c"])
        #expect(report.removed == ["d"])
        #expect(report.needsRestart.isEmpty)
        #expect(stack.origin.channel(named: "b") === bObject, "b was re-made")
        #expect(stack.origin.channel(named: "a") !== aObject)
        #expect(aObject.isRetired)
        #expect(try stack.get("/live/d/360p/index.m3u8").status == 404)
        #expect(stack.origin.allChannels.map(\.name) == ["a", "b", "c"])

        // a: the same entries right after, then the longer window fills with the next MSNs, no jump.
        let aAfter = try stack.playlist("a")
        #expect(aAfter.segments.map(\.uri) == aBefore.segments.map(\.uri))
        #expect(aAfter.mediaSequence == aBefore.mediaSequence)
        try stack.slot(["a", "b", "c"])
        try stack.slot(["a", "b", "c"])
        let aLater = try stack.playlist("a")
        #expect(aLater.mediaSequence == aBefore.mediaSequence)
        #expect(aLater.segments.count == 5)
        let msns = (0..<aLater.segments.count).map { aLater.mediaSequence + UInt64($0) }
        #expect(msns.last == aBefore.mediaSequence + 4)
        #expect(!aLater.segments.contains { $0.discontinuity || $0.gap }, "\(aLater.render())")
        for (earlier, later) in zip(aLater.segments, aLater.segments.dropFirst()) {
            let end = (earlier.programDateTime?.millisecondsSince1970 ?? 0) + Int64(earlier.duration * 1000)
            #expect(later.programDateTime?.millisecondsSince1970 == end, "PDTs not continuous:\n\(aLater.render())")
        }
        #expect(try stack.playlist("b").segments.count == 3)
        #expect(try stack.playlist("c").segments.count == 2)
    }

    @Test func aConfigurationThatDoesNotLoadOrValidateIsRefusedAndTheRunningOneStays() throws {
        let stack = try ReloadStack(channels: [ReloadStack.pushed("a")])
        try stack.slot(["a"])
        let before = try stack.playlist("a")
        stack.next.set(nil)
        let unreadable = try RawHTTPConnection(port: stack.port).request("POST", "/admin/reload")
        #expect(unreadable.status == 422)
        #expect(unreadable.text.contains("must be at least 3 segments"), "\(unreadable.text)")
        stack.prepare { configuration in
            configuration.origin.channels = [ReloadStack.pushed("a"), ReloadStack.pushed("a", window: 4)]
        }
        let duplicate = try RawHTTPConnection(port: stack.port).request("POST", "/admin/reload")
        #expect(duplicate.status == 422)
        #expect(duplicate.text.contains("configured twice"), "\(duplicate.text)")
        #expect(try stack.playlist("a").render() == before.render())
        #expect(stack.origin.configuration.channels.map(\.window) == [.segments(3)])
        try stack.slot(["a"])
        #expect(try stack.playlist("a").segments.count == 2)
    }

    @Test func aReloadAnswersWhatChangedAndNamesTheSettingsThatNeedARestart() throws {
        let stack = try ReloadStack(channels: [ReloadStack.pushed("a")])
        try stack.slot(["a"])
        stack.prepare { configuration in
            configuration.port = 9999
            configuration.adminToken = "secret"
            configuration.origin.channels = [ReloadStack.pushed("a", window: 4)]
        }
        let answer = try RawHTTPConnection(port: stack.port).request("POST", "/admin/reload")
        #expect(answer.status == 200, "\(answer.text)")
        let report = try JSONDecoder().decode(ReloadReport.self, from: Data(answer.text.utf8))
        #expect(report.changed == ["a"])
        #expect(report.needsRestart == ["server.port"])
        // Tokens change live: the admin API wants the new token from now on, from loopback too.
        #expect(try RawHTTPConnection(port: stack.port).request("GET", "/admin/reload").status == 401)
        #expect(
            try RawHTTPConnection(port: stack.port).request(
                "GET", "/admin/reload", headers: [("Authorization", "Bearer secret")]
            ).status == 405)
    }

    /// A server setting added later must be either applied by a reload or named as needing a restart: otherwise a
    /// changed value would be silently kept until the next start.
    @Test func everyServerSettingIsAppliedByAReloadOrNamedAsNeedingARestart() {
        let restartOnly: [(field: String, change: (inout ServerConfiguration) -> Void)] = [
            ("host", { $0.host = "127.0.0.2" }),
            ("port", { $0.port += 1 }),
            ("threads", { $0.threads += 1 }),
            ("connectionLimit", { $0.connectionLimit += 1 }),
            ("perClientConnectionLimit", { $0.perClientConnectionLimit += 1 }),
            ("connectionTimeoutSeconds", { $0.connectionTimeoutSeconds += 1 }),
            ("remoteClientConnectionLimit", { $0.remoteClientConnectionLimit += 1 }),
            ("requestBodyTimeLimitSeconds", { $0.requestBodyTimeLimitSeconds += 1 }),
            ("requestBodyMinimumBytesPerSecond", { $0.requestBodyMinimumBytesPerSecond += 1 }),
            ("connectionMemoryKiB", { $0.connectionMemoryKiB += 1 }),
            ("databaseURL", { $0.databaseURL = "postgres://db/other" }),
            ("peers", { $0.peers = ["http://10.0.0.9:8080"] }),
            ("steering", { $0.steering = ContentSteeringConfiguration(pathways: [.init(id: "a", baseURI: "http://a")]) }),
            ("multivariantMaxAge", { $0.multivariantMaxAge += 1 }),
            ("clockOffsetMilliseconds", { $0.clockOffsetMilliseconds += 1 }),
            ("logLevel", { $0.logLevel = "debug" }),
            ("srt", { $0.srt = SRTConfiguration(port: 9000) }),
            ("delivery", { $0.delivery.cmsd = false }),
        ]
        // Applied by the reload itself: the origin's settings (`Origin.reload`, which names `dataDir` and the store's
        // layout as restart-only), the tokens (`AccessControl`), and the TLS certificate (its listener's settings
        // are compared in `restartOnlyChanges` when both configurations have one).
        let applied: Set = ["origin", "dataDirectory", "access", "adminToken", "ingestToken", "tls"]
        let fields = Set(Mirror(reflecting: ServerConfiguration()).children.compactMap(\.label))
        #expect(fields == applied.union(restartOnly.map(\.field)), "settings neither reloaded nor named: \(fields)")
        let running = ServerConfiguration()
        for (field, change) in restartOnly {
            var changed = running
            change(&changed)
            #expect(
                !ConfigurationReloader.restartOnlyChanges(from: running, to: changed).isEmpty,
                "a change of \(field) is neither applied nor named as needing a restart")
        }
    }

    @Test func playlistsCachedBeforeAReloadAreNotServedAfterIt() throws {
        let stack = try ReloadStack(channels: [ReloadStack.pushed("a")])
        for _ in 0..<4 { try stack.slot(["a"]) }
        // Asked twice: the second answer comes from the thread's cache.
        _ = try stack.playlist("a")
        #expect(try stack.playlist("a").segments.count == 3)
        stack.prepare { configuration in configuration.origin.channels = [ReloadStack.pushed("a", window: 6)] }
        guard case .applied = stack.reloader.reload() else {
            Issue.record("the reload was refused")
            return
        }
        // The successor restores the store's window (3 entries, the 4th slot is still retained) and lists the next
        // slot as soon as it is pushed.
        try stack.slot(["a"])
        let after = try stack.playlist("a")
        #expect(after.segments.count >= 4, "a stale playlist was served:\n\(after.render())")
    }
}
