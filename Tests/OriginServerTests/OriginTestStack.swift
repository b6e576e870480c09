import Foundation
import LiveTimeline
import Logging
import MicroHTTPD
import OriginCore
import OriginServer
import TestSource
import TestSourceInput
import TestSupport

/// What `OriginService` runs, built in the test so time stands still between steps: an `Origin` on a
/// `ManualClock`, the `OriginHTTPHandler` and an `HTTPServer` on 127.0.0.1, port 0. Nothing ticks on its own:
/// `slot()` moves the clock, pushes real MPEG-TS segments over HTTP and runs the ingest loop once.
final class OriginTestStack {
    /// Name of the configured push channel.
    static let channel = "ch"

    let clock: ManualClock
    let origin: Origin
    let configuration: ServerConfiguration
    let port: Int
    private let server: HTTPServer
    /// The handler the server calls (its per-thread caches are inspected by tests).
    let handler: OriginHTTPHandler
    /// Feeds the configured `.testSource` channels (ticked with the origin).
    let testSource: TestSourceInput
    private var generators: [String: TestStreamGenerator] = [:]
    /// Segments pushed to each rendition, in order; with no gaps, index = MSN.
    private(set) var pushed: [String: [[UInt8]]] = [:]

    /// Starts a stack whose channel `ch` (push, TD from the first segment = 2) has `renditions`.
    /// - Parameters:
    ///   - clock: the shared clock (a stack restarted on the same data directory goes on with the same clock).
    ///   - configure: changes the configuration before anything starts (tokens, limits, channels).
    ///   - audit: where the audit log goes (default: nowhere).
    init(
        renditions: [String] = ["360p", "180p"], clock: ManualClock = ManualClock(), audit: Logger? = nil,
        configure: (inout ServerConfiguration) -> Void = { _ in }
    ) throws {
        self.clock = clock
        var configuration = ServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.threads = 1
        configuration.origin.channels = [
            ChannelConfiguration(name: Self.channel, renditions: renditions.map { RenditionConfiguration(name: $0) })
        ]
        configure(&configuration)
        self.configuration = configuration
        let logger = Logger(label: "origin-server-tests", factory: { _ in SwiftLogNoOpLogHandler() })
        origin = try Origin(
            configuration: configuration.origin, clock: clock, logger: logger, audit: audit,
            sourceCheck: TestSourceInput.check, sourcePrepare: TestSourceInput.prepare)
        testSource = try TestSourceInput(origin: origin, logger: logger)
        handler = OriginHTTPHandler(
            origin: origin, configuration: configuration, metrics: RequestMetrics(), testSource: testSource,
            logger: logger)
        server = HTTPServer(
            configuration: OriginService.httpConfiguration(configuration, threadCount: 1),
            handler: handler)
        try server.start()
        port = server.boundPort
        for rendition in renditions {
            if let profile = TestSourceProfile.named(rendition) {
                generators[rendition] = try TestStreamGenerator(profile: profile, segmentDuration: 2)
            }
        }
    }

    deinit { server.stop() }

    /// A new keep-alive connection to the server.
    func connect() throws -> RawHTTPConnection { try RawHTTPConnection(port: port) }

    /// One request on a fresh connection.
    func request(
        _ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8]? = nil,
        chunkSize: Int? = nil
    ) throws -> RawHTTPResponse {
        let response = try connect().request(method, target, headers: headers, body: body, chunkSize: chunkSize)
        // Every admin answer a route test gets must be one the OpenAPI description allows (AdminOpenAPITests).
        AdminOpenAPIValidator.record(method, target, response)
        return response
    }

    /// GET on a fresh connection.
    func get(_ target: String, headers: [(String, String)] = []) throws -> RawHTTPResponse {
        try request("GET", target, headers: headers)
    }

    /// The next 2-second segment of a rendition's endless test stream (not pushed).
    func nextSegment(_ rendition: String) -> [UInt8] {
        generators[rendition]!.nextSegment().bytes
    }

    /// Pushes bytes to `/ingest/ch/{rendition}/{file}` with a real PUT.
    func push(
        _ rendition: String, _ bytes: [UInt8], file: String = "segment.ts", channel: String = OriginTestStack.channel,
        headers: [(String, String)] = [], chunkSize: Int? = nil
    ) throws -> RawHTTPResponse {
        try request(
            "PUT", "/ingest/\(channel)/\(rendition)/\(file)", headers: headers, body: bytes, chunkSize: chunkSize)
    }

    /// Lets 2 s pass on the clock, PUTs the next segment of every rendition (each must answer 201), then runs the
    /// ingest loop once.
    func slot(headers: [(String, String)] = [], chunkSize: Int? = nil) throws {
        clock.advance(seconds: 2)
        for rendition in generators.keys.sorted() {
            let bytes = nextSegment(rendition)
            let msn = pushed[rendition, default: []].count
            let response = try push(
                rendition, bytes, file: "segment\(msn).ts", headers: headers, chunkSize: chunkSize)
            guard response.status == 201 else {
                throw TestFailure("push to \(rendition) answered \(response.status): \(response.text)")
            }
            pushed[rendition, default: []].append(bytes)
        }
        testSource.tick()
        origin.tick()
    }

    /// `count` slots of `slot()`.
    func slots(_ count: Int) throws {
        for _ in 0..<count { try slot() }
    }

    /// The media playlist of a rendition of `ch` as served (status must be 200).
    func playlistText(_ rendition: String) throws -> String {
        let response = try get("/live/\(Self.channel)/\(rendition)/index.m3u8")
        guard response.status == 200 else {
            throw TestFailure("playlist of \(rendition) answered \(response.status): \(response.text)")
        }
        return response.text
    }

    /// The whole file at a path relative to the package root.
    static func packageFile(_ relativePath: String) throws -> [UInt8] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let url = root.appendingPathComponent(relativePath)
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw TestFailure("cannot read \(url.path)")
        }
        return [UInt8](data)
    }
}
