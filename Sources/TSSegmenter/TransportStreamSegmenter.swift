import MPEGTSWriter
public import MediaProbe

/// Cuts a continuous MPEG-TS (an SRT caller, a file) into HLS segments on the channel's clock, as its bytes arrive,
/// in any split. Pure: bytes and their arrival time in, segment bytes out; no lock, no I/O.
///
/// **Where it cuts.** The stream's timestamps are put on the shared wall clock once, at the first random access
/// point: the *anchor* (wall time of PTS 0) is its arrival time less its PTS, rounded down to a grid of
/// `toleranceMilliseconds`, as `SharedTimeline` anchors a pushed feed. Slot boundaries are the wall times
/// 2000-01-01T00:00:00Z + k x segment duration (the grid the redundancy group numbers MSNs on), i.e. the PTS
/// `(boundary - anchor) x 90`. A segment ends at the first video keyframe (H.264 IDR, HEVC IRAP) whose DTS is at or
/// after the first boundary after the segment's start; an audio-only stream ends at the AAC frame whose start is
/// nearest the boundary (a PES carrying several is split there). Two origins fed the same stream, whose clocks and
/// arrival agree within much less than the tolerance, compute the same anchor and so cut at the same PTS, whichever
/// joined the stream first.
///
/// **What a segment is.** It starts with the stream's PAT and PMT (written again by `TransportStreamMuxer`, their
/// continuity counters renumbered within the segment) then the keyframe's packets: decodable alone. The bytes before
/// the first keyframe at or after the first boundary are dropped (a short first segment would fix a short target
/// duration). A segment starts a discontinuity after a new session (`discontinuity: true`), a
/// timestamp jump (the anchor is taken again) and a PMT change (new PIDs or types: a stream change).
public struct TransportStreamSegmenter: Sendable {
    /// How the segmenter cuts.
    public struct Configuration: Sendable, Hashable {
        /// The channel's segment duration (ms): the slot length.
        public var segmentDurationMilliseconds: Int64
        /// Grid the anchor is rounded down to (ms); the channel's `sharedTimeline.toleranceMilliseconds`, 500 alone.
        public var toleranceMilliseconds: Int64
        /// A segment longer than this (no keyframe came) ends anyway and the stream waits for the next keyframe.
        public var maximumSegmentBytes: Int
        /// The program or stream of a multiplex this rendition is cut from (nil: the first program, all of it);
        /// with one, the segments carry only its packets, after a PAT/PMT of their own.
        public var selector: TransportStreamSelector?

        public init(
            segmentDurationMilliseconds: Int64, toleranceMilliseconds: Int64 = 500,
            maximumSegmentBytes: Int = 64 << 20, selector: TransportStreamSelector? = nil
        ) {
            self.selector = selector
            self.segmentDurationMilliseconds = max(segmentDurationMilliseconds, 1)
            self.toleranceMilliseconds = max(toleranceMilliseconds, 1)
            self.maximumSegmentBytes = max(maximumSegmentBytes, 4096)
        }
    }

    /// A segment that started.
    public struct SegmentStart: Sendable, Hashable {
        /// 0, 1, 2 ... within this segmenter.
        public var index: Int
        /// Unwrapped 90 kHz decode time of its first access unit.
        public var decodeTime: Int64
        /// It follows a new session, a timestamp jump or a stream change.
        public var discontinuity: Bool
    }

    /// A segment that ended: its bytes were all handed out in `.bytes` events since its start.
    public struct SegmentEnd: Sendable, Hashable {
        public var index: Int
        public var decodeTime: Int64
        /// From its first access unit's decode time to the next segment's (or the last access unit's end).
        public var durationTicks: Int64
        public var byteCount: Int
        /// The stream ended inside PES packets (`finish`: the caller closed, was dropped or the origin stops): the
        /// byte offsets in this segment, ascending, of the packets of each PID's last PES not known to be whole (its
        /// PES_packet_length not reached; an unbounded one, PES_packet_length 0 as video has, with no next PES
        /// started on its PID and its last packet not ending in stuffing, which a muxer puts only in the last packet of
        /// a PES). The segment is whole without them: its PAT/PMT and every PES that ended stay.
        /// Empty for a segment that ended at a cut.
        public var cutShortPackets: [Int] = []
        /// No PES of the primary stream in the segment is whole: without the cut-short packets it has no access unit
        /// of its media, and is dropped (only at `finish`).
        public var cutShortEntirely = false
        /// The audio and video streams of the program that carried media earlier in the stream but have no whole PES
        /// in this segment (PIDs; only at `finish`): a caller gone just after a keyframe leaves a segment of a frame
        /// or a few with no audio. Such a segment is dropped too: a player buffering each track (hls.js) finds
        /// its buffer still ending in the segment before, which it has loaded, as it has this one, and loads
        /// nothing more, never reaching the GAP entries after it.
        public var missingStreams: [Int] = []

        /// Not to be listed: its primary stream was cut short entirely, or it lacks a stream the stream carries.
        public var dropped: Bool { cutShortEntirely || !missingStreams.isEmpty }
    }

    public enum Event: Sendable, Hashable {
        case started(SegmentStart)
        /// The next bytes of the open segment (whole packets).
        case bytes([UInt8])
        case ended(SegmentEnd)
        /// The encoder's keyframes do not fit the segment duration (their interval is longer than a segment, or
        /// none came for two segment durations): what to set, to be logged (once per change).
        case keyframeWarning(String)
    }

    /// What the status page shows.
    public struct Status: Sendable, Hashable, Codable {
        public var demuxer = TransportStreamDemuxer.Statistics()
        public var segments = 0
        /// Bytes dropped while waiting for a keyframe (stream start, after a jump or a stream change).
        public var bytesDropped = 0
        /// Segments ended at the byte bound with no keyframe.
        public var forcedCuts = 0
        /// Audio-only: PES packets split between two ADTS frames to cut at the frame nearest a boundary.
        public var audioSplits = 0
        /// The latest keyframe interval (90 kHz ticks) and the frame duration seen.
        public var keyframeIntervalTicks: Int64?
        public var frameDurationTicks: Int64?
        /// Set while the keyframe interval is longer than the segment duration, or while no keyframe came for two
        /// segment durations (an encoder sending no IDR: open GOP, intra refresh): says which `-g` to use.
        public var keyframeWarning: String?
        /// Access units (PES) of the primary media stream read: what a continuous input measures liveness on (null
        /// packets and tables a CBR encoder keeps sending when its source dies are not media).
        public var accessUnits = 0
    }

    public let configuration: Configuration
    public private(set) var status = Status()
    private var demuxer: TransportStreamDemuxer
    private let sharedAnchor: SharedStreamAnchor?
    /// Times this segmenter anchored (the shared anchor's generation).
    private var anchorings = 0
    /// The program as of the packet being handled (the demuxer may have read further).
    private var program: TransportStreamDemuxer.Program?
    /// Wall time of PTS 0 (ms), once anchored.
    private var anchorMilliseconds: Int64?
    private var open: SegmentStart?
    private var openBytes = 0
    private var nextBoundary: Int64 = 0
    /// After anchoring: the boundary the first segment starts at (the first keyframe at or after it).
    private var firstBoundary: Int64?
    private var nextIndex = 0
    private var discontinuityNext: Bool
    /// Packets from the latest primary unit start, until the demuxer tells what that access unit is.
    private var held: [UInt8] = []
    private var holding = false
    /// Output not yet handed out as a `.bytes` event.
    private var output: [UInt8] = []
    private var events: [Event] = []
    /// What wrote the open segment's PAT and PMT: it numbers the stream's later PAT/PMT packets on from them.
    private var tableWriter: TransportStreamMuxer?
    private var lastDecodeTime: Int64?
    private var lastKeyframeTime: Int64?
    /// Video: the first access unit's decode time while no keyframe came yet (since the start or a jump).
    private var firstVideoTime: Int64?
    /// The no-keyframe warning is up (cleared by the next keyframe).
    private var missingKeyframeWarned = false
    /// Audio: the duration of the last PES (ticks).
    private var audioPESTicks: Int64?
    /// Audio: the PES whose packets are held (until the next PES starts), and whether the segment ends before it.
    private var heldAudio: TransportStreamDemuxer.AccessUnit?
    private var cutAtHeldAudio = false
    private var arrival: Int64 = 0
    /// The PES packet each PID is inside in the open segment, until it is known whole (its PES_packet_length
    /// reached, or the PID's next PES started): what `finish` leaves out. A few PIDs: searched linearly.
    private var openPES: [OpenPES] = []
    /// The PIDs with a PES that ended whole in the open segment, and in any segment so far (a few: searched linearly).
    private var wholeInSegment: [Int] = []
    private var wholeInStream: [Int] = []
    /// Reused between calls: the packets the demuxer read and what each brought.
    private var scratchPackets: [UInt8] = []
    private var scratchInfos: [TransportStreamDemuxer.PacketInfo] = []

    /// A PES packet being read in the open segment.
    private struct OpenPES: Sendable {
        var pid: Int
        /// PES bytes still to come; nil for an unbounded PES (PES_packet_length 0), whole at the PID's next PES.
        var remaining: Int?
        /// Unbounded: its latest packet ends in stuffing (the adaptation field longer than its fields): a muxer
        /// stuffs only the last packet of a PES, so the stream ending there ended the PES whole.
        var endsInStuffing = false
        /// Offsets of its packets in the open segment.
        var packets: [Int]
    }

    /// The most held back while the demuxer reads an access unit's start.
    static let maximumHeldBytes = 4 << 20
    /// 2000-01-01T00:00:00Z in ms since 1970 (the MSN grid's origin, `SharedTimeline`).
    static let gridOriginMilliseconds: Int64 = 946_684_800_000

    /// - Parameter discontinuity: the first segment starts a discontinuity (a new session of a feed that ran before).
    /// - Parameter sharedAnchor: shared with the segmenters of the other renditions cut from the same stream.
    public init(
        configuration: Configuration, discontinuity: Bool = false, sharedAnchor: SharedStreamAnchor? = nil
    ) {
        self.configuration = configuration
        self.discontinuityNext = discontinuity
        self.sharedAnchor = sharedAnchor
        demuxer = TransportStreamDemuxer(selector: configuration.selector)
    }

    /// The next bytes of the stream, arrived at `arrivalMilliseconds` (shared clock); returns what happened.
    public mutating func consume(_ bytes: UnsafeRawBufferPointer, arrivalMilliseconds: Int64) -> [Event] {
        arrival = arrivalMilliseconds
        var packets = scratchPackets
        var infos = scratchInfos
        packets.removeAll(keepingCapacity: true)
        infos.removeAll(keepingCapacity: true)
        scratchPackets = []
        scratchInfos = []
        demuxer.consume(bytes, packets: &packets, infos: &infos)
        packets.withUnsafeBytes { buffer in
            for (index, info) in infos.enumerated() {
                let start = index * 188
                handle(UnsafeRawBufferPointer(rebasing: buffer[start..<(start + 188)]), info)
            }
        }
        scratchPackets = packets
        scratchInfos = infos
        status.demuxer = demuxer.statistics
        return takeEvents()
    }

    /// The stream ended: the open segment ends with what it has (a video access unit being read is dropped), and
    /// its end lists the packets of the PES packets the stream ended inside (`SegmentEnd.cutShortPackets`): libsrt
    /// drops what its receive buffer holds, up to the latency, when the caller closes, so the last PES of each PID
    /// is often cut short. Their bytes were handed out already (for Low-Latency parts, as they came): the receiver
    /// leaves them out before the segment is stored or its last part listed.
    public mutating func finish() -> [Event] {
        _ = demuxer.finish()
        if heldAudio != nil {
            flushHeld()
        } else {
            held.removeAll(keepingCapacity: true)
            holding = false
        }
        endSegment(nextDecodeTime: nil, streamEnded: true)
        return takeEvents()
    }

    private mutating func takeEvents() -> [Event] {
        flushOutput()
        // Most calls have none: returning the empty array allocates nothing.
        guard !events.isEmpty else { return [] }
        let taken = events
        events = []
        return taken
    }

    private mutating func flushOutput() {
        guard !output.isEmpty else { return }
        events.append(.bytes(output))
        output.removeAll(keepingCapacity: true)
    }

    private mutating func handle(_ packet: UnsafeRawBufferPointer, _ info: TransportStreamDemuxer.PacketInfo) {
        if let unit = info.endedUndecided { resolve(unit) }
        if let audio = info.audioEnded, audio.sampleRate > 0, audio.samples > 0 {
            audioPESTicks = Int64(audio.samples) * 90_000 / Int64(audio.sampleRate)
        }
        if info.programChanged {
            // A stream change: the segment ends here; the next starts at the new program's first keyframe.
            flushHeld()
            endSegment(nextDecodeTime: nil)
            discontinuityNext = true
            program = info.program
            return
        }
        if let defined = info.program { program = defined }
        if info.accessUnit != nil || info.endedUndecided != nil { status.accessUnits += 1 }
        // A selected part of a multiplex: only its streams; its own PAT/PMT start each segment.
        if configuration.selector != nil, info.role != .primary, info.role != .elementary { return }
        if info.role == .primary, info.unitStart {
            if holding, let previous = heldAudio {
                // Audio: PTS (a split PES's frames are timed from it).
                let next = info.accessUnit.flatMap { $0.jumped ? nil : $0.pts ?? $0.dts }
                decideAudio(previous, next: next)
            }
            heldAudio = nil
            if holding { flushHeld() }
            holding = true
        }
        if holding {
            held.append(contentsOf: packet)
            if let unit = info.accessUnit {
                resolve(unit)
            } else if held.count > Self.maximumHeldBytes {
                flushHeld()
            }
        } else {
            emit(packet, pid: info.pid)
        }
    }

    /// The access unit whose packets are held is known: cut before it, or append it.
    private mutating func resolve(_ unit: TransportStreamDemuxer.AccessUnit) {
        guard holding else { return }
        let time = unit.dts ?? unit.pts
        if unit.jumped {
            endSegment(nextDecodeTime: nil)
            discontinuityNext = true
            // Anchored again on the new timeline at once: the media after the jump is kept.
            if let time { anchor(at: time) } else { anchorMilliseconds = nil }
            lastKeyframeTime = nil
            firstVideoTime = nil
        }
        if let time {
            if let last = lastDecodeTime, time > last, program?.primary?.kind == .video {
                status.frameDurationTicks = time - last
            }
            if unit.randomAccess, program?.primary?.kind == .video {
                if missingKeyframeWarned {
                    missingKeyframeWarned = false
                    status.keyframeWarning = nil
                }
                if let previous = lastKeyframeTime, time > previous { noteKeyframeInterval(time - previous) }
                lastKeyframeTime = time
            } else if program?.primary?.kind == .video {
                noteMissingKeyframe(at: time)
            }
        }
        defer { if let time { lastDecodeTime = time } }
        let audio = program?.primary?.kind == .audio
        if audio, open != nil, time != nil {
            // Held until the next PES starts: then it is known which of the two is nearer the boundary.
            heldAudio = unit
            return
        }
        if !audio, open != nil, let time, unit.randomAccess, time >= nextBoundary {
            endSegment(nextDecodeTime: time)
        }
        if open == nil {
            guard unit.randomAccess, let time, let program else {
                status.bytesDropped += held.count
                held.removeAll(keepingCapacity: true)
                holding = false
                return
            }
            if anchorMilliseconds == nil {
                anchor(at: time)
                firstBoundary = boundary(after: time &- 1)
            }
            // The first segment starts on a boundary too: a short first segment would fix a short target duration,
            // and origins joining the stream at different moments start on the same cut.
            if let first = firstBoundary, time < first {
                status.bytesDropped += held.count
                held.removeAll(keepingCapacity: true)
                holding = false
                return
            }
            firstBoundary = nil
            startSegment(at: time, program: program)
        }
        flushHeld()
    }

    /// Audio: the held PES starts at `previous`, the next at `next` (nil when its header is not read yet). The
    /// segment ends before the held PES when it is the PES start nearest the boundary: the first at or after it, or
    /// the last before it when that one is nearer than the next.
    private mutating func decideAudio(_ previous: TransportStreamDemuxer.AccessUnit, next: Int64?) {
        guard open != nil, let time = previous.pts ?? previous.dts, let program else { return }
        var cut = cutAtHeldAudio || time >= nextBoundary
        cutAtHeldAudio = false
        if !cut {
            let following = next ?? time &+ (audioPESTicks ?? 0)
            if following >= nextBoundary {
                if time < nextBoundary, splitHeldAudio(startingAt: time, program: program) { return }
                if nextBoundary &- time < following &- nextBoundary { cut = true } else { cutAtHeldAudio = true }
            }
        }
        guard cut else { return }
        let passed = nextBoundary
        endSegment(nextDecodeTime: time)
        startSegment(at: time, program: program)
        // Cut just before the boundary: the next one is the boundary after it.
        nextBoundary = boundary(after: max(time, passed))
    }

    /// Audio: the boundary falls inside the held PES (starting at `time`). When an ADTS frame inside it starts
    /// nearer the boundary than the PES's start and end, the PES is split there: its first frames end the segment
    /// as a PES of their own, the rest start the next one in a PES whose PTS is that frame's, so each segment starts
    /// at the frame nearest the boundary and decodes alone. Returns false when the PES is not split (the nearest
    /// frame start is the PES's start or end, its payload is not whole ADTS frames, or a part would be longer than a
    /// PES packet holds: an unbounded PES, PES_packet_length 0, may carry megabytes).
    private mutating func splitHeldAudio(
        startingAt time: Int64, program: TransportStreamDemuxer.Program
    ) -> Bool {
        guard let primary = program.primary?.pid else { return false }
        // The held packets: the PES's, and others (tables, null packets) that came between them.
        var pes: [UInt8] = []
        var others: [(range: Range<Int>, pid: Int)] = []
        // The last PCR among them when the audio PID carries it: the part starting the next segment repeats it.
        var pcr: Int64?
        for offset in stride(from: 0, to: held.count - 187, by: 188) {
            let pid = Int(held[offset + 1] & 0x1F) << 8 | Int(held[offset + 2])
            guard pid == primary else {
                others.append((offset..<(offset + 188), pid))
                continue
            }
            let control = held[offset + 3] >> 4 & 3
            if control & 2 != 0, program.pcrPID == primary, held[offset + 4] >= 7, held[offset + 5] & 0x10 != 0 {
                pcr = held[(offset + 6)..<(offset + 10)].reduce(Int64(0)) { $0 << 8 | Int64($1) } << 1
                    | Int64(held[offset + 10] >> 7)
            }
            guard control & 1 != 0 else { continue }
            let start = control & 2 != 0 ? offset + 5 + Int(held[offset + 4]) : offset + 4
            guard start <= offset + 188 else { return false }
            pes.append(contentsOf: held[start..<(offset + 188)])
        }
        guard let audio = AudioPESFrames(pes: pes) else { return false }
        // Frame k starts `samples before it` later; the nearest start to the boundary, the PES's end included.
        var starts: [Int64] = []
        var samples: Int64 = 0
        for frame in audio.frames {
            starts.append(time &+ samples &* 90_000 / Int64(audio.sampleRate))
            samples &+= Int64(frame.samples)
        }
        starts.append(time &+ samples &* 90_000 / Int64(audio.sampleRate))
        let target = nextBoundary
        guard
            let nearest = starts.indices.min(by: { abs(starts[$0] &- target) < abs(starts[$1] &- target) }),
            nearest > 0, nearest < audio.frames.count
        else { return false }
        let split = starts[nearest]
        let before = audio.frames[..<nearest].map { Array(pes[$0.range]) }
        let after = audio.frames[nearest...].map { Array(pes[$0.range]) }
        let streamID = pes[3]
        let limit = TransportStreamMuxer.maximumAudioPayload
        guard before.reduce(0, { $0 + $1.count }) <= limit, after.reduce(0, { $0 + $1.count }) <= limit else {
            return false
        }
        var bytes: [UInt8] = []
        swap(&bytes, &held)
        holding = false
        heldAudio = nil
        bytes.withUnsafeBytes { buffer in
            for other in others { emit(UnsafeRawBufferPointer(rebasing: buffer[other.range]), pid: other.pid) }
        }
        bytes.removeAll(keepingCapacity: true)
        held = bytes
        writeAudio(before, pts: time, streamID: streamID, randomAccess: false, pcr: nil)
        endSegment(nextDecodeTime: split)
        startSegment(at: split, program: program)
        writeAudio(after, pts: split, streamID: streamID, randomAccess: true, pcr: pcr)
        nextBoundary = boundary(after: max(split, target))
        status.audioSplits += 1
        return true
    }

    /// Appends a PES of `frames` on the primary PID to the open segment, written by its table writer (which numbers
    /// the PID's packets in an audio-only segment).
    private mutating func writeAudio(
        _ frames: [[UInt8]], pts: Int64, streamID: UInt8, randomAccess: Bool, pcr: Int64?
    ) {
        guard open != nil, var writer = tableWriter else { return }
        let before = output.count
        writer.writeAudio(
            frames, pts: pts, streamID: streamID, randomAccess: randomAccess, pcr: pcr, into: &output)
        tableWriter = writer
        openBytes += output.count - before
        // Whole by construction.
        if let primary = program?.primary?.pid { noteWhole(primary) }
    }

    private mutating func startSegment(at time: Int64, program: TransportStreamDemuxer.Program) {
        if anchorMilliseconds == nil { anchor(at: time) }
        nextBoundary = boundary(after: time)
        let start = SegmentStart(index: nextIndex, decodeTime: time, discontinuity: discontinuityNext)
        nextIndex += 1
        discontinuityNext = false
        open = start
        openBytes = 0
        openPES.removeAll(keepingCapacity: true)
        wholeInSegment.removeAll(keepingCapacity: true)
        flushOutput()
        events.append(.started(start))
        let primary = program.primary
        let layout = TransportStreamMuxer.Layout(
            patSection: program.patSection, pmtPID: UInt16(truncatingIfNeeded: program.pmtPID),
            pmtSection: program.pmtSection, videoPID: UInt16(truncatingIfNeeded: primary?.pid ?? 0x1FFF),
            audioPID: UInt16(truncatingIfNeeded: primary?.pid ?? 0x1FFF),
            pcrPID: UInt16(truncatingIfNeeded: program.pcrPID))
        var muxer = TransportStreamMuxer(layout: layout)
        let before = output.count
        muxer.writeProgramTables(into: &output)
        openBytes += output.count - before
        tableWriter = muxer
    }

    /// Puts the stream's timestamps on the wall clock: the access unit at `time` arrived now.
    private mutating func anchor(at time: Int64) {
        let tolerance = configuration.toleranceMilliseconds
        let unrounded = arrival &- time / 90
        let rounded = Self.floorDivide(unrounded, tolerance) &* tolerance
        anchorings += 1
        anchorMilliseconds = sharedAnchor?.adopt(generation: anchorings, computed: rounded) ?? rounded
    }

    /// The first slot boundary after `time` (unwrapped 90 kHz ticks), as a decode time.
    private func boundary(after time: Int64) -> Int64 {
        let anchor = anchorMilliseconds ?? 0
        let slot = configuration.segmentDurationMilliseconds &* 90
        // Ticks since the grid origin; wrapping arithmetic: the values are far from the limits for any real stream,
        // and a hostile one gets odd cuts, never a trap.
        let offset = (anchor &- Self.gridOriginMilliseconds) &* 90
        let sinceOrigin = time &+ offset
        let next = (Self.floorDivide(sinceOrigin, slot) &+ 1) &* slot
        return next &- offset
    }

    private mutating func endSegment(nextDecodeTime: Int64?, streamEnded: Bool = false) {
        guard let start = open else { return }
        flushOutput()
        var end = nextDecodeTime ?? lastDecodeTime ?? start.decodeTime
        if nextDecodeTime == nil, let frame = status.frameDurationTicks ?? audioPESTicks { end = end &+ frame }
        var ended = SegmentEnd(
            index: start.index, decodeTime: start.decodeTime, durationTicks: end &- start.decodeTime,
            byteCount: openBytes)
        if streamEnded, !openPES.isEmpty {
            let cut = openPES.filter { !$0.endsInStuffing }
            ended.cutShortPackets = cut.flatMap(\.packets).sorted()
            let primary = program?.primary?.pid
            ended.cutShortEntirely =
                !wholeInSegment.contains { $0 == primary } && cut.contains { $0.pid == primary }
        }
        if streamEnded, let program {
            // An unbounded PES whose last packet ends in stuffing ended whole with the stream.
            let endedWhole = openPES.filter { $0.pid >= 0 && $0.endsInStuffing }.map(\.pid)
            ended.missingStreams = program.streams.filter {
                ($0.kind == .video || $0.kind == .audio) && wholeInStream.contains($0.pid)
                    && !wholeInSegment.contains($0.pid) && !endedWhole.contains($0.pid)
            }.map(\.pid)
        }
        events.append(.ended(ended))
        status.segments += 1
        open = nil
        openBytes = 0
        openPES.removeAll(keepingCapacity: true)
    }

    private mutating func flushHeld() {
        guard holding else { return }
        holding = false
        heldAudio = nil
        // Swapped out and back, so the held buffer keeps its capacity without a copy (emit never reads `held`).
        var bytes: [UInt8] = []
        swap(&bytes, &held)
        let size = 188
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset + size <= buffer.count {
                let packet = UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + size)])
                emit(packet, pid: Int(packet[1] & 0x1F) << 8 | Int(packet[2]))
                offset += size
            }
        }
        bytes.removeAll(keepingCapacity: true)
        held = bytes
    }

    /// Appends a packet to the open segment (dropped when none is open).
    private mutating func emit(_ packet: UnsafeRawBufferPointer, pid: Int) {
        guard open != nil else {
            status.bytesDropped += packet.count
            return
        }
        let start = output.count
        notePES(packet, pid: pid, at: openBytes)
        output.append(contentsOf: packet)
        openBytes += packet.count
        // The segment's own PAT/PMT came first: the stream's later ones continue their counters. An audio-only
        // segment's audio packets too (a PES split between frames is written again: the counters follow it). A packet
        // without payload takes no new counter: it repeats the last one taken.
        let audioOnly = program?.primary?.kind == .audio && pid == program?.primary?.pid
        if pid == 0 || pid == program?.pmtPID || audioOnly, tableWriter != nil {
            let renumbered = UInt16(truncatingIfNeeded: pid)
            let counter =
                packet[3] & 0x10 != 0
                ? tableWriter!.takeContinuityCounter(for: renumbered) : tableWriter!.lastContinuityCounter(for: renumbered)
            output[start + 3] = output[start + 3] & 0xF0 | counter
        }
        if openBytes > configuration.maximumSegmentBytes {
            status.forcedCuts += 1
            endSegment(nextDecodeTime: nil)
        }
    }

    /// Follows the PES packets of the open segment's elementary streams (a packet at `offset` in it): which one each
    /// PID is inside until it is known whole. Tables, null packets and sections (SCTE-35: no 00 00 01 start) are no
    /// PES; packets without payload carry none of one.
    private mutating func notePES(_ packet: UnsafeRawBufferPointer, pid: Int, at offset: Int) {
        guard pid != 0, pid != 0x1FFF, pid != program?.pmtPID else { return }
        let control = packet[3] >> 4 & 3
        guard control & 1 != 0 else { return }
        let payloadStart = control & 2 != 0 ? 5 + Int(packet[4]) : 4
        guard payloadStart < packet.count else { return }
        let payload = packet.count - payloadStart
        let index = openPES.firstIndex { $0.pid == pid }
        guard packet[1] & 0x40 != 0 else {
            guard let index else { return }
            openPES[index].packets.append(offset)
            if let remaining = openPES[index].remaining {
                openPES[index].remaining = remaining - payload
                if remaining <= payload { pesEnded(at: index) }
            } else {
                openPES[index].endsInStuffing = Self.endsInStuffing(packet)
            }
            return
        }
        // A PES starts: the PID's one before it ended whole.
        if let index { pesEnded(at: index) }
        guard payload >= 6, packet[payloadStart] == 0, packet[payloadStart + 1] == 0, packet[payloadStart + 2] == 1
        else { return }
        let length = Int(packet[payloadStart + 4]) << 8 | Int(packet[payloadStart + 5])
        // PES_packet_length counts the bytes after itself.
        if length > 0, length + 6 <= payload {
            noteWhole(pid)
            return
        }
        var pes = OpenPES(
            pid: pid, remaining: length > 0 ? length + 6 - payload : nil,
            endsInStuffing: length == 0 && Self.endsInStuffing(packet), packets: [])
        if let reused = openPES.firstIndex(where: { $0.pid < 0 }) {
            swap(&pes.packets, &openPES[reused].packets)
            pes.packets.removeAll(keepingCapacity: true)
            pes.packets.append(offset)
            openPES[reused] = pes
        } else {
            pes.packets.append(offset)
            openPES.append(pes)
        }
    }

    /// The packet's adaptation field is longer than the fields its flags announce: it carries stuffing bytes.
    private static func endsInStuffing(_ packet: UnsafeRawBufferPointer) -> Bool {
        guard packet[3] & 0x20 != 0 else { return false }
        let length = Int(packet[4])
        // adaptation_field_length 0: one stuffing byte.
        guard length > 0 else { return true }
        let flags = packet[5]
        var fields = 1
        if flags & 0x10 != 0 { fields += 6 }
        if flags & 0x08 != 0 { fields += 6 }
        if flags & 0x04 != 0 { fields += 1 }
        if flags & 0x02 != 0, 5 + fields < packet.count { fields += 1 + Int(packet[5 + fields]) }
        if flags & 0x01 != 0, 5 + fields < packet.count { fields += 1 + Int(packet[5 + fields]) }
        return length > fields
    }

    /// The PES at `index` of `openPES` ended whole: its slot is kept for the next one (pid -1).
    private mutating func pesEnded(at index: Int) {
        noteWhole(openPES[index].pid)
        openPES[index].pid = -1
        openPES[index].packets.removeAll(keepingCapacity: true)
    }

    /// A PES of `pid` ended whole in the open segment.
    private mutating func noteWhole(_ pid: Int) {
        if !wholeInSegment.contains(pid) { wholeInSegment.append(pid) }
        if !wholeInStream.contains(pid) { wholeInStream.append(pid) }
    }

    /// Records a keyframe interval; warns when it is longer than the segment duration.
    private mutating func noteKeyframeInterval(_ ticks: Int64) {
        status.keyframeIntervalTicks = ticks
        let slot = configuration.segmentDurationMilliseconds &* 90
        guard ticks > slot else {
            status.keyframeWarning = nil
            return
        }
        let seconds = Double(ticks) / 90_000
        let target = Double(configuration.segmentDurationMilliseconds) / 1000
        let warning =
            "keyframes come every \(Self.format(seconds)) s, longer than the \(Self.format(target)) s segments: "
            + "segments end only at keyframes and run long; set the encoder's keyframe interval: \(gopAdvice())"
        let changed = status.keyframeWarning == nil
        status.keyframeWarning = warning
        if changed { events.append(.keyframeWarning(warning)) }
    }

    /// A video access unit that is not a keyframe: warns once no keyframe came for two segment durations (or two
    /// keyframe intervals) (an encoder whose GOP is open, or that refreshes by intra slices, sends I pictures that
    /// are no IDR).
    private mutating func noteMissingKeyframe(at time: Int64) {
        guard let since = lastKeyframeTime ?? firstVideoTime else {
            firstVideoTime = time
            return
        }
        let (waited, overflow) = time.subtractingReportingOverflow(since)
        // Two segment durations, or two keyframe intervals once one is known: a steady long GOP has its own warning
        // (logged once), not this one at every GOP.
        let limit = 2 &* max(configuration.segmentDurationMilliseconds &* 90, status.keyframeIntervalTicks ?? 0)
        guard !overflow, waited > limit, !missingKeyframeWarned else { return }
        missingKeyframeWarned = true
        let warning =
            "no keyframe (H.264 IDR, HEVC IRAP picture) in \(Self.format(Double(waited) / 90_000)) s of the stream: "
            + "segments start and end only at keyframes, so \(open == nil ? "none is cut" : "the segment runs on")"
            + "; set the encoder to a closed GOP with an IDR every segment (no open GOP, no intra refresh): "
            + gopAdvice()
        status.keyframeWarning = warning
        events.append(.keyframeWarning(warning))
    }

    /// What to set the encoder's keyframe interval to: `-g` with the frame rate seen, else in seconds.
    private func gopAdvice() -> String {
        let slot = configuration.segmentDurationMilliseconds &* 90
        let target = Double(configuration.segmentDurationMilliseconds) / 1000
        guard let frame = status.frameDurationTicks, frame > 0 else {
            return "a keyframe interval of at most \(Self.format(target)) s"
        }
        let frames = max(Int64(1), slot / frame)
        return "-g \(frames) (\(Self.format(90_000 / Double(frame))) fps x \(Self.format(target)) s; with x264 also "
            + "-keyint_min \(frames) -sc_threshold 0)"
    }

    private static func format(_ value: Double) -> String {
        let rounded = (value * 100).rounded() / 100
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        let quotient = value / divisor
        return (value % divisor != 0 && (value < 0) != (divisor < 0)) ? quotient &- 1 : quotient
    }
}
