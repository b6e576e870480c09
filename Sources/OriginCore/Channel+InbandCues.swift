import LiveTimeline
import Logging
import Markers
import MediaProbe
import SharedBytes
import Synchronization

/// SCTE-35 cues read from the pushed MPEG-TS (`SegmentInfo.spliceSections`) become markers in the channel's book.
///
/// Called after a segment was accepted, outside the state lock: the book's change fsyncs its journal there, while a
/// shared book is written on the channel's `inbandCueLane` (a database round trip never holds the push). Every
/// rendition carries the same cues and every origin of a group reads the same stream: the IDs come from the cue
/// (`InbandCue.markerId`), so all of them make the same marker once. A book that cannot be written does not fail the
/// push (the segment is listed already); the failure is counted and the same cue in the next rendition's segment, or
/// the next repeat, tries again.
extension Channel {
    func applyInbandCues(_ info: SegmentInfo, accepted result: Result<WindowEntry, IngestError>) {
        guard !info.spliceSections.isEmpty, configuration.inbandCues != .ignore,
            case .success(let entry) = result
        else { return }
        var cues: [InbandCue] = []
        var refusals: [String] = []
        for section in info.spliceSections {
            do {
                cues += try InbandCue.cues(
                    section: section, segmentStartPTS: info.startTime.ticks,
                    segmentMilliseconds: entry.programDateTimeMilliseconds,
                    segmentDurationMilliseconds: entry.durationMilliseconds)
            } catch {
                refusals.append("\(error)")
            }
        }
        if let refusal = refusals.last {
            logger.warning(
                "SCTE-35 section in the stream refused", metadata: ["reason": "\(refusal)", "hls.msn": "\(entry.msn)"])
        }
        let now = clock.nowMilliseconds()
        let sectionsRead = info.spliceSections.count
        let store: @Sendable (_ attempt: Int) -> LaneStep = { [self, cues, refusals] attempt in
            storeInbandCues(
                cues, at: now, sectionsRead: sectionsRead, refusals: refusals.count, lastRefusal: refusals.last,
                attempt: attempt)
        }
        // A shared book is a database round trip (four with races, seconds while it is unreachable): never on the
        // push's thread, which the encoder waits on; the local journal is one fsync, as the segment's own.
        guard markers.shared != nil else {
            _ = store(0)
            return
        }
        if !inbandCueLane.runStep(store) {
            inbandCueStatistics.withLock { $0.bookFailures += 1 }
            logger.error(
                "SCTE-35 cue dropped: too many cues wait for the shared marker book",
                metadata: ["hls.msn": "\(entry.msn)"])
        }
    }

    /// The waits before a cue's shared-book change is tried again while the database cannot be reached (the lane
    /// keeps later cues behind it, so an out-point is never stored after its cue-in; no thread sleeps meanwhile).
    static let sharedBookRetryDelays: [Duration] = [
        .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8),
    ]

    /// One attempt (`attempt` from 0) at storing `cues`: `.again(after:)` while the shared book is unreachable and
    /// retries are left, else the outcome is counted and `.done`.
    private func storeInbandCues(
        _ cues: [InbandCue], at now: Int64, sectionsRead: Int, refusals: Int, lastRefusal: String?, attempt: Int
    ) -> LaneStep {
        var outcomes: [InbandCueOutcome] = []
        var failed = false
        if !cues.isEmpty {
            do {
                (outcomes, _) = try markers.change { book throws(MarkerError) in
                    let outcomes = cues.map { book.apply($0, nowMilliseconds: now) }
                    return (outcomes, changed: outcomes.contains { $0 != .unchanged })
                }
            } catch {
                if markers.shared != nil, error.reason == .unavailable,
                    Self.sharedBookRetryDelays.indices.contains(attempt)
                {
                    let delay = Self.sharedBookRetryDelays[attempt]
                    logger.warning(
                        "SCTE-35 cue waits for the shared marker book",
                        metadata: ["error": "\(error)", "retry.in": "\(delay)"])
                    return .again(after: delay)
                }
                failed = true
                logger.error("SCTE-35 cue not stored in the marker book", metadata: ["error": "\(error)"])
            }
        }
        inbandCueStatistics.withLock { status in
            status.sectionsRead += sectionsRead
            status.sectionsRefused += refusals
            if let lastRefusal { status.lastRefusal = lastRefusal }
            if failed { status.bookFailures += 1 }
            status.lateCues += cues.filter(\.late).count
            for outcome in outcomes {
                switch outcome {
                case .created: status.markersCreated += 1
                case .closed: status.markersClosed += 1
                case .cancelled: status.markersCancelled += 1
                case .unchanged: break
                }
            }
        }
        if outcomes.contains(where: { $0 != .unchanged }) {
            for outcome in outcomes where outcome != .unchanged {
                logger.info("SCTE-35 cue applied", metadata: ["outcome": "\(outcome)"])
            }
            markersDidChange()
        }
        return .done
    }

    /// The `inbandCues` part of the channel status, with the placement error of the listed out-points measured on
    /// the first media rendition's window.
    func inbandCueStatus() -> InbandCueStatus {
        var status = inbandCueStatistics.withLock { $0 }
        status.mode = configuration.inbandCues.rawValue
        let segments = state.withLock { state in
            (state.renditions.first { $0.role == .media } ?? state.renditions.first)?.window.entries.map {
                (start: $0.programDateTimeMilliseconds, duration: $0.durationMilliseconds)
            } ?? []
        }
        status.placement = markers.book.inbandPlacement(segments: segments)
        return status
    }
}
