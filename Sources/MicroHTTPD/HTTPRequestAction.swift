public import SharedBytes

/// What the server does with a request, decided by `HTTPRequestHandler.handle(_:)` once the head is in.
public enum HTTPRequestAction: Sendable {
    /// Sends this response. A request that announces a body is answered at once, before its body, with
    /// `Connection: close`: the body is never read and the connection closes after the answer.
    case respond(HTTPResponse)
    /// Sends a response built once for many requests (a request with a body: as for `.respond`).
    case respondPrepared(PreparedResponse)
    /// Streams the request body (chunked or Content-Length) into memory, up to `limit` bytes, then calls `complete`
    /// with the whole body on the libmicrohttpd thread and sends what it returns. A body over the limit is answered
    /// 413 at once (also when Content-Length announces more than the limit up front) without reading the rest, and
    /// the connection is closed.
    case receiveBody(limit: Int, complete: @Sendable (SharedBytes) -> HTTPResponse)
    /// Reads the body as `.receiveBody` does, then suspends the connection as `.suspend` does and calls `start`
    /// with the body and the responder on the libmicrohttpd thread: for work that must not hold a libmicrohttpd
    /// thread while it waits (a database round trip). `start` must not block; the responder must be answered
    /// eventually.
    case receiveBodyThenSuspend(limit: Int, start: @Sendable (SharedBytes, HTTPResponder) -> Void)
    /// Suspends the connection (a long poll). `start` is called on the libmicrohttpd thread with a responder that
    /// may be answered once, from any thread, later; until then the connection costs no thread and no polling.
    /// Every suspended request must be answered eventually (the connection timeout does not end a suspension, and
    /// a client that went away is only noticed after the answer); `HTTPServer.stop()` answers the rest with 503.
    case suspend(start: @Sendable (HTTPResponder) -> Void)
    /// Hands the request body (chunked or Content-Length) to `receiver` piece by piece as it arrives, on the
    /// connection's libmicrohttpd thread, in order, and sends what `receiver.finish()` returns at its end. A
    /// Content-Length over `limit` is answered 413 before any body byte is read; a body that crosses `limit`, or an
    /// answer returned by `receiver.receive`, is sent at once and the connection is closed (the rest of the body is
    /// not read). Otherwise `receiver.abandon()` is called once if the body never completes. The request deadline
    /// (`HTTPServerConfiguration.connectionTimeout`) restarts with every piece: an upload may last as long as it
    /// keeps sending at `requestBodyMinimumRate` on average, up to `requestBodyTimeLimit` in all.
    case streamBody(limit: Int, receiver: any HTTPBodyReceiver)
}
