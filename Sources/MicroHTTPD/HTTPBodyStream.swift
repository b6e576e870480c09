import SharedBytes

/// Bytes of a response body produced after the response started (`HTTPBody.stream`): sent chunked (HTTP/1.0:
/// without length, the connection closes at the end) as they are appended. While no bytes are available the
/// connection is suspended: a waiting stream costs no thread and no polling.
public final class HTTPBodyStream: Sendable {
    public init() {
        fatalError("contract: built by the streaming-HTTP step")
    }

    /// Adds bytes to the end of the body; wakes connections waiting for them. Any thread.
    public func append(_ bytes: SharedBytes) {
        fatalError("contract: built by the streaming-HTTP step")
    }

    /// The body is complete: the chunked response ends once everything appended is sent.
    public func finish() {
        fatalError("contract: built by the streaming-HTTP step")
    }

    /// The body cannot be completed: the response is cut off (the client sees an incomplete chunked body).
    public func fail() {
        fatalError("contract: built by the streaming-HTTP step")
    }
}

/// Receives a request body piece by piece as it arrives (`HTTPRequestAction.streamBody`), on the connection's
/// libmicrohttpd thread, in order.
public protocol HTTPBodyReceiver: AnyObject, Sendable {
    /// The next bytes of the body. Returning a response answers the request now: the rest of the body is not read
    /// and the connection closes after the answer.
    func receive(_ piece: UnsafeRawBufferPointer) -> HTTPResponse?
    /// The body is complete: the answer.
    func finish() -> HTTPResponse
    /// The connection closed or timed out before the body was complete (no answer is sent).
    func abandon()
}
