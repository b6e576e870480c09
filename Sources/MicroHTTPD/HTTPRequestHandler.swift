/// Decides what to do with each request.
public protocol HTTPRequestHandler: Sendable {
    /// Called on a libmicrohttpd thread once the request head is complete. Must not block: anything slow belongs in
    /// `.suspend`, answered later from another thread.
    func handle(_ request: HTTPRequestHead) -> HTTPRequestAction

    /// The fast path: called first for a GET or HEAD whose answer can depend only on method, path and
    /// Accept-Encoding (see `PlainRequest`), before the request head is built. Return an action to answer it (carried
    /// out like one from `handle(_:)`), or nil to have it go through `handle(_:)` like any other request. The default returns nil.
    func handlePlain(_ request: PlainRequest) -> HTTPRequestAction?
}

extension HTTPRequestHandler {
    public func handlePlain(_ request: PlainRequest) -> HTTPRequestAction? { nil }
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
