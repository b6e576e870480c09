import SharedBytes

/// Per-request state kept in libmicrohttpd's `*con_cls` from the first access-handler call until the request
/// completes. Only ever touched by the one MHD thread serving the connection.
final class RequestState {
    /// What the handler asked for.
    let action: HTTPRequestAction
    /// Most body bytes accepted: the `.receiveBody` or `.streamBody` limit, or what the other actions read and throw
    /// away.
    let bodyLimit: Int
    /// Body bytes collected for `.receiveBody`.
    var body: ByteAccumulator?
    /// Body bytes received so far (kept, discarded or drained).
    var receivedCount = 0
    /// The body went over `bodyLimit`: the rest is drained and the answer will be 413.
    var isOverLimit = false
    /// A response has been queued (or the request was rejected); later calls only drain.
    var isAnswered = false
    /// A body follows the head and its deadline runs (see `RequestDeadlines`) until it is complete.
    var expectsBody = false
    /// The request is a HEAD (a streamed body is then not read at all).
    var isHead = false
    /// A `.streamBody` receiver has finished or answered early: it must not be abandoned.
    var receiverIsDone = false
    /// Set once a `.suspend` action has suspended the connection.
    var responder: HTTPResponder?
    /// The connection's record (deadline, in-flight flag).
    let connection: ConnectionRecord

    init(action: HTTPRequestAction, discardLimit: Int, connection: ConnectionRecord) {
        self.action = action
        self.connection = connection
        switch action {
        case .receiveBody(let limit, _), .streamBody(let limit, _), .receiveBodyThenSuspend(let limit, _):
            bodyLimit = max(limit, 0)
        default:
            bodyLimit = discardLimit
        }
    }
}
