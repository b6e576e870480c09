import HTTPPushInput
import LiveTimeline
import MicroHTTPD
import OriginCore
import Synchronization

/// The body of a media push to a Low-Latency rendition, handed to its `StreamingPush` piece by piece as it
/// arrives, so parts are listed while the encoder is still sending the segment.
///
/// A push whose head arrives while the rendition's previous push has not ended yet waits for it instead of being
/// refused: `ffmpeg -f segment` sends the last chunk of one segment and opens the next one at once, without reading
/// the answer, and the next head may reach another libmicrohttpd thread before that last chunk is read. Its body is
/// held and the push starts as soon as the previous one ends; it is refused (`concurrentPush`, 409) only if the
/// previous push is still going on when its own body ends.
final class StreamingIngest: HTTPBodyReceiver {
    private let handler: OriginHTTPHandler
    /// Who pushes where (the audit log of a refusal for a limit).
    private let context: PushContext
    /// The connection's thread is the only one to use it: the lock is never contended.
    private let state: Mutex<State>

    private enum State {
        case streaming(StreamingPush)
        /// Answered at the first byte (the push was refused before its body).
        case refused(IngestError)
        /// Waiting for the rendition's previous push to end; the body so far is held.
        case waiting(Waiting)
        case done
    }

    struct Waiting {
        let fileName: String
        let refusal: IngestError
        var held: [UInt8] = []
    }

    init(push: StreamingPush, context: PushContext, handler: OriginHTTPHandler) {
        self.handler = handler
        self.context = context
        self.state = Mutex(.streaming(push))
    }

    /// A receiver that refuses the push at once, reading none of its body.
    init(refusal: IngestError, context: PushContext, handler: OriginHTTPHandler) {
        self.handler = handler
        self.context = context
        self.state = Mutex(.refused(refusal))
    }

    /// A receiver for a push that found the rendition's previous push not yet ended (`refusal`: its
    /// `concurrentPush`): it starts the push once the previous one has ended.
    init(fileName: String, refusal: IngestError, context: PushContext, handler: OriginHTTPHandler) {
        self.handler = handler
        self.context = context
        self.state = Mutex(.waiting(Waiting(fileName: fileName, refusal: refusal)))
    }

    func receive(_ piece: UnsafeRawBufferPointer) -> HTTPResponse? {
        let error = state.withLock { state -> IngestError? in
            switch state {
            case .streaming(let push):
                return push.receive(piece)
            case .refused(let refusal):
                state = .done
                return refusal
            case .waiting(var waiting):
                waiting.held.append(contentsOf: piece)
                switch start(waiting) {
                case .success(let push?):
                    state = .streaming(push)
                    return waiting.held.withUnsafeBytes { push.receive($0) }
                case .success(nil):
                    state = .waiting(waiting)
                    return nil
                case .failure(let refusal):
                    state = .done
                    return refusal
                }
            case .done:
                return nil
            }
        }
        return error.map { handler.refusedPush($0, context) }
    }

    func finish() -> HTTPResponse {
        let outcome = state.withLock { state -> Result<IngestReceipt, IngestError> in
            var current = state
            state = .done
            if case .waiting(let waiting) = current {
                // The last chance: the previous push may have ended meanwhile.
                switch start(waiting) {
                case .success(let push?):
                    if let error = waiting.held.withUnsafeBytes({ push.receive($0) }) { return .failure(error) }
                    current = .streaming(push)
                case .success(nil):
                    return .failure(waiting.refusal)
                case .failure(let refusal):
                    return .failure(refusal)
                }
            }
            switch current {
            case .streaming(let push):
                do throws(IngestError) {
                    return .success(try push.finish())
                } catch {
                    return .failure(error)
                }
            case .refused(let refusal):
                return .failure(refusal)
            case .waiting, .done:
                return .failure(IngestError(.notMedia, "empty body"))
            }
        }
        switch outcome {
        case .success(let receipt): return handler.finish(OriginHTTPHandler.answer(receipt))
        case .failure(let error): return handler.refusedPush(error, context)
        }
    }

    func abandon() {
        let push = state.withLock { state -> StreamingPush? in
            defer { state = .done }
            if case .streaming(let push) = state { return push }
            return nil
        }
        push?.abandon()
    }

    /// Tries to start the waiting push: nil while the previous push goes on; a refusal for anything else.
    private func start(_ waiting: Waiting) -> Result<StreamingPush?, IngestError> {
        do throws(IngestError) {
            guard
                let push = try handler.origin.beginStreamingPush(
                    channel: context.channel, rendition: context.rendition ?? "", fileName: waiting.fileName,
                    requester: context.requester)
            else { return .failure(waiting.refusal) }
            return .success(push)
        } catch  where error.reason == .concurrentPush {
            return .success(nil)
        } catch {
            return .failure(error)
        }
    }
}
