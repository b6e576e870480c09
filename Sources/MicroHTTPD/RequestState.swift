import SharedBytes

/// Per-request state kept in libmicrohttpd's `*con_cls` from the first access-handler call until the request
/// completes. Only ever touched by the one MHD thread serving the connection.
final class RequestState {
    /// What the handler asked for.
    let action: HTTPRequestAction
    /// Body bytes collected for `.receiveBody`.
    var body: ByteAccumulator?
    /// Body bytes read and thrown away for the other actions.
    var discardedCount = 0
    /// A response has been queued (or the request was rejected); later calls only drain.
    var isAnswered = false
    /// Set once a `.suspend` action has suspended the connection.
    var responder: HTTPResponder?

    init(action: HTTPRequestAction) {
        self.action = action
    }
}
