import MicroHTTPD
import OriginCore
import SharedBytes
import Synchronization

/// Admin calls that make database round trips (markers and recordings with a group database) never wait on a
/// libmicrohttpd thread: those threads serve players too, and a slow PostgreSQL must only slow or fail the admin call
/// that needs it (docs/outages.md). The request is suspended, the call runs on `BackgroundWork`, and the request is
/// answered when it ends, or with 503 and the reason after `answerDeadline` (the call may still complete later: a
/// repeated POST then answers 200 with what was stored, as for any retry).
final class DatabaseCalls: Sendable {
    /// Longest an admin call waits for the database before it is answered 503: below the HTTP connection timeout
    /// (30 s by default), so a client always gets an answer.
    static let answerDeadline: Duration = .seconds(10)
    /// Most admin calls waiting for the database at once; more are answered 503 at once.
    static let limit = 16

    private let running = Atomic<Int>(0)

    /// Runs `work` off the calling thread and answers `responder` with its response, or with a 503 after
    /// `deadline`, whichever comes first. `finish` adds the standard headers and counts a response.
    func run(
        _ responder: HTTPResponder, deadline: Duration = DatabaseCalls.answerDeadline,
        finish: @escaping @Sendable (HTTPResponse) -> HTTPResponse, _ work: @escaping @Sendable () -> HTTPResponse
    ) {
        guard running.add(1, ordering: .relaxed).newValue <= Self.limit else {
            running.subtract(1, ordering: .relaxed)
            responder.respond(
                finish(Self.unavailable("\(Self.limit) admin calls are already waiting for the database")))
            return
        }
        let seconds = deadline.components.seconds
        // Both on BackgroundWork's threads, not on the Swift pool: a deadline must fire even while tasks are busy.
        // The work's end leaves the deadline to find the request answered; the deadline leaves the work to finish
        // and be counted.
        BackgroundWork.run { [self] in
            let response = work()
            running.subtract(1, ordering: .relaxed)
            responder.respond(response)
        }
        BackgroundWork.run(after: deadline) {
            guard !responder.isAnswered else { return }
            responder.respond(
                finish(Self.unavailable("the database did not answer within \(seconds) s; the change may or "
                    + "may not be stored: send it again (a repeated request answers what was stored)")))
        }
    }

    /// 503 `{"error": reason}` (`reason` has no characters JSON would escape).
    static func unavailable(_ reason: String) -> HTTPResponse {
        HTTPResponse(
            status: 503, headers: ["Content-Type": "application/json", "Retry-After": "1", "Cache-Control": "no-store"],
            body: .bytes(SharedBytes(string: "{\"error\": \"\(reason)\"}\n")))
    }
}

extension OriginHTTPHandler {
    /// `action` with its body's work moved off the libmicrohttpd thread (`DatabaseCalls`): a `.receiveBody` reads
    /// its body, then the request is suspended until the work is done. Other actions are returned unchanged.
    func offThread(_ action: HTTPRequestAction) -> HTTPRequestAction {
        guard case .receiveBody(let limit, let complete) = action else { return action }
        return .receiveBodyThenSuspend(limit: limit) { [self] body, responder in
            databaseCalls.run(responder, finish: { [self] in finish($0) }) { complete(body) }
        }
    }
}
