package import MediaProbe
package import SharedBytes

/// The parts of one streamed push: body bytes in (any split), parts out; the finished segment is exactly the
/// parts' bytes. One per push, used outside any lock.
///
/// The cutter is chosen from the first bytes: 0x47 is MPEG-TS (`TransportStreamCutter`); a top-level box is fMP4
/// (`FragmentCutter`, which needs the rendition's init section). The body is kept in one growing buffer; the bytes
/// of a part are copied out of it once as they settle (`PartEvent.bytes`) and once when the part completes, and the
/// whole segment once at the end.
package struct PartAssembler: Sendable {
    private let partTarget: MediaTime
    private let initSection: InitSectionInfo?
    private let limit: Int
    private var cutter: (any SegmentCutter)?
    private var body: [UInt8] = []
    /// The latest cut: where the part in progress starts.
    private var partStart: CutPoint?
    private var partIndex = 0
    /// Bytes reported as `.bytes` (or in a completed part) so far.
    private var reported = 0
    /// Durations of the completed parts, in the cutter's timescale.
    private var completedTicks: Int64 = 0
    private var failure: IngestError?

    /// - Parameters:
    ///   - partTarget: the channel's PART-TARGET.
    ///   - initSection: the rendition's current initialization section (fMP4 pushes); nil for MPEG-TS.
    ///   - limit: the most bytes a segment may have (`tooLarge` beyond).
    package init(partTarget: MediaTime, initSection: InitSectionInfo?, limit: Int) {
        self.partTarget = partTarget
        self.initSection = initSection
        self.limit = limit
        body.reserveCapacity(min(limit, 1 << 20))
    }

    /// Feeds the next bytes of the body: the settled bytes of the part in progress and the parts completed by them,
    /// in order; an error when the bytes are not media the cutter can read (nothing more is accepted then).
    package mutating func receive(_ piece: UnsafeRawBufferPointer) -> Result<[PartEvent], IngestError> {
        if let failure { return .failure(failure) }
        guard body.count + piece.count <= limit else { return fail(.tooLarge(body.count + piece.count, limit: limit)) }
        let fed = body.count
        body.append(contentsOf: piece)
        if cutter == nil {
            switch chooseCutter() {
            case .failure(let error): return fail(error)
            case .success(let chosen):
                guard let chosen else { return .success([]) }  // too few bytes to tell yet
                cutter = chosen
            }
            return feed(from: 0)
        }
        return feed(from: fed)
    }

    /// The body is complete: the last part (nil when the body ended exactly at a cut, i.e. it was empty), the whole
    /// segment (the parts' bytes concatenated) and its probe.
    ///
    /// The probe is `MediaProbe.probeSegment` on the whole segment: the bytes are read once more (codecs, captions,
    /// keyframe ranges and the duration of the last part come from it), which costs far less than receiving them.
    package mutating func finish() -> Result<(last: CutPart?, segment: SharedBytes, info: SegmentInfo), IngestError> {
        if let failure { return .failure(failure) }
        guard !body.isEmpty else { return fail(.notMedia("empty body")) }
        guard cutter != nil else {
            return fail(.notMedia("the body is too short to be a media segment (\(body.count) bytes)"))
        }
        let probed = body.withUnsafeBytes { raw in
            Result { () throws(ProbeError) in try MediaProbe.probeSegment(raw, initSection: initSection) }
        }
        let info: SegmentInfo
        switch probed {
        case .success(let value): info = value
        case .failure(let error): return fail(.probeFailed("invalid media segment", error))
        }
        let segment = SharedBytes(body)
        let timescale = cutter!.timescale
        let start =
            partStart
            ?? CutPoint(
                offset: 0, decodeTime: Self.ticks(info.startTime, in: timescale), independent: info.startsWithKeyframe)
        guard start.offset < body.count else { return .success((nil, segment, info)) }
        let total = Self.ticks(info.duration, in: timescale)
        let primary = info.tracks.first { $0.kind == .video } ?? info.tracks.first
        // A frame rate read from the stream may be any positive number (or none): one frame in [1, timescale] ticks.
        let frame = primary?.frameRate.flatMap { rate -> Int64? in
            let ticks = Double(timescale) / rate
            return ticks.isFinite && ticks >= 1 ? Int64(min(ticks, Double(timescale)).rounded()) : nil
        } ?? 1
        let (rest, overflow) = total.subtractingReportingOverflow(completedTicks)
        let last = CutPart(
            index: partIndex,
            bytes: body.withUnsafeBytes { SharedBytes(copying: UnsafeRawBufferPointer(rebasing: $0[start.offset...])) },
            decodeTime: MediaTime(ticks: start.decodeTime, timescale: timescale),
            durationTicks: overflow ? (rest < 0 ? .max : .min) : max(rest, frame), independent: start.independent)
        return .success((last, segment, info))
    }

    /// The parts completed so far.
    package var completedParts: Int { partStart == nil ? 0 : partIndex }

    /// Before `finish`: leaves out of the body the MPEG-TS packets at `offsets` (ascending byte offsets of 188-byte
    /// packets: a continuous input's PES packets cut short where its stream ended) that lie in the part in
    /// progress; those in parts already cut stay. Returns true when some of them were reported already
    /// (`PartEvent.bytes`): the part's watchers heard bytes it no longer has.
    package mutating func leaveOut(packetsAt offsets: [Int]) -> Bool {
        let from = partStart?.offset ?? 0
        let left = offsets.filter { $0 >= from && $0 < body.count }
        guard failure == nil, let first = left.first else { return false }
        body = body.withUnsafeBytes { TransportStreamPackets.removing(packetsAt: left, from: $0) }
        let heard = first < reported
        reported = min(reported, first)
        return heard
    }

    private mutating func fail(_ error: IngestError) -> Result<[PartEvent], IngestError> {
        failure = error
        return .failure(error)
    }

    private mutating func fail(
        _ error: IngestError
    ) -> Result<(last: CutPart?, segment: SharedBytes, info: SegmentInfo), IngestError> {
        failure = error
        return .failure(error)
    }

    /// The cutter for the body's first bytes; nil while too few have arrived to tell.
    private func chooseCutter() -> Result<(any SegmentCutter)?, IngestError> {
        if body[0] == 0x47 { return .success(TransportStreamCutter(partTarget: partTarget)) }
        guard body.count >= 8 else { return .success(nil) }
        let type = String(decoding: body[4..<8], as: UTF8.self)
        let boxTypes: Set<String> = ["styp", "moof", "sidx", "prft", "emsg", "ftyp", "moov", "free"]
        guard boxTypes.contains(type) else {
            let prefix = body.prefix(8).map { String($0, radix: 16) }.joined(separator: " ")
            return .failure(
                .notMedia(
                    "a streamed part push must be MPEG-TS (sync byte 0x47) or fMP4 (styp/moof); first bytes: \(prefix)"
                ))
        }
        guard let initSection else {
            return .failure(.unprocessable("fMP4 segment before any initialization section: push init.mp4 first"))
        }
        return .success(FragmentCutter(initSection: initSection, partTarget: partTarget))
    }

    /// Runs the cutter over `body[from...]` and turns its cuts and settled offset into events.
    private mutating func feed(from: Int) -> Result<[PartEvent], IngestError> {
        var cutter = self.cutter!
        self.cutter = nil
        let result = body.withUnsafeBytes { raw in
            Result { () throws(ProbeError) in try cutter.consume(UnsafeRawBufferPointer(rebasing: raw[from...])) }
        }
        let settled = cutter.settledOffset
        let timescale = cutter.timescale
        self.cutter = cutter
        let cuts: [CutPoint]
        switch result {
        case .success(let value): cuts = value
        case .failure(let error): return fail(.probeFailed("invalid media segment", error))
        }
        var events: [PartEvent] = []
        for cut in cuts {
            guard let start = partStart else {
                partStart = cut
                continue
            }
            if reported < cut.offset { events.append(.bytes(part: partIndex, slice(reported..<cut.offset))) }
            // Decode times are at most 2^62 (fMP4 tfdt) or 33 bits (MPEG-TS): the difference fits; the channel
            // refuses a part whose duration no stream has (negative, or longer than a segment may be).
            var duration = cut.decodeTime - start.decodeTime
            if cutter is TransportStreamCutter {
                duration = MPEGTimestamp.unwrap(cut.decodeTime, near: start.decodeTime) - start.decodeTime
            }
            events.append(
                .completed(
                    CutPart(
                        index: partIndex, bytes: slice(start.offset..<cut.offset),
                        decodeTime: MediaTime(ticks: start.decodeTime, timescale: timescale), durationTicks: duration,
                        independent: start.independent)))
            completedTicks &+= duration  // bounded: the durations telescope to the last cut's time minus the first's
            reported = cut.offset
            partIndex += 1
            partStart = cut
        }
        if settled > reported {
            events.append(.bytes(part: partIndex, slice(reported..<settled)))
            reported = settled
        }
        return .success(events)
    }

    private func slice(_ range: Range<Int>) -> SharedBytes {
        body.withUnsafeBytes { SharedBytes(copying: UnsafeRawBufferPointer(rebasing: $0[range])) }
    }

    private static func ticks(_ time: MediaTime, in timescale: Int64) -> Int64 {
        MediaTime.rescale(time.ticks, from: time.timescale, to: timescale, nearest: false)
    }
}
