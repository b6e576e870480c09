import CMicroHTTPD
import Synchronization

/// Answers a suspended request (see `HTTPRequestAction.suspend`) from any thread.
public final class HTTPResponder: Sendable {
    private struct State {
        var isSuspended = false
        var isAnswered = false
        var response: HTTPResponse?
    }

    private let connection: ConnectionHandle
    private let state = Mutex(State())

    init(connection: ConnectionHandle) {
        self.connection = connection
    }

    /// Resumes the connection and sends `response`. Only the first call counts; later calls are ignored.
    public func respond(_ response: HTTPResponse) {
        let mustResume = state.withLock { state -> Bool in
            guard !state.isAnswered else { return false }
            state.isAnswered = true
            state.response = response
            return state.isSuspended
        }
        // The connection stays allocated while suspended, and it is resumed exactly once: either here or in
        // `didSuspend` (when the answer came before the suspension was recorded).
        if mustResume { MHD_resume_connection(connection.pointer) }
    }

    /// Whether `respond` has been called.
    public var isAnswered: Bool { state.withLock { $0.isAnswered } }

    /// Records that MHD_suspend_connection has been called (on the MHD thread, right after it).
    func didSuspend() {
        let mustResume = state.withLock { state -> Bool in
            state.isSuspended = true
            return state.isAnswered
        }
        if mustResume { MHD_resume_connection(connection.pointer) }
    }

    /// The response to queue after the connection has been resumed.
    func takeResponse() -> HTTPResponse? {
        state.withLock { state in
            defer { state.response = nil }
            return state.response
        }
    }
}

/// An MHD_Connection* that crosses threads.
struct ConnectionHandle: @unchecked Sendable {
    // @unchecked: libmicrohttpd allows MHD_resume_connection from any thread; every other use of the pointer happens
    // on the connection's own MHD thread, and a suspended connection is not freed until it has been resumed.
    let pointer: OpaquePointer
}
