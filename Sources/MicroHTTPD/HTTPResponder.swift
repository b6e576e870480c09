import CMicroHTTPD
import Synchronization

/// Answers a suspended request (see `HTTPRequestAction.suspend`) from any thread.
public final class HTTPResponder: Sendable {
    /// What a suspended request is answered with.
    public enum Answer: Sendable {
        /// A response built for this request.
        case response(HTTPResponse)
        /// One built once and queued for every request it answers (e.g. a playlist released to thousands of
        /// blocking reloads at once), so nothing is built per request.
        case prepared(PreparedResponse)

        /// The status code the answer is sent with.
        public var status: Int {
            switch self {
            case .response(let response): response.status
            case .prepared(let prepared): prepared.status
            }
        }
    }

    private struct State {
        var isSuspended = false
        var isAnswered = false
        var answer: Answer?
    }

    private let connection: ConnectionHandle
    private let state = Mutex(State())

    init(connection: ConnectionHandle) {
        self.connection = connection
    }

    /// Resumes the connection and sends `response`. Only the first call counts; later calls are ignored.
    public func respond(_ response: HTTPResponse) {
        respond(.response(response))
    }

    /// Resumes the connection and sends `answer`. Only the first call counts; later calls are ignored.
    public func respond(_ answer: Answer) {
        let mustResume = state.withLock { state -> Bool in
            guard !state.isAnswered else { return false }
            state.isAnswered = true
            state.answer = answer
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

    /// The answer to queue after the connection has been resumed.
    func takeAnswer() -> Answer? {
        state.withLock { state in
            defer { state.answer = nil }
            return state.answer
        }
    }
}

/// An MHD_Connection* that crosses threads.
struct ConnectionHandle: @unchecked Sendable {
    // @unchecked: libmicrohttpd allows MHD_resume_connection from any thread; every other use of the pointer happens
    // on the connection's own MHD thread, and a suspended connection is not freed until it has been resumed.
    let pointer: OpaquePointer
}
