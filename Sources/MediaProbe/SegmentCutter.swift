/// A place where a segment is cut into Low-Latency HLS parts: the start of an access unit (MPEG-TS) or of a
/// fragment (fMP4), with the program tables or `styp` that belong to it.
public struct CutPoint: Sendable, Hashable {
    /// Byte offset of the cut from the start of the segment's body.
    public var offset: Int
    /// Decode time of the first access unit after the cut, in the cutter's `timescale`, as carried by the stream
    /// (33-bit PTS/DTS for MPEG-TS, not unwrapped; `tfdt` for fMP4).
    public var decodeTime: Int64
    /// The part that starts here starts with a random access point (EXT-X-PART INDEPENDENT=YES).
    public var independent: Bool

    public init(offset: Int, decodeTime: Int64, independent: Bool) {
        self.offset = offset
        self.decodeTime = decodeTime
        self.independent = independent
    }
}

/// Cuts a segment's body into parts of about a target duration while the body arrives, in any split.
///
/// A cutter keeps its state between calls and allocates nothing per packet. The first cut is always at offset 0.
/// Feeding the body in any split gives the same cuts as feeding it whole.
public protocol SegmentCutter: Sendable {
    /// Ticks per second of `CutPoint.decodeTime`.
    var timescale: Int64 { get }
    /// Bytes before this offset can no longer move into a later part (a cut can move back over program tables
    /// that precede an access unit, so the newest bytes may still belong to the next part).
    var settledOffset: Int { get }
    /// Feeds the next bytes of the body; returns the cut points that became certain, in order.
    mutating func consume(_ bytes: UnsafeRawBufferPointer) throws(ProbeError) -> [CutPoint]
}

/// Whether a part of `span` ticks may end before a keyframe: at least 85 % of the part target of `target` ticks
/// (RFC 8216bis 4.4.4.9: only an INDEPENDENT=YES part, a GAP part and the last part of a segment may be shorter, so
/// the part a keyframe would close must not be). Exact in integers; in `Double` where those would overflow. A
/// negative span (time went back) ends the part too, as before: the channel refuses a part of negative duration.
func closesLongEnoughPart(span: Int64, target: Int64) -> Bool {
    guard span >= 0 else { return true }
    let (scaledSpan, spanOverflow) = span.multipliedReportingOverflow(by: 100)
    let (scaledTarget, targetOverflow) = target.multipliedReportingOverflow(by: 85)
    guard spanOverflow || targetOverflow else { return scaledSpan >= scaledTarget }
    return Double(span) >= 0.85 * Double(target)
}

/// Cuts MPEG-TS at the start of video access units (audio for audio-only streams), moving the cut back over the
/// PAT/PMT/SDT packets directly before it.
///
/// An access unit starts at a `payload_unit_start_indicator` packet of the video PID (the first in the PMT; the
/// first audio PID when there is no video). It starts a new part when keeping it would make the part longer than the
/// target: `(its time - part start + frame duration) > target`, the frame duration being the median of the last 8
/// access-unit spacings; or when it is a keyframe and the part it closes is at least 85 % of the target (a keyframe
/// sooner stays inside the part, which is then not INDEPENDENT: HLS rule 38). Times are DTS when present, else PTS.
public struct TransportStreamCutter: SegmentCutter {
    public var timescale: Int64 { 90_000 }
    public var settledOffset: Int {
        var settled = packetsEnd
        if let siRunStart { settled = min(settled, siRunStart) }
        if let pendingCut { settled = min(settled, pendingCut) }
        return settled
    }

    private let partTargetTicks: Int64
    /// The start of a packet split between two calls.
    private var carry: [UInt8]
    private var carryCount = 0
    /// Bytes of the whole packets read so far.
    private var packetsEnd = 0
    private var pmtPID = -1
    /// The PAT, then the PMT, being reassembled (only until both are read).
    private var tables = PSISectionAssembler()
    /// The PID whose access units are cut at; -1 until the PMT is read.
    private var accessUnitPID = -1
    private var accessUnitIsVideo = false
    private var hevc = false
    /// First of the PAT/PMT/SDT packets directly before the next packet.
    private var siRunStart: Int?
    /// Where the cut goes if the access unit whose PES header is being read starts a part.
    private var pendingCut: Int?
    private var pendingRandomAccess = false
    /// That access unit's raw decode time once its PES header is read (it may still be looked at for an IDR/IRAP).
    private var pendingTime: Int64?
    private var pendingHeaderLength = 0
    /// The last bytes of the access unit seen so far (a start code may straddle packets), and a window over them
    /// and the next packet's first bytes.
    private var tail: [UInt8]
    private var tailCount = 0
    private var window: [UInt8]
    /// The first bytes of that access unit's PES packet (its header, at most 19 bytes).
    private var pesHeader: [UInt8]
    private var pesBytesSeen = 0
    /// Unwrapped decode time of the latest access unit and of the first of the part in progress.
    private var lastTime: Int64?
    private var partStartTime: Int64 = 0
    /// The latest access-unit spacings (a ring of 8).
    private var spacings: [Int64]
    private var spacingCount = 0

    /// - Parameter partTarget: the channel's PART-TARGET; no part (but the last) is longer.
    public init(partTarget: MediaTime) {
        partTargetTicks = partTarget.timescale > 0 ? partTarget.ticks * 90_000 / partTarget.timescale : 0
        carry = [UInt8](repeating: 0, count: TransportStreamPacket.size)
        pesHeader = [UInt8](repeating: 0, count: 19)
        tail = [0, 0, 0]
        window = [0, 0, 0, 0, 0, 0]
        spacings = [Int64](repeating: 0, count: 8)
    }

    public mutating func consume(_ bytes: UnsafeRawBufferPointer) throws(ProbeError) -> [CutPoint] {
        let size = TransportStreamPacket.size
        var cuts: [CutPoint] = []
        var index = 0
        if carryCount > 0 {
            let take = min(size - carryCount, bytes.count)
            for offset in 0..<take { carry[carryCount + offset] = bytes[offset] }
            carryCount += take
            index = take
            guard carryCount == size else { return cuts }
            let packet = carry
            let result = packet.withUnsafeBytes { buffer in
                Result { () throws(ProbeError) in try self.read(packet: buffer, cuts: &cuts) }
            }
            try result.get()
            carryCount = 0
        }
        while bytes.count - index >= size {
            try read(packet: UnsafeRawBufferPointer(rebasing: bytes[index..<(index + size)]), cuts: &cuts)
            index += size
        }
        for offset in index..<bytes.count { carry[offset - index] = bytes[offset] }
        carryCount = bytes.count - index
        return cuts
    }

    /// Reads one 188-byte packet starting at `packetsEnd`.
    private mutating func read(packet: UnsafeRawBufferPointer, cuts: inout [CutPoint]) throws(ProbeError) {
        let start = packetsEnd
        guard packet[0] == TransportStreamPacket.syncByte else {
            throw ProbeError(
                "not MPEG-TS: byte \(start) is 0x\(ADTSHeader.hex(packet[0])), expected sync byte 0x47 (packet "
                    + "\(start / TransportStreamPacket.size))")
        }
        let pid = Int(packet[1] & 0x1F) << 8 | Int(packet[2])
        let unitStart = packet[1] & 0x40 != 0
        let adaptationFieldControl = (packet[3] >> 4) & 3
        var payloadStart = 4
        var randomAccess = false
        if adaptationFieldControl & 2 != 0 {
            let length = Int(packet[4])
            guard length <= (adaptationFieldControl == 2 ? 183 : 182) else {
                throw ProbeError(
                    "MPEG-TS packet at byte \(start): adaptation_field_length \(length) runs past the packet end")
            }
            if length > 0 { randomAccess = packet[5] & 0x40 != 0 }
            payloadStart = 5 + length
        }
        let payload =
            adaptationFieldControl & 1 != 0
            ? UnsafeRawBufferPointer(rebasing: packet[payloadStart...])
            : UnsafeRawBufferPointer(rebasing: packet[0..<0])
        packetsEnd += TransportStreamPacket.size

        let isTable = pid == 0 || pid == pmtPID || pid == 0x11
        if pid == 0, pmtPID < 0 {
            readProgramAssociation(payload, unitStart: unitStart)
        } else if pid == pmtPID, accessUnitPID < 0 {
            readProgramMap(payload, unitStart: unitStart)
        } else if pid == accessUnitPID {
            if unitStart {
                // The access unit before had no IDR/IRAP slice where one was looked for.
                if pendingTime != nil { decidePending(independent: false, cuts: &cuts) }
                pendingCut = siRunStart ?? start
                pendingRandomAccess = randomAccess
                pendingTime = nil
                pesBytesSeen = 0
            }
            if pendingCut != nil { try readPESStart(payload, cuts: &cuts) }
        }
        siRunStart = isTable ? siRunStart ?? start : nil
    }

    /// Collects the PES header of the access unit in `pendingCut`; once its time is known, decides on it if it is
    /// flagged random access (or audio), else looks for its first slice, packet by packet, to tell whether it is an
    /// IDR/IRAP picture.
    private mutating func readPESStart(_ payload: UnsafeRawBufferPointer, cuts: inout [CutPoint]) throws(ProbeError) {
        let before = pesBytesSeen
        if before < pesHeader.count {
            for index in 0..<min(payload.count, pesHeader.count - before) { pesHeader[before + index] = payload[index] }
        }
        pesBytesSeen += payload.count
        if pendingTime == nil {
            guard pesBytesSeen >= 9 else { return }
            guard pesHeader[0] == 0, pesHeader[1] == 0, pesHeader[2] == 1 else {
                throw ProbeError("MPEG-TS PID \(accessUnitPID): PES packet does not start with 00 00 01")
            }
            let flags = pesHeader[7] >> 6
            guard flags & 2 != 0, Int(pesHeader[8]) >= (flags == 3 ? 10 : 5) else {
                pendingCut = nil  // no timestamp: not a place to cut
                return
            }
            let timeAt = flags == 3 ? 14 : 9
            guard pesBytesSeen >= timeAt + 5 else { return }
            pendingTime =
                Int64(pesHeader[timeAt] >> 1 & 7) << 30 | Int64(pesHeader[timeAt + 1]) << 22
                | Int64(pesHeader[timeAt + 2] >> 1) << 15 | Int64(pesHeader[timeAt + 3]) << 7
                | Int64(pesHeader[timeAt + 4] >> 1)
            pendingHeaderLength = 9 + Int(pesHeader[8])
            tailCount = 0
            if !accessUnitIsVideo || pendingRandomAccess {
                decidePending(independent: true, cuts: &cuts)
                return
            }
        }
        let elementaryStart = max(0, pendingHeaderLength - before)
        guard elementaryStart < payload.count else { return }
        let elementary = UnsafeRawBufferPointer(rebasing: payload[elementaryStart...])
        if tailCount > 0 {
            // A start code that began in the previous packet.
            let next = min(3, elementary.count)
            for index in 0..<tailCount { window[index] = tail[index] }
            for index in 0..<next { window[tailCount + index] = elementary[index] }
            let found = window.withUnsafeBytes {
                NALUnits.firstSliceIsRandomAccess(
                    in: UnsafeRawBufferPointer(rebasing: $0[0..<(tailCount + next)]), hevc: hevc)
            }
            if let found {
                decidePending(independent: found, cuts: &cuts)
                return
            }
        }
        if let found = NALUnits.firstSliceIsRandomAccess(in: elementary, hevc: hevc) {
            decidePending(independent: found, cuts: &cuts)
            return
        }
        // Keep the last 3 bytes of what was seen.
        let keep = min(3, tailCount + elementary.count)
        let fromTail = keep - min(keep, elementary.count)
        for index in 0..<fromTail { tail[index] = tail[tailCount - fromTail + index] }
        for index in 0..<(keep - fromTail) {
            tail[fromTail + index] = elementary[elementary.count - (keep - fromTail) + index]
        }
        tailCount = keep
    }

    private mutating func decidePending(independent: Bool, cuts: inout [CutPoint]) {
        guard let offset = pendingCut, let time = pendingTime else { return }
        pendingCut = nil
        pendingTime = nil
        decide(offset: offset, time: time, independent: independent, cuts: &cuts)
    }

    private mutating func decide(offset: Int, time raw: Int64, independent: Bool, cuts: inout [CutPoint]) {
        guard let last = lastTime else {
            lastTime = raw
            partStartTime = raw
            cuts.append(CutPoint(offset: 0, decodeTime: raw, independent: independent))
            return
        }
        let time = MPEGTimestamp.unwrap(raw, near: last)
        spacings[spacingCount % spacings.count] = time - last
        spacingCount += 1
        lastTime = time
        let frame = max(0, medianSpacing())
        let span = time - partStartTime
        // A video keyframe starts a part unless the part it closes would be too short; audio-only access units are
        // all independent and cut by length alone.
        let atKeyframe =
            independent && accessUnitIsVideo && closesLongEnoughPart(span: span, target: partTargetTicks)
        if atKeyframe || span + frame > partTargetTicks {
            partStartTime = time
            cuts.append(CutPoint(offset: offset, decodeTime: raw, independent: independent))
        }
    }

    /// The median of the latest spacings (the lower middle one of an even count), without allocating.
    private func medianSpacing() -> Int64 {
        let count = min(spacingCount, spacings.count)
        let middle = (count - 1) / 2
        for candidate in 0..<count {
            var below = 0
            var equal = 0
            for other in 0..<count {
                if spacings[other] < spacings[candidate] {
                    below += 1
                } else if spacings[other] == spacings[candidate] {
                    equal += 1
                }
            }
            if below <= middle, middle < below + equal { return spacings[candidate] }
        }
        return 0
    }

    /// The PAT's packets until it is read (its section may span packets): the first program's PMT PID.
    private mutating func readProgramAssociation(_ payload: UnsafeRawBufferPointer, unitStart: Bool) {
        var found: Int?
        tables.consume(payload, unitStart: unitStart) { section in
            // No CRC check: the segment probe checks it when the push ends; the cutter only finds the PIDs.
            guard found == nil, section[0] == 0x00 else { return }
            found = try? ProgramTables.programMapPID(section)
        }
        if let found {
            pmtPID = found
            tables.reset()
        }
    }

    /// The PMT's packets until it is read: the first video stream, else the first audio stream, is cut at.
    private mutating func readProgramMap(_ payload: UnsafeRawBufferPointer, unitStart: Bool) {
        var streams: [ProgramTables.Stream]?
        tables.consume(payload, unitStart: unitStart) { section in
            guard streams == nil, section[0] == 0x02 else { return }
            streams = try? ProgramTables.programMap(section).streams
        }
        guard let streams else { return }
        tables.reset()
        if let video = streams.first(where: { $0.streamType == 0x1B || $0.streamType == 0x24 }) {
            accessUnitPID = video.pid
            accessUnitIsVideo = true
            hevc = video.streamType == 0x24
            return
        }
        let audioTypes: [UInt8] = [0x0F, 0x03, 0x04, 0x11, 0x81, 0x87, 0x06]
        accessUnitPID = streams.first { audioTypes.contains($0.streamType) }?.pid ?? -1
    }
}

/// Cuts fMP4 at `moof` boxes (with any `styp`/`prft`/`emsg`/`sidx` before them), grouping fragments shorter than
/// the target: a fragment starts a new part when adding it would make the part longer than the target, or when it
/// starts with a sync sample (video) and the part it closes is at least 85 % of the target (HLS rule 38; a sync
/// sample sooner stays inside the part, which is then not INDEPENDENT). Times and sync flags come from the first
/// track fragment of the video track (the audio track for audio-only renditions).
public struct FragmentCutter: SegmentCutter {
    public let timescale: Int64
    public var settledOffset: Int {
        var settled = position
        if let leadStart { settled = min(settled, leadStart) }
        if headerCount > 0 { settled = min(settled, position - headerCount) }
        if boxBuffered { settled = min(settled, boxStart) }
        return settled
    }

    private let initSection: InitSectionInfo
    private let trackID: Int
    private let isVideo: Bool
    private let partTargetTicks: Int64
    /// Bytes consumed so far.
    private var position = 0
    /// The header of the next top-level box while it arrives (at most 16 bytes).
    private var header: [UInt8]
    private var headerCount = 0
    private var boxStart = 0
    /// One past the current box; `Int.max` for a last `mdat` of size 0.
    private var boxEnd = 0
    private var boxType: UInt32 = 0
    /// The current box is kept whole (a `moof`) in `moof`.
    private var boxBuffered = false
    private var moof: [UInt8] = []
    /// First of the `styp`/`prft`/`emsg`/`sidx` boxes directly before the next box.
    private var leadStart: Int?
    private var partStartTime: Int64?

    /// The most bytes a `moof` box may have.
    static let maximumMoofSize = 16 << 20

    /// - Parameters:
    ///   - initSection: the rendition's initialization section (track timescales and sample defaults).
    ///   - partTarget: the channel's PART-TARGET.
    public init(initSection: InitSectionInfo, partTarget: MediaTime) {
        self.initSection = initSection
        let primary =
            initSection.tracks.first { $0.kind == .video } ?? initSection.tracks.first { $0.kind == .audio }
            ?? initSection.tracks.first
        trackID = primary?.trackID ?? 1
        isVideo = primary?.kind == .video
        timescale = max(1, primary?.timescale ?? 90_000)
        partTargetTicks = Self.rescaled(partTarget, to: timescale)
        header = [UInt8](repeating: 0, count: 16)
    }

    /// `time` in ticks of `timescale`, rounded down, clamped to Int64 (a PART-TARGET in a track timescale of up to
    /// 2^32 - 1 must not overflow); 0 for a time without a positive timescale.
    static func rescaled(_ time: MediaTime, to timescale: Int64) -> Int64 {
        guard time.timescale > 0 else { return 0 }
        return MediaTime.rescale(time.ticks, from: time.timescale, to: timescale, nearest: false)
    }

    private static let moofType = code("moof")
    private static let leadTypes: [UInt32] = ["styp", "prft", "emsg", "sidx"].map { code($0) }
    private static let otherTypes: [UInt32] = ["mdat", "free", "skip", "uuid", "ssix", "meta", "ftyp", "moov"].map {
        code($0)
    }
    private static func code(_ text: String) -> UInt32 { text.utf8.reduce(0) { $0 << 8 | UInt32($1) } }

    public mutating func consume(_ bytes: UnsafeRawBufferPointer) throws(ProbeError) -> [CutPoint] {
        var cuts: [CutPoint] = []
        var index = 0
        while index < bytes.count {
            if position < boxEnd {
                let take = boxEnd == .max ? bytes.count - index : min(boxEnd - position, bytes.count - index)
                if boxBuffered {
                    moof.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[index..<(index + take)]))
                }
                index += take
                position += take
                if position == boxEnd, boxBuffered {
                    boxBuffered = false
                    try readFragment(cuts: &cuts)
                }
                continue
            }
            // A box header: 8 bytes, 16 with a largesize.
            header[headerCount] = bytes[index]
            headerCount += 1
            index += 1
            position += 1
            if headerCount == 8 || headerCount == 16 { try startBox() }
        }
        return cuts
    }

    private mutating func startBox() throws(ProbeError) {
        let size32 = header[0..<4].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        if size32 == 1, headerCount == 8 { return }  // the largesize follows
        let start = position - headerCount
        let type = header[4..<8].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let typeName = String(decoding: header[4..<8], as: UTF8.self)
        let size = size32 == 1 ? header[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } : size32
        let isMoof = type == Self.moofType
        let isLead = Self.leadTypes.contains(type)
        guard isMoof || isLead || Self.otherTypes.contains(type) else {
            throw ProbeError(
                "fMP4 segment: unexpected top-level box '\(typeName.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 ? String($0) : "?" }.joined())' at byte \(start) "
                    + "(expected styp, moof, mdat, ...)")
        }
        guard size == 0 ? type == Self.code("mdat") : size >= UInt64(headerCount) else {
            throw ProbeError("fMP4 segment: box '\(typeName)' at byte \(start) has size \(size), too small")
        }
        guard !isMoof || size <= UInt64(Self.maximumMoofSize) else {
            throw ProbeError("fMP4 segment: moof at byte \(start) declares \(size) bytes, more than 16 MiB")
        }
        boxStart = start
        boxEnd = size == 0 ? .max : size > UInt64(Int.max / 2) ? .max : start + Int(size)
        boxType = type
        headerCount = 0
        if isMoof {
            if leadStart == nil { leadStart = start }
            boxBuffered = true
            moof.removeAll(keepingCapacity: true)
            moof.append(contentsOf: header[0..<(position - start)])
        } else if isLead {
            if leadStart == nil { leadStart = start }
        } else {
            leadStart = nil
        }
    }

    /// A complete `moof`: its fragment's decode time, duration and first sample's sync flag decide the cut.
    private mutating func readFragment(cuts: inout [CutPoint]) throws(ProbeError) {
        let fragmentStart = leadStart ?? boxStart
        leadStart = nil
        let facts = moof.withUnsafeBytes { buffer in
            Result { () throws(ProbeError) in try Self.fragmentFacts(buffer, trackID: trackID, initSection: initSection)
            }
        }
        guard let (time, duration, sync) = try facts.get() else { return }  // no fragment of the cut track
        let independent = !isVideo || sync
        guard let start = partStartTime else {
            partStartTime = time
            cuts.append(CutPoint(offset: 0, decodeTime: time, independent: independent))
            return
        }
        // time and start are at most 2^62 (tfdt), duration at most Int64.max: a sum past 64 bits is past the target.
        let (span, overflow) = (time - start).addingReportingOverflow(duration)
        let atSync = isVideo && sync && closesLongEnoughPart(span: time - start, target: partTargetTicks)
        if atSync || overflow || span > partTargetTicks {
            partStartTime = time
            cuts.append(CutPoint(offset: fragmentStart, decodeTime: time, independent: independent))
        }
    }

    /// The cut track's decode time (tfdt), duration and first-sample sync flag in a moof; nil when it has no traf of
    /// that track.
    static func fragmentFacts(
        _ bytes: UnsafeRawBufferPointer, trackID: Int, initSection: InitSectionInfo
    ) throws(ProbeError) -> (time: Int64, duration: Int64, sync: Bool)? {
        let moofBox = try MP4Box.children(of: 0..<bytes.count, in: bytes, context: "fMP4 moof")[0]
        for traf in try moofBox.children(in: bytes) where traf.type == "traf" {
            let children = try traf.children(in: bytes)
            var tfhd = try children.required("tfhd", in: "traf").reader(bytes)
            let tfhdFlags = try tfhd.readUInt32() & 0xFF_FFFF
            guard Int(try tfhd.readUInt32()) == trackID else { continue }
            let trex = initSection.fragmentDefaults[trackID]
            if tfhdFlags & 0x01 != 0 { try tfhd.skip(8) }
            if tfhdFlags & 0x02 != 0 { try tfhd.skip(4) }
            let defaultDuration = tfhdFlags & 0x08 != 0 ? try tfhd.readUInt32() : trex?.sampleDuration ?? 0
            if tfhdFlags & 0x10 != 0 { try tfhd.skip(4) }
            let defaultFlags = tfhdFlags & 0x20 != 0 ? try tfhd.readUInt32() : trex?.sampleFlags
            guard let tfdt = children.first("tfdt") else {
                throw ProbeError("fMP4 segment: track \(trackID) traf has no tfdt box (baseMediaDecodeTime)")
            }
            var reader = tfdt.reader(bytes)
            let version = try reader.readUInt8()
            try reader.skip(3)
            let time = version == 1 ? try reader.readUInt64() : UInt64(try reader.readUInt32())
            guard time <= UInt64(1) << 62 else {
                throw ProbeError("fMP4 segment: track \(trackID) tfdt baseMediaDecodeTime \(time) is out of range")
            }
            var duration: Int64 = 0
            var firstFlags: UInt32?
            var sawSample = false
            let overflow = ProbeError.implausibleTiming(
                "fMP4 segment: track \(trackID) fragment durations overflow 64 bits")
            /// Adds `count` samples of `each` ticks to the fragment's duration, refusing a sum past 64 bits.
            func add(_ each: Int64, times count: Int64) throws(ProbeError) {
                let (product, productOverflow) = each.multipliedReportingOverflow(by: count)
                let (sum, sumOverflow) = duration.addingReportingOverflow(product)
                guard !productOverflow, !sumOverflow else { throw overflow }
                duration = sum
            }
            for trun in children where trun.type == "trun" {
                var run = trun.reader(bytes)
                try run.skip(1)
                let flags = try run.readUInt24()
                let count = Int64(try run.readUInt32())
                if flags & 0x01 != 0 { try run.skip(4) }
                let firstSampleFlags = flags & 0x04 != 0 ? try run.readUInt32() : nil
                let hasDuration = flags & 0x100 != 0
                let recordSize = 4 * [0x100, 0x200, 0x400, 0x800].filter { flags & $0 != 0 }.count
                guard count * Int64(recordSize) <= Int64(run.remaining) else {
                    throw ProbeError("fMP4 segment: track \(trackID) trun declares more samples than it holds")
                }
                for index in 0..<count {
                    if !hasDuration, recordSize == 0 || index > 0 {
                        try add(Int64(defaultDuration), times: recordSize == 0 ? count : count - index)
                        if !sawSample { firstFlags = firstSampleFlags ?? defaultFlags }
                        sawSample = true
                        break
                    }
                    let sampleDuration = hasDuration ? Int64(try run.readUInt32()) : Int64(defaultDuration)
                    if flags & 0x200 != 0 { try run.skip(4) }
                    let sampleFlags = flags & 0x400 != 0 ? try run.readUInt32() : nil
                    if flags & 0x800 != 0 { try run.skip(4) }
                    if !sawSample { firstFlags = firstSampleFlags ?? sampleFlags ?? defaultFlags }
                    sawSample = true
                    try add(sampleDuration, times: 1)
                }
            }
            return (Int64(time), duration, FragmentedMP4SegmentProbe.isSync(firstFlags))
        }
        return nil
    }
}
