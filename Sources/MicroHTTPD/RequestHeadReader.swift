import CMicroHTTPD
import CMicroHTTPDShims
import Glibc

/// Builds an `HTTPRequestHead` from what libmicrohttpd has parsed.
enum RequestHeadReader {
    static func read(
        connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?,
        version: UnsafePointer<CChar>?, isTLS: Bool
    ) -> HTTPRequestHead {
        let path =
            url.map { pointer in
                let length = strlen(pointer)
                return pointer.withMemoryRebound(to: UInt8.self, capacity: length) {
                    PercentDecoding.encodingNonPrintable(UnsafeBufferPointer(start: $0, count: length))
                }
            } ?? "/"
        let collector = ValueCollector()
        let opaqueCollector = Unmanaged.passUnretained(collector).toOpaque()
        _ = MHD_get_connection_values(connection, .HEADER_KIND, collectValue, opaqueCollector)
        let headers = HTTPHeaders(collector.pairs.map { (name: $0.name, value: $0.value ?? "") })
        collector.pairs.removeAll()
        _ = MHD_get_connection_values(connection, .GET_ARGUMENT_KIND, collectValue, opaqueCollector)
        let query = collector.pairs.map { pair in
            (name: PercentDecoding.lenient(pair.name), value: pair.value.map(PercentDecoding.lenient))
        }
        withExtendedLifetime(collector) {}
        return HTTPRequestHead(
            method: method.map { String(cString: $0) } ?? "",
            path: path,
            query: query,
            headers: headers,
            remoteAddress: clientAddress(connection),
            version: version.map { String(cString: $0) } ?? "",
            isTLS: isTLS)
    }

    /// True if a body follows the head (a Content-Length above 0, or chunked transfer coding).
    static func announcesBody(_ head: HTTPRequestHead) -> Bool {
        if let length = head.headers["Content-Length"], length != "0" { return true }
        return head.headers["Transfer-Encoding"] != nil
    }

    private static func clientAddress(_ connection: OpaquePointer) -> String? {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
            buffer.initialize(repeating: 0)
            guard CMicroHTTPDShims_client_address(connection, buffer.baseAddress, buffer.count) == 0 else {
                return nil
            }
            return String(cString: buffer.baseAddress!)
        }
    }
}

/// Receives key/value pairs from MHD_get_connection_values.
private final class ValueCollector {
    var pairs: [(name: String, value: String?)] = []
}

private func collectValue(
    _ cls: UnsafeMutableRawPointer?, _ kind: MHD_ValueKind, _ key: UnsafePointer<CChar>?,
    _ value: UnsafePointer<CChar>?
) -> MHD_Result {
    guard let cls, let key else { return .YES }
    let collector = Unmanaged<ValueCollector>.fromOpaque(cls).takeUnretainedValue()
    collector.pairs.append((name: String(cString: key), value: value.map { String(cString: $0) }))
    return .YES
}
