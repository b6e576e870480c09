@testable import HLSPackaging
import HLSPlaylist
import Markers
import MediaProbe
import SharedBytes
import TestSource
import Testing

@testable import LiveTimeline

/// A Low-Latency channel's ingest loop on a manual clock, fed with parts cut from real MPEG-TS segments of the test
/// source (at every 10th video frame: 0.4 s at 25 fps), as a streamed push delivers them.
struct LowLatencyChannel {
    /// 2026-11-24T01:00:00.000Z.
    static let start: Int64 = 1_795_482_000_000

    var state: ChannelState
    var snapshot: ChannelSnapshot
    var generators: [String: TestStreamGenerator] = [:]
    var now: Int64
    /// Open pushes by rendition, with the parts still to list.
    var pushes: [String: (ticket: OpenSegmentTicket?, parts: [CutPart], all: [CutPart], segment: SharedBytes)] = [:]
    /// Every segment closed, by rendition and MSN, with the parts it was cut into.
    var closedSegments: [String: [UInt64: (bytes: SharedBytes, parts: [CutPart])]] = [:]
    let name: String
    /// Store records of every step (the channel keeps store records when `store.keepsRecords` is set).
    var storeRecords: [StoreRecord] = []
    /// The channel's date ranges, overlaid on every rendition.
    var markers = MarkerBook()
    /// Every snapshot published of the renditions named here, oldest first.
    var history: [String: [RenditionSnapshot]] = [:]

    init(
        name: String = "sport", renditions: [String] = ["720p", "360p", "audio"], window: WindowLength = .segments(8),
        partTarget: Double = 0.4, firstMSN: UInt64 = 1000, startMilliseconds: Int64 = Self.start,
        cueTags: CueTagMode = .daterange
    ) throws {
        self.name = name
        var configuration = ChannelConfiguration(name: name, renditions: renditions.map { .init(name: $0) })
        configuration.window = window
        configuration.lowLatency = LowLatencyConfiguration(partTarget: partTarget)
        configuration.cueTags = cueTags
        state = ChannelState(configuration: configuration, firstMSN: firstMSN)
        for rendition in renditions { state.addRendition(rendition) }
        now = startMilliseconds
        snapshot = ChannelSnapshot(
            name: name, version: 0, multivariantPlaylist: nil, multivariantModifiedMilliseconds: 0, renditions: [:])
        for rendition in renditions {
            let profile = rendition == "180p" ? "180p" : "360p"
            generators[rendition] = try TestStreamGenerator(
                profile: TestSourceProfile.named(profile)!, segmentDuration: 2)
        }
    }

    /// Cuts a generated segment before every `framesPerPart`-th video frame (the PAT/PMT before the first one stay
    /// in the first part).
    static func cut(_ segment: GeneratedSegment, framesPerPart: Int = 10) -> [CutPart] {
        let bytes = segment.bytes
        var frameStarts: [Int] = []
        var offset = 0
        while offset + 188 <= bytes.count {
            let unitStart = bytes[offset + 1] & 0x40 != 0
            let control = (bytes[offset + 3] >> 4) & 0x3
            var payload = offset + 4
            if control & 0x2 != 0 { payload += 1 + Int(bytes[offset + 4]) }
            if unitStart, control & 0x1 != 0, payload + 4 <= offset + 188, bytes[payload] == 0, bytes[payload + 1] == 0,
                bytes[payload + 2] == 1, bytes[payload + 3] & 0xF0 == 0xE0
            {
                frameStarts.append(offset)
            }
            offset += 188
        }
        let frames = frameStarts.count
        let firstFrames = Array(stride(from: 0, to: frames, by: framesPerPart))
        let frameTicks = segment.durationTicks / Int64(max(frames, 1))
        return firstFrames.enumerated().map { index, frame in
            let from = index == 0 ? 0 : frameStarts[frame]
            let nextFrame = index + 1 < firstFrames.count ? firstFrames[index + 1] : frames
            let to = index + 1 < firstFrames.count ? frameStarts[nextFrame] : bytes.count
            return CutPart(
                index: index, bytes: SharedBytes(bytes[from..<to]),
                decodeTime: MediaTime(ticks: segment.startPTS + Int64(frame) * frameTicks, timescale: 90_000),
                durationTicks: Int64(nextFrame - frame) * frameTicks, independent: frame % 25 == 0)
        }
    }

    mutating func publish() {
        snapshot = HLSPackager.render(state, name: name, previous: snapshot, nowMilliseconds: now, markers: markers)
        for (rendition, published) in history {
            guard let newest = snapshot.renditions[rendition], newest.version != published.last?.version else {
                continue
            }
            history[rendition]!.append(newest)
        }
    }

    /// Lets `milliseconds` pass, ticks, and publishes what changed.
    mutating func advance(_ milliseconds: Int64) {
        now += milliseconds
        let actions = state.tick(nowMilliseconds: now)
        storeRecords += actions.storeRecords
        if actions.publish { publish() }
    }

    /// Starts a push of the rendition's next generated segment (its first part is listed at the next `step`).
    mutating func begin(_ rendition: String) {
        let segment = generators[rendition]!.nextSegment()
        let parts = Self.cut(segment)
        pushes[rendition] = (nil, parts, parts, SharedBytes(segment.bytes))
    }

    /// Drops the rendition's next generated segment (an encoder outage: the media is lost).
    mutating func lose(_ rendition: String) { _ = generators[rendition]!.nextSegment() }

    /// The next part of the rendition's push is cut: opened at the first, listed, and the segment closed after its
    /// last part. Returns the error a step refused with.
    @discardableResult
    mutating func step(_ rendition: String) -> IngestError? {
        guard var push = pushes[rendition], !push.parts.isEmpty else { return nil }
        let part = push.parts.removeFirst()
        if push.ticket == nil {
            switch state.openSegment(rendition: rendition, firstPart: part, container: .mpegTS, nowMilliseconds: now) {
            case .success(let ticket): push.ticket = ticket
            case .failure(let error):
                pushes[rendition] = nil
                return error
            }
        }
        let ticket = push.ticket!
        pushes[rendition] = push
        switch state.appendPart(part, ticket: ticket, nowMilliseconds: now) {
        case .success(let actions):
            storeRecords += actions.storeRecords
            if actions.publish { publish() }
        case .failure(let error):
            pushes[rendition] = nil
            return error
        }
        guard push.parts.isEmpty else { return nil }
        pushes[rendition] = nil
        let info = try! push.segment.withUnsafeBytes { try MediaProbe.probeSegment($0, initSection: nil) }
        let (result, actions) = state.closeSegment(
            ticket: ticket, bytes: push.segment, info: info,
            stored: StoredSegment(chunk: 0, offset: 0, length: UInt32(push.segment.count), crc: 0), nowMilliseconds: now
        )
        storeRecords += actions.storeRecords
        if actions.publish { publish() }
        switch result {
        case .success(let entry):
            closedSegments[rendition, default: [:]][entry.msn] = (push.segment, push.all)
            return nil
        case .failure(let error): return error
        }
    }

    /// One 2-second slot: every rendition in `pushing` streams a segment, part by part every 0.4 s; renditions in
    /// `lagging` list each part 0.4 s after the others.
    mutating func slot(pushing: [String]? = nil, lagging: Set<String> = []) {
        let renditions = pushing ?? state.renditions.map(\.name)
        for rendition in state.renditions.map(\.name) where !renditions.contains(rendition) { lose(rendition) }
        for step in 0..<5 {
            now += 400
            for rendition in renditions {
                if lagging.contains(rendition), step == 0 {
                    // The previous segment's last part, then the next segment starts.
                    if pushes[rendition] != nil { self.step(rendition) }
                    begin(rendition)
                    continue
                }
                if step == 0, pushes[rendition] == nil { begin(rendition) }
                self.step(rendition)
            }
            let actions = state.tick(nowMilliseconds: now)
            storeRecords += actions.storeRecords
            if actions.publish { publish() }
        }
    }

    /// What the store would hold now: closed slots, and every rendition's segments with their bytes.
    func stored() -> StoredChannel {
        var slots: [SlotRecord] = []
        var records: [String: [SegmentRecord]] = [:]
        for record in storeRecords {
            switch record {
            case .slot(let slot): slots.append(slot)
            case .segment(let rendition, let segment): records[rendition, default: []].append(segment)
            }
        }
        return StoredChannel(
            slots: slots,
            renditions: state.renditions.map { rendition in
                let bytes = closedSegments[rendition.name, default: [:]].mapValues(\.bytes)
                return StoredRendition(
                    name: rendition.name, records: records[rendition.name, default: []], bytes: bytes, initSections: [:]
                )
            })
    }

    /// Adds a date range starting at `startMilliseconds` (PDT) and publishes every rendition.
    mutating func addMarker(
        id: String, startMilliseconds: Int64, duration: Double? = nil, plannedDuration: Double? = nil
    ) throws {
        _ = try markers.add(
            MarkerRequest(
                id: id, classAttribute: "com.example.ad",
                startDate: ProgramDateTime(millisecondsSince1970: startMilliseconds), duration: duration,
                plannedDuration: plannedDuration),
            nowMilliseconds: now)
        state.markersChanged()
        publish()
    }

    func text(_ rendition: String) -> String? {
        snapshot.renditions[rendition]?.playlist.map { String(decoding: $0.array, as: UTF8.self) }
    }

    func lowLatency(_ rendition: String) -> LowLatencySnapshot? { snapshot.renditions[rendition]?.lowLatency }

    /// The rendition's playlist value as rendered now.
    func playlist(_ rendition: String) -> MediaPlaylist {
        var memory = snapshot.memory
        return state.lowLatencyPlaylist(
            position: state.index[rendition]!, markers: markers, memory: &memory, nowMilliseconds: now
        ).playlist
    }
}
