/// Decides what to do with each request.
public protocol HTTPRequestHandler: Sendable {
    /// Called on a libmicrohttpd thread once the request head is complete. Must not block: anything slow belongs in
    /// `.suspend`, answered later from another thread.
    func handle(_ request: HTTPRequestHead) -> HTTPRequestAction

    /// The fast path: called first for a GET or HEAD whose answer can depend only on method, path and
    /// Accept-Encoding (see `PlainRequest`), before the request head is built. Return an action to answer it (carried
    /// out like one from `handle(_:)`), or nil to have it go through `handle(_:)` like any other request. The default returns nil.
    func handlePlain(_ request: PlainRequest) -> HTTPRequestAction?

    /// Whether a GET or HEAD carrying `CMCD-*` headers (CTA-5004) goes through `handle(_:)`, which can read them,
    /// rather than the fast path. The default is true; a handler that does nothing with CMCD returns false.
    var readsCMCDHeaders: Bool { get }
}

extension HTTPRequestHandler {
    public func handlePlain(_ request: PlainRequest) -> HTTPRequestAction? { nil }
    public var readsCMCDHeaders: Bool { true }
}

/// An `HTTPRequestHandler` made from a closure.
public struct HTTPClosureHandler: HTTPRequestHandler {
    private let body: @Sendable (HTTPRequestHead) -> HTTPRequestAction

    /// Wraps `body`, which is called for every request head (on a libmicrohttpd thread, must not block).
    public init(_ body: @escaping @Sendable (HTTPRequestHead) -> HTTPRequestAction) {
        self.body = body
    }

    public func handle(_ request: HTTPRequestHead) -> HTTPRequestAction {
        body(request)
    }
}
