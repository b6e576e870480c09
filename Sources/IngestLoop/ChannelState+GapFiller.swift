import GapFiller
import MediaProbe
import SharedBytes

/// The filler of a rendition's outage: made at its first GAP entry from the newest real segment, kept for the GAP
/// entries after it so consecutive fillers continue each other.
enum GapFill: Sendable {
    /// No outage yet, or a segment arrived since the last one.
    case idle
    /// Filling: the filler, and where the newest real segment ended on the media timeline (90 kHz, unwrapped) and
    /// on the PDT timeline (ms since the epoch).
    case filling(TransportStreamGapFiller, mediaEnd: Int64, programDateTimeEnd: Int64)
    /// This outage's GAP URLs answer 404: the channel is configured so, or the media cannot be filled (why).
    case unavailable(String)
}

extension ChannelState {
    /// The filler segment for a GAP entry in `slot`, or nil when the GAP URL answers 404.
    ///
    /// Its first PTS continues the rendition's media timeline: the newest real segment's end plus the PDT time
    /// from that segment's end to the slot's start, so a player that plays through sees continuous timestamps.
    /// A WebVTT rendition's GAP URLs answer the empty cue segment; IMSC1 (fMP4 subtitles) answer 404.
    mutating func fillerSegment(position: Int, slot: Slot) -> SharedBytes? {
        if renditions[position].isFollower {
            guard configuration.gapResponse == .filler, isWebVTT(position: position) else { return nil }
            return WebVTTSegment.empty(mpegts: timestampOffset(position: position))
        }
        if case .idle = renditions[position].gapFill { renditions[position].gapFill = startGapFill(position: position) }
        guard case .filling(var filler, let mediaEnd, let programDateTimeEnd) = renditions[position].gapFill else {
            return nil
        }
        let start = mediaEnd + (slot.programDateTimeMilliseconds - programDateTimeEnd) * 90
        let bytes = filler.segment(startPTS: start, durationMilliseconds: slot.durationMilliseconds)
        renditions[position].gapFill = .filling(filler, mediaEnd: mediaEnd, programDateTimeEnd: programDateTimeEnd)
        return SharedBytes(bytes)
    }

    /// Makes the filler of the outage starting now from the rendition's newest real segment.
    private func startGapFill(position: Int) -> GapFill {
        guard configuration.gapResponse == .filler else { return .unavailable("gapResponse is notFound") }
        let rendition = renditions[position]
        let newest =
            rendition.held.last { !$0.isGap } ?? rendition.window.entries.last { !$0.isGap }
            ?? rendition.window.retained.last { !$0.entry.isGap }?.entry
        guard let newest, let bytes = newest.bytes, newest.container == .mpegTS,
            let mediaEnd = rendition.lastMediaEnd, mediaEnd.timescale == 90_000
        else {
            return .unavailable("no MPEG-TS segment before the gap")
        }
        let source = rendition.gapFillerSource ?? KeyframeGapFillerSource()
        let made = bytes.withUnsafeBytes { raw in
            Result { () throws(GapFillerError) in try source.makeFiller(after: raw) }
        }
        switch made {
        case .success(let filler):
            return .filling(filler, mediaEnd: mediaEnd.ticks, programDateTimeEnd: newest.endMilliseconds)
        case .failure(let error):
            return .unavailable(error.message)
        }
    }
}
