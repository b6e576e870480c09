/// Probes an MPEG-TS media segment: PAT -> PMT -> PES packets per elementary stream -> PTS, codecs, keyframe.
enum TransportStreamProbe {
    static func probe(_ bytes: UnsafeRawBufferPointer) throws(ProbeError) -> SegmentInfo {
        let size = TransportStreamPacket.size
        guard bytes.count >= size else {
            throw ProbeError("not an MPEG-TS segment: \(bytes.count) bytes is shorter than one 188-byte packet")
        }
        guard bytes.count % size == 0 else {
            throw ProbeError(
                "MPEG-TS segment is truncated: \(bytes.count) bytes is not a whole number of 188-byte packets "
                    + "(\(bytes.count % size) bytes left over)")
        }
        var packets: [TransportStreamPacket] = []
        packets.reserveCapacity(bytes.count / size)
        for index in 0..<(bytes.count / size) {
            packets.append(try TransportStreamPacket(bytes, at: index * size, index: index))
        }
        let tables = try ProgramTables(bytes, packets: packets)
        var streams = tables.streams.map { table in
            var stream = ElementaryStreamState(pid: table.pid, streamType: table.payloadType)
            stream.dolbyVision = table.dolbyVision
            return stream
        }
        // The PIDs whose PES packets are read, each with the first stream of that PID. A segment has a handful: a
        // linear search per packet is cheaper than hashing the PID of every packet.
        var trackedPIDs: [Int] = []
        var trackedStreams: [Int] = []
        for (index, stream) in streams.enumerated() where stream.kind != .data && !trackedPIDs.contains(stream.pid) {
            trackedPIDs.append(stream.pid)
            trackedStreams.append(index)
        }

        var spliceSections = SpliceSectionCollector(streams: tables.streams)
        var pending = [[UInt8]?](repeating: nil, count: trackedPIDs.count)
        var pendingRuns = [ElementaryStreamState.PacketRun](
            repeating: .init(start: 0, end: 0, followsProgramTables: false), count: trackedPIDs.count)
        // Per tracked PID: a PAT then a PMT came since its last PES started.
        var tablesSincePES = [Bool](repeating: false, count: trackedPIDs.count)
        var patSeen = false
        var referencePTS: Int64?
        func finish(_ pes: [UInt8], tracked: Int) throws(ProbeError) {
            let index = trackedStreams[tracked]
            let parsed = try PESHeader(pes, pid: trackedPIDs[tracked])
            var pts: Int64?
            if let raw = parsed.pts {
                let reference = referencePTS ?? raw
                referencePTS = reference
                pts = MPEGTimestamp.unwrap(raw, near: reference)
            }
            pes.withUnsafeBytes { buffer in
                streams[index].consume(
                    payload: UnsafeRawBufferPointer(rebasing: buffer[parsed.payloadStart..<parsed.payloadEnd]),
                    pts: pts, packets: pendingRuns[tracked])
            }
        }
        for (index, packet) in packets.enumerated() {
            guard let tracked = trackedPIDs.firstIndex(of: packet.pid) else {
                if let cue = spliceSections.pids.firstIndex(of: packet.pid) {
                    spliceSections.consume(
                        UnsafeRawBufferPointer(rebasing: bytes[packet.payload]), unitStart: packet.payloadUnitStart,
                        index: cue)
                } else if packet.pid == 0 {
                    patSeen = true
                } else if packet.pid == tables.pmtPID, patSeen {
                    patSeen = false
                    for other in tablesSincePES.indices { tablesSincePES[other] = true }
                }
                continue
            }
            let payload = UnsafeRawBufferPointer(rebasing: bytes[packet.payload])
            let packetEnd = (index + 1) * size
            if packet.payloadUnitStart {
                if let previous = pending[tracked] { try finish(previous, tracked: tracked) }
                pending[tracked] = Array(payload)
                pendingRuns[tracked] = ElementaryStreamState.PacketRun(
                    start: index * size, end: packetEnd, followsProgramTables: tablesSincePES[tracked])
                tablesSincePES[tracked] = false
            } else if pending[tracked] != nil {
                pending[tracked]!.append(contentsOf: payload)
                pendingRuns[tracked].end = packetEnd
            }
        }
        // What is left, by ascending PID.
        for tracked in trackedPIDs.indices.sorted(by: { trackedPIDs[$0] < trackedPIDs[$1] }) {
            if let pes = pending[tracked] { try finish(pes, tracked: tracked) }
        }

        let primary =
            streams.first { $0.kind == .video && !$0.presentationTimes.isEmpty }
            ?? streams.first { $0.kind == .audio && !$0.presentationTimes.isEmpty }
        guard let primary, let lowest = primary.presentationTimes.min(),
            let highest = primary.presentationTimes.max()
        else {
            throw ProbeError(
                "MPEG-TS: no video or audio PES found (PMT on PID \(tables.pmtPID) lists stream types "
                    + "\(tables.streams.map { "0x" + ADTSHeader.hex($0.streamType) }.joined(separator: ", ")))")
        }
        let lastDuration: Int64
        if primary.kind == .video {
            if let delta = primary.typicalFrameDelta {
                lastDuration = delta
            } else if let rate = primary.frameRate, rate > 0 {
                lastDuration = Int64((90000 / rate).rounded())
            } else {
                lastDuration = 0
            }
        } else if let last = primary.lastAudioPES, let rate = primary.sampleRate {
            lastDuration = (Int64(last.samples) * 90000 + Int64(rate / 2)) / Int64(rate) + (last.pts - highest)
        } else {
            lastDuration = primary.typicalFrameDelta ?? 0
        }
        let start = MPEGTimestamp.wrapped(lowest)
        let hasVideo = streams.contains { $0.kind == .video }
        var info = SegmentInfo(
            container: .mpegTS, tracks: streams.map(\.trackInfo),
            startTime: MediaTime(ticks: start, timescale: 90000),
            duration: MediaTime(ticks: highest + lastDuration - lowest, timescale: 90000),
            startsWithKeyframe: hasVideo ? primary.kind == .video && primary.firstPESIsKeyframe : true,
            startsWithPATAndPMT: packets.count >= 2 && packets[0].pid == 0 && packets[1].pid == tables.pmtPID,
            byteCount: bytes.count)
        spliceSections.finish()
        info.spliceSections = spliceSections.sections
        if primary.kind == .video {
            var captions = primary.captions
            info.closedCaptions = captions.finish()
            info.keyframes = primary.keyframes
        }
        return info
    }
}

/// The header of one reassembled PES packet (ISO/IEC 13818-1 2.4.3.6).
struct PESHeader {
    var pts: Int64?
    /// The DTS when the header carries one (PTS_DTS_flags 11), else nil.
    var dts: Int64?
    var payloadStart: Int
    var payloadEnd: Int

    init(_ pes: [UInt8], pid: Int) throws(ProbeError) {
        guard pes.count >= 6, pes[0] == 0, pes[1] == 0, pes[2] == 1 else {
            throw ProbeError("MPEG-TS PID \(pid): PES packet does not start with 00 00 01")
        }
        let streamID = pes[3]
        let declaredLength = Int(pes[4]) << 8 | Int(pes[5])
        payloadEnd = declaredLength == 0 ? pes.count : min(pes.count, 6 + declaredLength)
        let withoutHeader: Set<UInt8> = [0xBC, 0xBE, 0xBF, 0xF0, 0xF1, 0xF2, 0xF8, 0xFF]
        guard !withoutHeader.contains(streamID) else {
            pts = nil
            payloadStart = 6
            return
        }
        guard pes.count >= 9 else { throw ProbeError("MPEG-TS PID \(pid): PES header is cut off") }
        let ptsDTSFlags = pes[7] >> 6
        let headerDataLength = Int(pes[8])
        payloadStart = 9 + headerDataLength
        guard payloadStart <= payloadEnd else {
            throw ProbeError(
                "MPEG-TS PID \(pid): PES_header_data_length \(headerDataLength) runs past the PES packet end")
        }
        if ptsDTSFlags & 2 != 0 {
            guard headerDataLength >= 5 else {
                throw ProbeError("MPEG-TS PID \(pid): PES header too short for its PTS")
            }
            pts = Self.timestamp(pes, at: 9)
            if ptsDTSFlags == 3, headerDataLength >= 10 { dts = Self.timestamp(pes, at: 14) }
        } else {
            pts = nil
        }
    }

    /// The 33-bit timestamp in the five bytes at `offset` (the caller checked they are there).
    private static func timestamp(_ pes: [UInt8], at offset: Int) -> Int64 {
        Int64(pes[offset] >> 1 & 7) << 30 | Int64(pes[offset + 1]) << 22 | Int64(pes[offset + 2] >> 1) << 15
            | Int64(pes[offset + 3]) << 7 | Int64(pes[offset + 4] >> 1)
    }
}
