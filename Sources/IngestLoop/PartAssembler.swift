import MediaProbe
import SharedBytes

/// The parts of one streamed push: body bytes in (any split), parts out; the finished segment is exactly the
/// parts' bytes. One per push, used outside any lock.
package struct PartAssembler: Sendable {
    /// - Parameters:
    ///   - partTarget: the channel's PART-TARGET.
    ///   - initSection: the rendition's current initialization section (fMP4 pushes); nil for MPEG-TS.
    ///   - limit: the most bytes a segment may have (`tooLarge` beyond).
    package init(partTarget: MediaTime, initSection: InitSectionInfo?, limit: Int) {
        fatalError("contract: built by the cutting step")
    }

    /// Feeds the next bytes of the body: the settled bytes of the part in progress and the parts completed by them,
    /// in order; an error when the bytes are not media the cutter can read (nothing more is accepted then).
    package mutating func receive(_ piece: UnsafeRawBufferPointer) -> Result<[PartEvent], IngestError> {
        fatalError("contract: built by the cutting step")
    }

    /// The body is complete: the last part (nil when the body ended exactly at a cut, i.e. it was empty), the whole
    /// segment (the parts' bytes concatenated) and its probe.
    package mutating func finish() -> Result<(last: CutPart?, segment: SharedBytes, info: SegmentInfo), IngestError> {
        fatalError("contract: built by the cutting step")
    }

    /// The parts completed so far.
    package var completedParts: Int { fatalError("contract: built by the cutting step") }
}
