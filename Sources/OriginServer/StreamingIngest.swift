import IngestLoop
import MicroHTTPD
import OriginCore

/// The body of a media push to a Low-Latency rendition, handed to its `StreamingPush` piece by piece as it
/// arrives, so parts are listed while the encoder is still sending the segment.
final class StreamingIngest: HTTPBodyReceiver {
    private let push: StreamingPush?
    /// Answered at the first byte instead (the push was refused before its body, e.g. `concurrentPush`).
    private let refusal: IngestError?
    private let handler: OriginHTTPHandler

    init(push: StreamingPush, handler: OriginHTTPHandler) {
        self.push = push
        self.refusal = nil
        self.handler = handler
    }

    /// A receiver that refuses the push at once, reading none of its body.
    init(refusal: IngestError, handler: OriginHTTPHandler) {
        self.push = nil
        self.refusal = refusal
        self.handler = handler
    }

    func receive(_ piece: UnsafeRawBufferPointer) -> HTTPResponse? {
        guard let push else { return refusal.map { handler.finish(OriginHTTPHandler.answer($0)) } }
        return push.receive(piece).map { handler.finish(OriginHTTPHandler.answer($0)) }
    }

    func finish() -> HTTPResponse {
        guard let push else {
            return handler.finish(OriginHTTPHandler.answer(refusal ?? IngestError(.notMedia, "empty body")))
        }
        do throws(IngestError) {
            return handler.finish(OriginHTTPHandler.answer(try push.finish()))
        } catch {
            return handler.finish(OriginHTTPHandler.answer(error))
        }
    }

    func abandon() {
        push?.abandon()
    }
}
