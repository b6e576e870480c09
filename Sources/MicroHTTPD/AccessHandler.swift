import CMicroHTTPD
import CMicroHTTPDShims
import Glibc
import Logging
import SharedBytes

// The libmicrohttpd callbacks. They are file-scope functions (a C function pointer cannot capture anything); the
// server context comes in through `cls`, the per-request state through `*con_cls`.

/// MHD_AccessHandlerCallback. First call (headers complete): build the head, ask the handler, store the action.
/// Calls with upload data: collect or discard the body. The call with `*upload_data_size == 0` after that: answer.
/// Queueing only on that later call keeps the connection alive (queueing on the first call forces a close).
func accessHandler(
    _ cls: UnsafeMutableRawPointer?,
    _ connection: OpaquePointer?,
    _ url: UnsafePointer<CChar>?,
    _ method: UnsafePointer<CChar>?,
    _ version: UnsafePointer<CChar>?,
    _ uploadData: UnsafePointer<CChar>?,
    _ uploadDataSize: UnsafeMutablePointer<Int>?,
    _ requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
) -> MHD_Result {
    guard let cls, let connection, let uploadDataSize, let requestContext else { return .NO }
    let context = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()

    guard let stored = requestContext.pointee else {
        guard let record = connectionRecord(connection) else { return .NO }
        if context.requestHeadBudget > 0, CMicroHTTPDShims_request_head_cost(connection) > context.requestHeadBudget {
            // The answer's head would not fit in what is left of the pool: libmicrohttpd would close the connection
            // without a word. Written to the socket directly (it needs no pool memory), then the connection closes.
            let bytes = RawResponse.headerFieldsTooLarge(context.standardHeaders)
            _ = bytes.withUnsafeBytes { CMicroHTTPDShims_send_raw(connection, $0.baseAddress, $0.count) }
            return .NO
        }
        if let action = plainAction(connection: connection, url: url, method: method, context: context) {
            // Over the connection limit: the 503 went out when the connection was accepted.
            guard context.deadlines.headArrived(record, expectsBody: false) else { return .NO }
            let state = RequestState(action: action, discardLimit: context.discardLimit, connection: record)
            if let method, method[0] == 0x48 { state.isHead = true }  // "H": plain requests are GET or HEAD
            requestContext.pointee = Unmanaged.passRetained(state).toOpaque()
            return .YES
        }
        let head = RequestHeadReader.read(
            connection: connection, url: url, method: method, version: version, isTLS: context.isTLS)
        let expectsBody = RequestHeadReader.announcesBody(head)
        guard context.deadlines.headArrived(record, expectsBody: expectsBody) else { return .NO }
        let state = RequestState(
            action: context.handler.handle(head), discardLimit: context.discardLimit, connection: record)
        state.expectsBody = expectsBody
        state.isHead = head.method == "HEAD"
        requestContext.pointee = Unmanaged.passRetained(state).toOpaque()
        return begin(state, head: head, connection: connection, context: context)
    }
    let state = Unmanaged<RequestState>.fromOpaque(stored).takeUnretainedValue()

    let pieceSize = uploadDataSize.pointee
    if pieceSize > 0 {
        uploadDataSize.pointee = 0
        guard !state.isAnswered, let uploadData else { return .YES }
        let piece = UnsafeRawBufferPointer(start: uploadData, count: pieceSize)
        if case .streamBody(_, let receiver) = state.action {
            return stream(piece, to: receiver, state, connection, context)
        }
        return receive(piece, state, connection, context)
    }
    guard !state.isAnswered else { return .YES }
    if state.expectsBody {
        state.expectsBody = false
        context.deadlines.bodyComplete(state.connection)
    }
    return finish(state, connection: connection, context: context)
}

/// MHD_NotifyConnectionCallback: starts and ends the request deadlines of a connection.
func connectionNotification(
    _ cls: UnsafeMutableRawPointer?,
    _ connection: OpaquePointer?,
    _ socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
    _ code: MHD_ConnectionNotificationCode
) {
    guard let cls, let connection else { return }
    let context = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    // MHD_CONNECTION_NOTIFY_STARTED = 0, MHD_CONNECTION_NOTIFY_CLOSED = 1 (not imported as named cases).
    switch code.rawValue {
    case 0:
        context.joinWake(connection)
        let (record, withinLimit) = context.deadlines.connectionStarted(
            socket: CMicroHTTPDShims_connection_fd(connection))
        socketContext?.pointee = Unmanaged.passRetained(record).toOpaque()
        if !withinLimit, !context.isTLS {
            // (Over TLS nothing can be said before the handshake: the connection is just closed.)
            let bytes = RawResponse.serviceUnavailable(context.standardHeaders)
            _ = bytes.withUnsafeBytes { CMicroHTTPDShims_send_raw(connection, $0.baseAddress, $0.count) }
        }
    case 1:
        guard let stored = socketContext?.pointee else { return }
        socketContext?.pointee = nil
        context.deadlines.connectionClosed(Unmanaged<ConnectionRecord>.fromOpaque(stored).takeRetainedValue())
    default:
        break
    }
}

/// MHD_RequestCompletedCallback: releases the per-request state.
func requestCompleted(
    _ cls: UnsafeMutableRawPointer?,
    _ connection: OpaquePointer?,
    _ requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
    _ termination: MHD_RequestTerminationCode
) {
    guard let cls, let requestContext, let stored = requestContext.pointee else { return }
    requestContext.pointee = nil
    let state = Unmanaged<RequestState>.fromOpaque(stored).takeRetainedValue()
    let context = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    context.deadlines.requestCompleted(state.connection)
    if let responder = state.responder { context.untrack(responder) }
    if case .streamBody(_, let receiver) = state.action, !state.receiverIsDone {
        // Disconnect, timeout, server stop or 413: whatever ended it, the body will not be finished.
        state.receiverIsDone = true
        receiver.abandon()
    }
}

/// The record `connectionNotification` keeps in the connection's socket context.
private func connectionRecord(_ connection: OpaquePointer) -> ConnectionRecord? {
    guard let stored = CMicroHTTPDShims_socket_context(connection) else { return nil }
    return Unmanaged<ConnectionRecord>.fromOpaque(stored).takeUnretainedValue()
}

/// The fast path: a plain GET or HEAD (see `PlainRequest`) offered to the handler before a head is built. nil when
/// the request is not plain, the server is draining (answers then need `Connection: close`) or the handler declines.
private func plainAction(
    connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?, context: ServerContext
) -> HTTPRequestAction? {
    guard let url, let method, !context.isStopping else { return nil }
    let isHead: Bool
    if strcmp(method, "GET") == 0 {
        isHead = false
    } else if strcmp(method, "HEAD") == 0 {
        isHead = true
    } else {
        return nil
    }
    var acceptEncoding: UnsafePointer<CChar>?
    var acceptEncodingLength = 0
    guard
        CMicroHTTPDShims_plain_request(
            connection, context.handler.readsCMCDHeaders ? 1 : 0, &acceptEncoding, &acceptEncodingLength) == 1
    else { return nil }
    let request = PlainRequest(
        isHead: isHead, path: UnsafeRawBufferPointer(start: url, count: strlen(url)),
        acceptEncoding: acceptEncoding.map { UnsafeRawBufferPointer(start: $0, count: acceptEncodingLength) },
        threadIndex: Int(CMicroHTTPDShims_thread_index()), isTLS: context.isTLS)
    return context.handler.handlePlain(request)
}

/// After the first call: answers at once an action that needs no body, rejects a body announced larger than the
/// limit at once, prepares the body buffer.
private func begin(
    _ state: RequestState, head: HTTPRequestHead, connection: OpaquePointer, context: ServerContext
) -> MHD_Result {
    switch state.action {
    case .respond(let response) where state.expectsBody:
        // An answer that does not need the body (a refusal) goes at once and the body is never read: queued before
        // it, MHD sends no "100 Continue", reads nothing more and closes afterwards, so a client trickling a body
        // it was refused holds no connection.
        return answer(closing(response), state, connection, context)
    case .respondPrepared(let prepared) where state.expectsBody:
        return answer(closing(prepared.response), state, connection, context)
    default:
        break
    }
    let announced = head.headers["Content-Length"].flatMap { Int($0.trimmingSpaces) }
    if let announced, announced > state.bodyLimit {
        // Queued before the body is read: MHD sends no "100 Continue", reads nothing more and closes afterwards.
        return answer(payloadTooLarge(limit: state.bodyLimit, context.standardHeaders), state, connection, context)
    }
    switch state.action {
    case .receiveBody, .receiveBodyThenSuspend:
        state.body = ByteAccumulator(initialCapacity: min(max(announced ?? 64 * 1024, 16), max(state.bodyLimit, 16)))
    default:
        break
    }
    return .YES
}

/// `response` with `Connection: close`.
private func closing(_ response: HTTPResponse) -> HTTPResponse {
    var response = response
    if !response.headers.contains("Connection") { response.headers.append(name: "Connection", value: "close") }
    return response
}

/// One piece of the request body. libmicrohttpd 0.9.75 refuses MHD_queue_response while a body is being read, so
/// a body that goes over the limit is drained (not stored) and answered 413 when it ends; a body that keeps coming
/// long after the limit gets the 413 written straight to the socket and the connection cut.
private func receive(
    _ piece: UnsafeRawBufferPointer, _ state: RequestState, _ connection: OpaquePointer, _ context: ServerContext
) -> MHD_Result {
    state.receivedCount += piece.count
    if !state.isOverLimit && state.receivedCount > state.bodyLimit {
        state.isOverLimit = true
        state.body = nil
    }
    guard state.isOverLimit else {
        state.body?.append(piece)
        return .YES
    }
    guard state.receivedCount - state.bodyLimit > context.drainLimit else { return .YES }
    state.isAnswered = true
    context.warn(
        "MicroHTTPD: request body over \(state.bodyLimit) bytes kept coming; sent 413 and closed the connection",
        ["http.status": "413", "http.body_limit": "\(state.bodyLimit)"])
    let bytes = RawResponse.payloadTooLarge(limit: state.bodyLimit, context.standardHeaders)
    _ = bytes.withUnsafeBytes { CMicroHTTPDShims_send_raw(connection, $0.baseAddress, $0.count) }
    return .NO
}

/// One piece of a streamed request body, handed to the receiver. libmicrohttpd refuses MHD_queue_response while a
/// body is being read, so an answer in the middle of the body (the receiver's own, or 413 past the limit) is written
/// straight to the socket and the access handler returns MHD_NO: libmicrohttpd reads nothing more and closes the
/// connection (the request-completed callback then runs with an error termination).
private func stream(
    _ piece: UnsafeRawBufferPointer, to receiver: any HTTPBodyReceiver, _ state: RequestState,
    _ connection: OpaquePointer, _ context: ServerContext
) -> MHD_Result {
    state.receivedCount += piece.count
    if state.receivedCount > state.bodyLimit {
        state.isAnswered = true
        context.warn(
            "MicroHTTPD: streamed request body went over \(state.bodyLimit) bytes; sent 413 and closed the connection",
            ["http.status": "413", "http.body_limit": "\(state.bodyLimit)"])
        return answerMidBody(
            RawResponse.payloadTooLarge(limit: state.bodyLimit, context.standardHeaders), connection)
    }
    context.deadlines.bodyProgress(state.connection, received: state.receivedCount)
    guard let response = receiver.receive(piece) else { return .YES }
    state.isAnswered = true
    state.receiverIsDone = true
    return answerMidBody(RawResponse.closing(response), connection)
}

/// Writes `bytes` to the socket, ends the sending side (the client reads the answer, then the end of the stream),
/// and has libmicrohttpd close the connection.
private func answerMidBody(_ bytes: [UInt8], _ connection: OpaquePointer) -> MHD_Result {
    _ = bytes.withUnsafeBytes { CMicroHTTPDShims_send_raw(connection, $0.baseAddress, $0.count) }
    CMicroHTTPDShims_end_sending(connection)
    return .NO
}

/// The request is complete (or the connection was resumed): answer it.
private func finish(_ state: RequestState, connection: OpaquePointer, context: ServerContext) -> MHD_Result {
    if state.isOverLimit {
        return answer(payloadTooLarge(limit: state.bodyLimit, context.standardHeaders), state, connection, context)
    }
    switch state.action {
    case .respond(let response):
        return answer(response, state, connection, context)
    case .respondPrepared(let prepared):
        return answer(prepared, state, connection, context)
    case .receiveBody(_, let complete):
        let bytes = state.body.take()?.finish() ?? SharedBytes([])
        return answer(complete(bytes), state, connection, context)
    case .suspend(let start):
        if state.responder != nil { return answerResumed(state, connection, context) }
        return suspend(state, connection, context, start)
    case .receiveBodyThenSuspend(_, let start):
        if state.responder != nil { return answerResumed(state, connection, context) }
        let bytes = state.body.take()?.finish() ?? SharedBytes([])
        return suspend(state, connection, context) { start(bytes, $0) }
    case .streamBody(_, let receiver):
        state.receiverIsDone = true
        return answer(receiver.finish(), state, connection, context)
    }
}

/// A suspended request was resumed: queues the answer its responder was given.
private func answerResumed(_ state: RequestState, _ connection: OpaquePointer, _ context: ServerContext) -> MHD_Result {
    switch state.responder?.takeAnswer() {
    case .response(let response):
        return answer(response, state, connection, context)
    case .prepared(let prepared):
        return answer(prepared, state, connection, context)
    case nil:
        context.warn("MicroHTTPD: connection resumed without a response; closing it")
        return .NO
    }
}

/// Suspends the request and hands its responder to `start` (503 at once if the server is stopping).
private func suspend(
    _ state: RequestState, _ connection: OpaquePointer, _ context: ServerContext,
    _ start: (HTTPResponder) -> Void
) -> MHD_Result {
    let responder = HTTPResponder(connection: ConnectionHandle(pointer: connection))
    guard context.track(responder) else {
        return answer(serviceUnavailable(context.standardHeaders), state, connection, context)
    }
    state.responder = responder
    MHD_suspend_connection(connection)
    responder.didSuspend()
    start(responder)
    return .YES
}

/// Queues `response` as the answer.
private func answer(
    _ response: HTTPResponse, _ state: RequestState, _ connection: OpaquePointer, _ context: ServerContext
) -> MHD_Result {
    state.isAnswered = true
    var response = response
    if state.isHead, case .stream = response.body {
        // libmicrohttpd 0.9.75 sends the last chunk ("0\r\n\r\n") after the head of a HEAD answer with a
        // content reader of unknown size; an empty body sends the head alone.
        response.body = .empty
    }
    if context.isStopping, !response.headers.contains("Connection") {
        // Draining: the client should not send another request on this connection.
        response.headers.append(name: "Connection", value: "close")
    }
    let (handle, status) = MHDResponseBuilder.make(
        response, connection: ConnectionHandle(pointer: connection), context: context)
    defer { MHD_destroy_response(handle) }
    return queue(handle, status: status, connection, context)
}

/// Queues `prepared`'s own libmicrohttpd response, or one built afresh from it when it must be: a stream is read
/// per connection, and a draining server adds `Connection: close` to every answer.
private func answer(
    _ prepared: PreparedResponse, _ state: RequestState, _ connection: OpaquePointer, _ context: ServerContext
) -> MHD_Result {
    guard !prepared.isStream, !context.isStopping else { return answer(prepared.response, state, connection, context) }
    state.isAnswered = true
    return queue(prepared.handle, status: prepared.status, connection, context)
}

private func queue(
    _ handle: OpaquePointer, status: Int, _ connection: OpaquePointer, _ context: ServerContext
) -> MHD_Result {
    let result = MHD_queue_response(connection, UInt32(clamping: status), handle)
    if result != .YES {
        context.warn("MicroHTTPD: libmicrohttpd refused to queue a \(status) response", ["http.status": "\(status)"])
    }
    return result
}

private func payloadTooLarge(limit: Int, _ standard: HTTPHeaders) -> HTTPResponse {
    var headers = standard
    headers.append(name: "Connection", value: "close")
    return .text(413, RawResponse.payloadTooLargeMessage(limit: limit), headers: headers)
}

/// A response written without libmicrohttpd, right before the connection is cut.
private enum RawResponse {
    static func serviceUnavailable(_ standard: HTTPHeaders) -> [UInt8] {
        closing(
            "503 Service Unavailable", "Too many connections: try again shortly\n", standard,
            extraHeaders: "Retry-After: 1\r\n")
    }

    static func headerFieldsTooLarge(_ standard: HTTPHeaders) -> [UInt8] {
        closing("431 Request Header Fields Too Large", "Request header fields too large\n", standard)
    }

    static func payloadTooLargeMessage(limit: Int) -> String {
        "Request body larger than \(limit) bytes\n"
    }

    static func payloadTooLarge(limit: Int, _ standard: HTTPHeaders) -> [UInt8] {
        closing("413 Content Too Large", payloadTooLargeMessage(limit: limit), standard)
    }

    /// `response` as libmicrohttpd would send it, with `Connection: close`. Bodies in memory only: a file or stream
    /// body is left out (Content-Length: 0); answers given in the middle of a request body are short texts.
    static func closing(_ response: HTTPResponse) -> [UInt8] {
        let reason = MHD_get_reason_phrase_for(UInt32(clamping: response.status)).map { String(cString: $0) } ?? ""
        let date = HTTPDate.format(secondsSince1970: Int64(time(nil)))
        var head = "HTTP/1.1 \(response.status) \(reason)\r\nDate: \(date)\r\n"
        for field in response.headers
        where !["Content-Length", "Connection", "Transfer-Encoding"].contains(where: {
            HTTPHeaders.namesMatch(field.name, $0)
        }) {
            head += "\(field.name): \(field.value)\r\n"
        }
        var body: [UInt8] = []
        switch response.body {
        case .bytes(let bytes):
            body = bytes.array
        case .slice(let bytes, let range):
            let range = range.clamped(to: 0..<bytes.count)
            body = Array(UnsafeRawBufferPointer(start: bytes.unsafeBaseAddress + range.lowerBound, count: range.count))
        case .empty, .file, .stream:
            break
        }
        head += "Connection: close\r\nContent-Length: \(body.count)\r\n\r\n"
        return Array(head.utf8) + body
    }

    /// `HTTP/1.1 <status>`, `Connection: close`, `extraHeaders`, the standard headers, then a text/plain `message`.
    private static func closing(
        _ status: String, _ message: String, _ standard: HTTPHeaders, extraHeaders: String = ""
    ) -> [UInt8] {
        let standardLines = standard.map { "\($0.name): \($0.value)\r\n" }.joined()
        let head =
            "HTTP/1.1 \(status)\r\nConnection: close\r\n" + extraHeaders + standardLines
            + "Content-Type: text/plain; charset=utf-8\r\nContent-Length: \(message.utf8.count)\r\n\r\n"
        return Array((head + message).utf8)
    }
}

/// The answer to a long poll that arrives while the server is stopping.
func serviceUnavailable(_ standard: HTTPHeaders) -> HTTPResponse {
    var headers = standard
    headers.append(name: "Connection", value: "close")
    return .text(503, "Server shutting down\n", headers: headers)
}

extension String {
    fileprivate var trimmingSpaces: Substring {
        var text = Substring(self)
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        return text
    }
}
