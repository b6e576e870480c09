import CMicroHTTPD
import Glibc
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

    /// Builds the libmicrohttpd response now. A file body for which no descriptor can be had (e.g. the process is
    /// out of descriptors) becomes a 503 answer, one whose file is shorter than the body a 500, and `status` says so.
    public init(_ response: HTTPResponse) {
        (handle, status) = MHDResponseBuilder.make(response)
        self.response = response
        if case .stream = response.body { isStream = true } else { isStream = false }
    }

    /// A `.stream` body is read from its own position on every connection: such a response is built afresh for
    /// each request instead of sharing `handle`.
    let isStream: Bool

    /// Another libmicrohttpd response with the same status, headers and body (the body's bytes are shared, not
    /// copied). libmicrohttpd takes a mutex of the response on every queue and completion, so one response queued
    /// by several threads at a high rate makes them wait on each other; a copy per thread does not.
    public func copy() -> PreparedResponse {
        PreparedResponse(response)
    }

    deinit { MHD_destroy_response(handle) }
}

/// Turns an `HTTPResponse` into an MHD_Response* over the body's memory or file.
enum MHDResponseBuilder {
    /// A new MHD response with one reference owned by the caller, and the status to queue it with: the response's
    /// own, 503 when its file body could get no descriptor, or 500 when the file is shorter than the body. Traps only
    /// if libmicrohttpd is out of memory.
    /// A `.stream` body is read on `connection` (nil: never queued, reading it ends the response with an error).
    static func make(
        _ response: HTTPResponse, connection: ConnectionHandle? = nil, context: ServerContext? = nil
    ) -> (handle: OpaquePointer, status: Int) {
        let created: OpaquePointer?
        switch response.body {
        case .empty:
            created = MHD_create_response_from_buffer(0, nil, .RESPMEM_PERSISTENT)
        case .bytes(let bytes):
            created = zeroCopy(bytes, range: 0..<bytes.count)
        case .slice(let bytes, let range):
            created = zeroCopy(bytes, range: range.clamped(to: 0..<bytes.count))
        case .file(let region, let range):
            let range = range.clamped(to: 0..<region.count)
            if range.isEmpty {
                created = MHD_create_response_from_buffer(0, nil, .RESPMEM_PERSISTENT)
            } else {
                // libmicrohttpd closes the descriptor it is given when it destroys the response.
                let descriptor = region.descriptorForResponse()
                guard descriptor >= 0 else { return make(noDescriptor(errno)) }
                let offset = region.range.lowerBound + range.lowerBound
                // libmicrohttpd stalls (neither sends nor closes) when the file ends before the body: refuse here.
                var status = stat()
                guard fstat(descriptor, &status) == 0, Int(status.st_size) >= offset + range.count else {
                    close(descriptor)
                    return make(.text(500, "the file behind this response is shorter than the response\n"))
                }
                created = MHD_create_response_from_fd_at_offset64(UInt64(range.count), descriptor, UInt64(offset))
                // nil only when out of memory (offsets as large as Int pass its checks): the fd was not taken.
                if created == nil { close(descriptor) }
            }
        case .stream(let stream):
            // One response per connection: the reader keeps the connection (to suspend it) and reads from its own
            // position. Unknown size: chunked on HTTP/1.1; on HTTP/1.0 the connection closes after the body.
            let reader = StreamReader(stream: stream, connection: connection, context: context)
            let retained = Unmanaged.passRetained(reader).toOpaque()
            created = MHD_create_response_from_callback(
                UInt64.max, streamBlockSize, readStream, retained, releaseStreamReader)
            if created == nil { Unmanaged<StreamReader>.fromOpaque(retained).release() }
        }
        guard let handle = created else { fatalError("libmicrohttpd could not create a response (out of memory)") }
        for field in response.headers where !HTTPHeaders.namesMatch(field.name, "Content-Length") {
            // MHD refuses names or values with line breaks; such a header is dropped.
            _ = MHD_add_response_header(handle, field.name, field.value)
        }
        return (handle, response.status)
    }

    /// The content reader's buffer for a stream answered on HTTP/1.0 (chunked answers use the connection's pool).
    private static let streamBlockSize = 4096

    /// The answer when a file body could get no descriptor: the client should retry shortly.
    private static func noDescriptor(_ error: Int32) -> HTTPResponse {
        .text(
            503, "cannot open the file for this response: \(String(cString: strerror(error)))\n",
            headers: ["Retry-After": "1", "Cache-Control": "no-store"])
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
