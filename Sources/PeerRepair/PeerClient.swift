public import NIOCore
import NIOHTTP1
public import NIOPosix
import SharedBytes
import Synchronization

/// An `http://host:port/path` URL of a peer origin (plain HTTP: peers sit on the operator's own network).
public struct PeerURL: Sendable, Hashable, CustomStringConvertible {
    public let host: String
    public let port: Int
    /// Starts with `/`.
    public let path: String

    /// Parses `http://host[:port][/path]`; nil for anything else (https, user info, no host).
    public init?(_ text: String) {
        guard text.hasPrefix("http://") else { return nil }
        let rest = text.dropFirst("http://".count)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        guard !authority.isEmpty, !authority.contains("@") else { return nil }
        if let colon = authority.lastIndex(of: ":") {
            guard let port = Int(authority[authority.index(after: colon)...]), (1...65535).contains(port) else {
                return nil
            }
            self.host = String(authority[..<colon])
            self.port = port
        } else {
            self.host = String(authority)
            self.port = 80
        }
        guard !host.isEmpty else { return nil }
        let path = String(rest[slash...])
        self.path = path.isEmpty ? "/" : path
    }

    init(host: String, port: Int, path: String) {
        self.host = host
        self.port = port
        self.path = path
    }

    /// The same peer, another path (`/live/...`).
    public func with(path: String) -> PeerURL {
        let base = self.path.hasSuffix("/") ? String(self.path.dropLast()) : self.path
        return PeerURL(host: host, port: port, path: base + path)
    }

    /// A URI of a playlist this URL names, resolved (relative names are siblings of the playlist).
    public func resolving(_ uri: String) -> PeerURL? {
        if uri.hasPrefix("http://") { return PeerURL(uri) }
        if uri.hasPrefix("/") { return PeerURL(host: host, port: port, path: uri) }
        guard !uri.contains("://") else { return nil }
        let directory = path[...(path.lastIndex(of: "/") ?? path.startIndex)]
        return PeerURL(host: host, port: port, path: directory + uri)
    }

    public var description: String { "http://\(host):\(port)\(path)" }
}

/// What a peer answered.
public struct PeerResponse: Sendable {
    public let status: Int
    public let body: [UInt8]
    /// The answer carried `X-HLSOrigin-Slate: 1`: a slate segment the peer made for an outage (`outage: slate`),
    /// not the encoder's media.
    public let isSlate: Bool

    public init(status: Int, body: [UInt8], isSlate: Bool = false) {
        self.status = status
        self.body = body
        self.isSlate = isSlate
    }
}

/// Why a fetch from a peer failed.
public struct PeerFetchError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, for counting (the steering monitor's `reason` label) without reading the text.
    public enum Kind: String, Sendable {
        /// The connection could not be made (refused, unreachable, or not within the timeout).
        case connect
        /// The answer was not complete within the timeout (the deadline closed the connection).
        case timeout
        /// The peer closed the connection, or it failed, before the answer was complete.
        case closed
        /// The peer answered with a status that was not expected.
        case status
        /// The answer cannot be used: larger than the limit, not HTTP, or not what was asked for.
        case invalid
    }
    public let kind: Kind
    public let description: String
    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }
}

/// GETs from peer origins.
public protocol PeerFetching: Sendable {
    /// One GET; throws on a connection failure, a timeout or a body over `limit` bytes.
    func get(_ url: PeerURL, timeout: Duration, limit: Int) async throws -> PeerResponse
}

/// HTTP/1.1 GETs over SwiftNIO (the event loops postgres-nio runs on too), one connection per request, with a
/// deadline for the whole exchange.
public struct PeerClient: PeerFetching {
    let group: any EventLoopGroup

    public init(group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.group = group
    }

    public func get(_ url: PeerURL, timeout: Duration, limit: Int) async throws -> PeerResponse {
        let eventLoop = group.next()
        let promise = eventLoop.makePromise(of: PeerResponse.self)
        let milliseconds = max(timeout.wholeMilliseconds, 1)
        let deadlinePassed = DeadlineFlag()
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(.milliseconds(milliseconds))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(
                        ResponseCollector(promise: promise, limit: limit, deadline: deadlinePassed))
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: url.host, port: url.port).get()
        } catch {
            promise.fail(PeerFetchError(.connect, "cannot connect to \(url.host):\(url.port): \(error)"))
            throw PeerFetchError(.connect, "cannot connect to \(url.host):\(url.port): \(error)")
        }
        // The deadline closes the connection; the collector then fails the promise.
        let deadline = channel.eventLoop.scheduleTask(in: .milliseconds(milliseconds)) {
            deadlinePassed.passed.withLock { $0 = true }
            channel.close(promise: nil)
        }
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: url.path)
        head.headers.add(name: "Host", value: "\(url.host):\(url.port)")
        head.headers.add(name: "User-Agent", value: "hlsorigin-peer")
        head.headers.add(name: "Connection", value: "close")
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        defer {
            deadline.cancel()
            channel.close(promise: nil)
        }
        return try await promise.futureResult.get()
    }
}

/// Collects one response; completes the promise exactly once (answer, error, or the connection closing first).
private final class ResponseCollector: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart

    private let promise: EventLoopPromise<PeerResponse>
    private let limit: Int
    private var status = 0
    private var isSlate = false
    private var body: [UInt8] = []
    private var done = false
    private let deadline: DeadlineFlag

    init(promise: EventLoopPromise<PeerResponse>, limit: Int, deadline: DeadlineFlag) {
        self.promise = promise
        self.limit = limit
        self.deadline = deadline
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !done else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = Int(head.status.code)
            isSlate = head.headers["X-HLSOrigin-Slate"].first == "1"
        case .body(var buffer):
            guard body.count + buffer.readableBytes <= limit else {
                finish(.failure(PeerFetchError(.invalid, "answer larger than \(limit) bytes")), context: context)
                return
            }
            body += buffer.readBytes(length: buffer.readableBytes) ?? []
        case .end:
            finish(.success(PeerResponse(status: status, body: body, isSlate: isSlate)), context: context)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // The parser's end-of-file error is the peer closing mid-answer; its others, an answer that is not HTTP.
        let kind: PeerFetchError.Kind
        switch error as? HTTPParserError {
        case _ where deadline.passed.withLock({ $0 }): kind = .timeout
        case .invalidEOFState?, nil: kind = .closed
        case _?: kind = .invalid
        }
        finish(.failure(PeerFetchError(kind, "\(error)")), context: context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if deadline.passed.withLock({ $0 }) {
            finish(.failure(PeerFetchError(.timeout, "no complete answer within the timeout")), context: context)
        } else {
            finish(.failure(PeerFetchError(.closed, "connection closed before the answer was complete")), context: context)
        }
        context.fireChannelInactive()
    }

    private func finish(_ result: Result<PeerResponse, PeerFetchError>, context: ChannelHandlerContext) {
        guard !done else { return }
        done = true
        promise.completeWith(result.mapError { $0 as any Error })
        context.close(promise: nil)
    }
}

/// Set when a fetch's deadline closed its connection, so that the close counts as a timeout, not as the peer's.
private final class DeadlineFlag: Sendable {
    let passed = Mutex(false)
}
