import MicroHTTPD
import Synchronization
import TestSupport

/// Starts a server on 127.0.0.1 and a free port, runs `body`, stops the server. What the server logs goes to `log`.
func withTestServer<R>(
    threadCount: Int = 2,
    log: CapturedLog? = nil,
    _ handler: @escaping @Sendable (HTTPRequestHead) -> HTTPRequestAction,
    _ body: (HTTPServer, Int) throws -> R
) throws -> R {
    let configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0, threadCount: threadCount)
    let server = HTTPServer(
        configuration: configuration, logger: (log ?? CapturedLog()).logger(label: "microhttpd-tests"),
        handler: handler)
    try server.start()
    defer { server.stop() }
    return try body(server, server.boundPort)
}

/// A thread-safe box for values handed out of handlers.
final class Recorder<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])

    func record(_ value: Value) { values.withLock { $0.append(value) } }

    var all: [Value] { values.withLock { $0 } }
}
