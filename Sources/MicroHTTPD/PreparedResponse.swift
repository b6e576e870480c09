import CMicroHTTPD
import SharedBytes

/// A response built once and queued for many requests, e.g. a playlist served to thousands of players.
///
/// libmicrohttpd responses are reference counted and may be queued on many connections in many threads at once;
/// each queued use holds its own reference, so this object may go away while connections still send it.
public final class PreparedResponse: @unchecked Sendable {
    // @unchecked: wraps an MHD_Response*, which is immutable after creation (no header is added later) and whose
    // reference count libmicrohttpd maintains under its own mutex, so sharing it between threads is safe.
    let handle: OpaquePointer
    /// The status code queued with the response.
    public let status: Int
    /// What the response was built from.
    public let response: HTTPResponse

    /// Builds the libmicrohttpd response now.
    public init(_ response: HTTPResponse) {
        handle = MHDResponseBuilder.make(response)
        status = response.status
        self.response = response
    }

    /// Another libmicrohttpd response with the same status, headers and body (the body's bytes are shared, not
    /// copied). libmicrohttpd takes a mutex of the response on every queue and completion, so one response queued
    /// by several threads at a high rate makes them wait on each other; a copy per thread does not.
    public func copy() -> PreparedResponse {
        PreparedResponse(response)
    }

    deinit { MHD_destroy_response(handle) }
}

/// Turns an `HTTPResponse` into an MHD_Response* over the body's memory.
enum MHDResponseBuilder {
    /// A new MHD response with one reference owned by the caller. Traps only if libmicrohttpd is out of memory.
    static func make(_ response: HTTPResponse) -> OpaquePointer {
        let created: OpaquePointer?
        switch response.body {
        case .empty:
            created = MHD_create_response_from_buffer(0, nil, .RESPMEM_PERSISTENT)
        case .bytes(let bytes):
            created = zeroCopy(bytes, range: 0..<bytes.count)
        case .slice(let bytes, let range):
            created = zeroCopy(bytes, range: range.clamped(to: 0..<bytes.count))
        }
        guard let handle = created else { fatalError("libmicrohttpd could not create a response (out of memory)") }
        for field in response.headers where !HTTPHeaders.namesMatch(field.name, "Content-Length") {
            // MHD refuses names or values with line breaks; such a header is dropped.
            _ = MHD_add_response_header(handle, field.name, field.value)
        }
        return handle
    }

    private static func zeroCopy(_ bytes: SharedBytes, range: Range<Int>) -> OpaquePointer? {
        let retained = Unmanaged.passRetained(bytes).toOpaque()
        let start = UnsafeMutableRawPointer(mutating: bytes.unsafeBaseAddress + range.lowerBound)
        let response = MHD_create_response_from_buffer_with_free_callback_cls(
            range.count, start, releaseSharedBytes, retained)
        if response == nil { Unmanaged<SharedBytes>.fromOpaque(retained).release() }
        return response
    }
}

/// Called by libmicrohttpd when it destroys a response over `SharedBytes` memory.
private func releaseSharedBytes(_ context: UnsafeMutableRawPointer?) {
    guard let context else { return }
    Unmanaged<SharedBytes>.fromOpaque(context).release()
}
