import GapFiller
import MediaProbe
import SharedBytes

/// The filler of a rendition's outage: made at its first GAP entry from the newest real segment, kept for the GAP
/// entries after it so consecutive fillers continue each other.
enum GapFill: Sendable {
    /// No outage yet, or a segment arrived since the last one.
    case idle
    /// Filling: the filler (which keeps where each of its tracks ended), and where the newest real segment ended on
    /// the media timeline (90 kHz, unwrapped; 0 for fMP4, whose filler keeps its tracks' timelines) and on the PDT
    /// timeline (ms since the epoch).
    case filling(MadeFiller, mediaEnd: Int64, programDateTimeEnd: Int64)
    /// This outage's GAP URLs answer 404: the channel is configured so, or the media cannot be filled (why).
    case unavailable(String)
}

/// The filler of an outage, by the rendition's container.
enum MadeFiller: Sendable {
    case transportStream(TransportStreamGapFiller)
    /// fMP4: decodable with the init section of the segment it continues.
    case fragmentedMP4(FragmentedMP4GapFiller)
}

extension ChannelState {
    /// The filler segment for a GAP entry in `slot`, or nil when the GAP URL answers 404.
    ///
    /// The slot lies on the rendition's media timeline at the newest real segment's end plus the PDT time from that
    /// segment's end to the slot's start; each track of the filler starts where that track ended (the segment's or
    /// the previous filler's last frame: an encoder stopped mid-segment flushes audio ending before its video) and
    /// runs to the slot's end, so a player that plays through sees continuous timestamps in every track. Fillers
    /// are made in slot order (the filler keeps where each track ended).
    /// A WebVTT rendition's GAP URLs answer the empty cue segment; IMSC1 (fMP4 subtitles) answer 404.
    mutating func fillerSegment(position: Int, msn: UInt64, slot: Slot) -> SharedBytes? {
        if renditions[position].isFollower {
            guard configuration.gapResponse == .filler, isWebVTT(position: position) else { return nil }
            return WebVTTSegment.empty(mpegts: timestampOffset(position: position))
        }
        if case .idle = renditions[position].gapFill { renditions[position].gapFill = startGapFill(position: position) }
        guard case .filling(let made, let mediaEnd, let programDateTimeEnd) = renditions[position].gapFill else {
            return nil
        }
        // Wrapping: PDTs come from encoders' hints, and the media timeline is modular anyway (2^33 for MPEG-TS).
        let elapsed = slot.programDateTimeMilliseconds &- programDateTimeEnd
        switch made {
        case .transportStream(var filler):
            let bytes = filler.segment(
                startPTS: mediaEnd &+ elapsed &* 90, durationMilliseconds: slot.durationMilliseconds)
            renditions[position].gapFill = .filling(
                .transportStream(filler), mediaEnd: mediaEnd, programDateTimeEnd: programDateTimeEnd)
            return SharedBytes(bytes)
        case .fragmentedMP4(var filler):
            // mfhd's sequence_number from the MSN: the same on every origin of a redundancy group.
            let bytes = filler.segment(
                elapsedMilliseconds: elapsed, durationMilliseconds: slot.durationMilliseconds,
                sequenceNumber: UInt32(truncatingIfNeeded: msn &+ 1))
            renditions[position].gapFill = .filling(
                .fragmentedMP4(filler), mediaEnd: mediaEnd, programDateTimeEnd: programDateTimeEnd)
            return SharedBytes(bytes)
        }
    }

    /// Makes the filler of the outage starting now from the rendition's newest real segment.
    private func startGapFill(position: Int) -> GapFill {
        guard configuration.gapResponse == .filler || configuration.outage == .slate else {
            return .unavailable("gapResponse is notFound")
        }
        let rendition = renditions[position]
        let newest =
            rendition.held.last { !$0.isGap } ?? rendition.window.entries.last { !$0.isGap }
            ?? rendition.window.retained.last { !$0.entry.isGap }?.entry
        guard let newest, let bytes = newest.bytes else { return .unavailable("no segment before the gap") }
        if newest.container == .fragmentedMP4Segment {
            guard rendition.gapFillerSource == nil, let version = newest.initSectionVersion,
                let initSection = rendition.initSections[version]
            else { return .unavailable("no init section for the fMP4 segment before the gap") }
            let made = initSection.bytes.withUnsafeBytes { initBytes in
                bytes.withUnsafeBytes { segmentBytes in
                    Result { () throws(GapFillerError) in
                        try FragmentedMP4GapFiller(initSection: initBytes, after: segmentBytes)
                    }
                }
            }
            switch made {
            case .success(let filler):
                return .filling(.fragmentedMP4(filler), mediaEnd: 0, programDateTimeEnd: newest.endMilliseconds)
            case .failure(let error):
                return .unavailable(error.message)
            }
        }
        guard newest.container == .mpegTS, let mediaEnd = rendition.lastMediaEnd, mediaEnd.timescale == 90_000 else {
            return .unavailable("no MPEG-TS or fMP4 segment before the gap")
        }
        let source = rendition.gapFillerSource ?? slateClipSources[rendition.name] ?? KeyframeGapFillerSource()
        var made = bytes.withUnsafeBytes { raw in
            Result { () throws(GapFillerError) in try source.makeFiller(after: raw) }
        }
        // A segment cut short where the encoder stopped (an SRT caller gone just after a slot boundary) can hold a
        // keyframe but no audio PES yet: the filler is then read from the segment before it joined to this one, so
        // the picture and the video's end are this segment's and the audio's are where the audio last ended.
        if case .failure = made, !newest.discontinuity,
            let previous = (rendition.window.entries + rendition.held).last(where: {
                !$0.isGap && $0.msn &+ 1 == newest.msn && $0.container == .mpegTS
            }),
            let previousBytes = previous.bytes
        {
            var joined = previousBytes.withUnsafeBytes { [UInt8]($0) }
            bytes.withUnsafeBytes { joined.append(contentsOf: $0) }
            let fromBoth = joined.withUnsafeBytes { raw in
                Result { () throws(GapFillerError) in try source.makeFiller(after: raw) }
            }
            if case .success = fromBoth { made = fromBoth }
        }
        switch made {
        case .success(let filler):
            return .filling(
                .transportStream(filler), mediaEnd: mediaEnd.ticks, programDateTimeEnd: newest.endMilliseconds)
        case .failure(let error):
            return .unavailable(error.message)
        }
    }
}
