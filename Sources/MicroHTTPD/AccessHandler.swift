import CMicroHTTPD
import CMicroHTTPDShims
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
        let head = RequestHeadReader.read(connection: connection, url: url, method: method, version: version)
        let state = RequestState(action: context.handler.handle(head))
        requestContext.pointee = Unmanaged.passRetained(state).toOpaque()
        return begin(state, head: head, connection: connection, context: context)
    }
    let state = Unmanaged<RequestState>.fromOpaque(stored).takeUnretainedValue()

    let pieceSize = uploadDataSize.pointee
    if pieceSize > 0 {
        uploadDataSize.pointee = 0
        guard !state.isAnswered, let uploadData else { return .YES }
        return receive(UnsafeRawBufferPointer(start: uploadData, count: pieceSize), state, connection, context)
    }
    guard !state.isAnswered else { return .YES }
    return finish(state, connection: connection, context: context)
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
    if let responder = state.responder {
        Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue().untrack(responder)
    }
}

/// After the first call: rejects an announced oversized body at once, prepares the body buffer.
private func begin(
    _ state: RequestState, head: HTTPRequestHead, connection: OpaquePointer, context: ServerContext
) -> MHD_Result {
    guard case .receiveBody(let limit, _) = state.action else { return .YES }
    let announced = head.headers["Content-Length"].flatMap { Int($0.trimmingSpaces) }
    if let announced, announced > limit {
        return reject(payloadTooLarge(limit: limit), state, connection, context)
    }
    let initialCapacity = min(max(announced ?? 64 * 1024, 16), max(limit, 16))
    state.body = ByteAccumulator(initialCapacity: initialCapacity)
    return .YES
}

/// One piece of the request body.
private func receive(
    _ piece: UnsafeRawBufferPointer, _ state: RequestState, _ connection: OpaquePointer, _ context: ServerContext
) -> MHD_Result {
    if case .receiveBody(let limit, _) = state.action {
        let received = state.body?.count ?? 0
        if received + piece.count > limit {
            state.body = nil
            return reject(payloadTooLarge(limit: limit), state, connection, context)
        }
        state.body?.append(piece)
        return .YES
    }
    state.discardedCount += piece.count
    if state.discardedCount > context.discardedBodyLimit {
        return reject(payloadTooLarge(limit: context.discardedBodyLimit), state, connection, context)
    }
    return .YES
}

/// The request is complete (or the connection was resumed): answer it.
private func finish(_ state: RequestState, connection: OpaquePointer, context: ServerContext) -> MHD_Result {
    switch state.action {
    case .respond(let response):
        return answer(response, state, connection, context)
    case .respondPrepared(let prepared):
        state.isAnswered = true
        return queue(prepared.handle, status: prepared.status, connection, context)
    case .receiveBody(_, let complete):
        let bytes = state.body.take()?.finish() ?? SharedBytes([])
        return answer(complete(bytes), state, connection, context)
    case .suspend(let start):
        if let responder = state.responder {
            guard let response = responder.takeResponse() else {
                context.log("MicroHTTPD: connection resumed without a response; closing it")
                return .NO
            }
            return answer(response, state, connection, context)
        }
        let responder = HTTPResponder(connection: ConnectionHandle(pointer: connection))
        guard context.track(responder) else {
            return answer(serviceUnavailable(), state, connection, context)
        }
        state.responder = responder
        MHD_suspend_connection(connection)
        responder.didSuspend()
        start(responder)
        return .YES
    }
}

/// Queues `response` as the answer.
private func answer(
    _ response: HTTPResponse, _ state: RequestState, _ connection: OpaquePointer, _ context: ServerContext
) -> MHD_Result {
    state.isAnswered = true
    let handle = MHDResponseBuilder.make(response)
    defer { MHD_destroy_response(handle) }
    return queue(handle, status: response.status, connection, context)
}

/// Answers before the body has been read; the connection is closed after the response.
private func reject(
    _ response: HTTPResponse, _ state: RequestState, _ connection: OpaquePointer, _ context: ServerContext
) -> MHD_Result {
    answer(response, state, connection, context)
}

private func queue(
    _ handle: OpaquePointer, status: Int, _ connection: OpaquePointer, _ context: ServerContext
) -> MHD_Result {
    let result = MHD_queue_response(connection, UInt32(clamping: status), handle)
    if result != .YES { context.log("MicroHTTPD: libmicrohttpd refused to queue a \(status) response") }
    return result
}

private func payloadTooLarge(limit: Int) -> HTTPResponse {
    .text(413, "Request body larger than \(limit) bytes\n", headers: ["Connection": "close"])
}

/// The answer to a long poll that arrives while the server is stopping.
func serviceUnavailable() -> HTTPResponse {
    .text(503, "Server shutting down\n", headers: ["Connection": "close"])
}

extension String {
    fileprivate var trimmingSpaces: Substring {
        var text = Substring(self)
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        return text
    }
}
