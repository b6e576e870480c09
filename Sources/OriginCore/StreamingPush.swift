import IngestLoop
import MediaProbe
import SharedBytes

/// One push into a Low-Latency rendition, taken while it arrives: its bytes are cut into parts outside any lock,
/// each part is listed (one pass under `Channel.state`) as soon as it is cut, and the finished segment is staged
/// in the store and closed as `Channel.accept` closes a whole push.
public final class StreamingPush: Sendable {
    init() {
        fatalError("contract: built by the streamed-push step")
    }

    /// The next bytes of the body, on the connection's thread. Non-nil: the push is refused or ended now (the
    /// segment closed at its last part); the rest of the body is not read.
    public func receive(_ piece: UnsafeRawBufferPointer) -> IngestError? {
        fatalError("contract: built by the streamed-push step")
    }

    /// The body is complete: the segment is stored and closed.
    public func finish() throws(IngestError) -> IngestReceipt {
        fatalError("contract: built by the streamed-push step")
    }

    /// The connection ended before the body did.
    public func abandon() {
        fatalError("contract: built by the streamed-push step")
    }
}

extension Origin {
    /// Starts taking a push as it arrives when it is a media segment for a Low-Latency channel; nil when the push
    /// is taken whole (`ingest(channel:rendition:fileName:body:)`): a regular channel, a playlist hint, an init
    /// section. Throws when the push is refused before any byte (unknown channel, `concurrentPush`, ...).
    public func beginStreamingPush(
        channel: String, rendition: String, fileName: String
    ) throws(IngestError) -> StreamingPush? {
        fatalError("contract: built by the streamed-push step")
    }
}
