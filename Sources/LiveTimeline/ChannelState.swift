package import GapFiller
import HLSPlaylist
package import MediaProbe
package import SharedBytes

/// A media sequence number on the channel's PDT timeline.
package struct Slot: Sendable, Hashable {
    var programDateTimeMilliseconds: Int64
    var durationMilliseconds: Int64
    /// When every started media rendition had filled the slot (ms): subtitle renditions are waited for until this
    /// plus the follower wait.
    var mediaFilledAt: Int64? = nil
    /// Low-Latency: a rendition listed a part of this slot (a streamed push, or GAP parts): its PDT and
    /// discontinuity are fixed, and a rendition returning from an outage takes a later slot.
    var opened = false
    /// Low-Latency: the slot starts a discontinuity (frozen when it was opened).
    var discontinuity = false
    var endMilliseconds: Int64 { programDateTimeMilliseconds + durationMilliseconds }
}

/// What the owner of a `ChannelState` must do after a change, in this order and under the same lock.
package struct IngestActions: Sendable {
    /// Make these durable in the segment store first, in order: before the push is answered and before anything is
    /// published (nothing is listed that the store does not hold).
    package var storeRecords: [StoreRecord]
    /// Write this record to the state journal first: no MSN is ever published that the journal does not cover.
    package var journalRecord: ChannelJournalRecord?
    /// Render the changed renditions and publish a new snapshot.
    package var publish: Bool

    package init(storeRecords: [StoreRecord] = [], journalRecord: ChannelJournalRecord? = nil, publish: Bool) {
        self.storeRecords = storeRecords
        self.journalRecord = journalRecord
        self.publish = publish
    }
}

/// The mutable state of a channel, kept behind the channel's lock. Pure logic: time comes in as arguments, and
/// what must happen outside the state (journal writes, publishing) is returned as `IngestActions`.
package struct ChannelState: Sendable {
    package let configuration: ChannelConfiguration
    package var renditions: [RenditionState] = []
    package var index: [String: Int] = [:]

    /// Bytes the channel holds in memory: every rendition's listed, retained and held segments and init sections.
    package var memoryBytes: Int64 { renditions.reduce(0) { $0 + $1.memoryBytes } }

    /// The open slots, how far they are closed, where this run's MSNs start.
    package internal(set) var slotClock: SlotClock
    /// EXT-X-TARGETDURATION, fixed once known.
    package var targetDuration: Int?
    package internal(set) var revisions: [String: UInt64] = [:]
    /// The filler sources of renditions with an operator's slate clip (`slateClip`), by rendition; set before the
    /// restore, so restored fillers are made from the clip as before the restart.
    package var slateClipSources: [String: any GapFillerSource] = [:]
    /// The encoder's multivariant hint and its counters (see `ChannelState+Rendering`).
    package internal(set) var multivariantHint = MultivariantHintState()
    /// AES-128 key secret and schedule (see `ChannelState+Decoration`); nil: the channel never encrypted.
    package var encryption: ChannelEncryption?
    /// The records the durable segment store is to make durable next.
    package var store = StoreQueue()
    /// What the state journal records and what an earlier run's journal said (`ChannelState+Journal`).
    package var journal = JournalBook()
    /// The redundancy group: catch-up after a restart, the opening agreed with the peers.
    var peers = PeerState()
    /// Low-Latency streamed pushes: closed tickets, a publish owed to the next tick.
    var lowLatency = LowLatencyState()

    /// A segment may differ this much from its slot's duration and still take the slot's duration as EXTINF.
    static let slotSnapMilliseconds: Int64 = 100

    /// The longest segment (s, as EXTINF rounds) a channel takes unless its configured `targetDuration` is longer;
    /// in particular the longest first segment that may fix EXT-X-TARGETDURATION of a channel without a configured
    /// one. RFC 8216bis sets no bound; Apple's HLS authoring specification recommends 6 s, and encoders cut 1-10 s.
    /// 30 s leaves room for any of them; a longer segment (or part) is refused as `implausibleTiming` before any
    /// arithmetic on its duration, instead of fixing a target duration players would wait on for ever.
    package static let maximumSegmentSeconds = 30

    package init(configuration: ChannelConfiguration, firstMSN: UInt64) {
        self.configuration = configuration
        self.slotClock = SlotClock(firstMSN: firstMSN)
        self.targetDuration = configuration.targetDuration.map { max($0, 1) }
        if configuration.lowLatency != nil, targetDuration == nil {
            // Parts are listed before any segment could fix EXT-X-TARGETDURATION.
            targetDuration = max(Int(configuration.segmentDuration.rounded(.up)), 1)
        }
        startJoin()
    }

    package mutating func addRendition(_ name: String) {
        index[name] = renditions.count
        renditions.append(
            RenditionState(
                name: name,
                window: LiveWindow(length: configuration.window, targetDuration: targetDuration ?? 1)))
        if let role = configuredRole(name) {
            renditions[renditions.count - 1].role = role
            renditions[renditions.count - 1].roleDecided = true
        }
        applyRestored(position: renditions.count - 1)
        touch(name)
    }

    mutating func touch(_ rendition: String) {
        revisions[rendition, default: 0] += 1
        journal.dirty = true
    }

    /// The role a rendition has from its creation: subtitles when configured with `subtitles:` or named `{r}-vtt`,
    /// media when configured with `audio:`; nil lets its first push decide.
    func configuredRole(_ name: String) -> RenditionRole? {
        let configured = configuration.renditions.first { $0.name == name }
        if let subtitles = configured?.subtitles {
            return .subtitles(parent: subtitles.parent ?? Self.derivedParent(name))
        }
        if configured?.audio != nil { return .media }
        return Self.derivedParent(name).map { .subtitles(parent: $0) }
    }

    /// `lo` for `lo-vtt`.
    static func derivedParent(_ name: String) -> String? {
        let suffix = OriginNames.subtitleSuffix
        guard name.hasSuffix(suffix), name.count > suffix.count else { return nil }
        return String(name.dropLast(suffix.count))
    }

    /// Fixes the role of a rendition at its first push (subtitles when every track is a subtitle track), and
    /// refuses media that contradicts the role.
    package mutating func settleRole(rendition name: String, tracks: [TrackInfo]) -> IngestError? {
        guard let position = index[name] else { return nil }
        let subtitles = !tracks.isEmpty && tracks.allSatisfy { $0.kind == .subtitles }
        if !renditions[position].roleDecided {
            renditions[position].role = subtitles ? .subtitles(parent: Self.derivedParent(name)) : .media
            renditions[position].roleDecided = true
            touch(name)
            return nil
        }
        guard subtitles != renditions[position].isFollower else { return nil }
        let got =
            tracks.contains { $0.kind == .video } ? "video" : tracks.contains { $0.kind == .audio } ? "audio" : "data"
        let error = IngestError(
            .roleMismatch,
            "rendition \(name) takes \(renditions[position].isFollower ? "subtitles" : "media"), "
                + "got \(subtitles ? "subtitles" : got)")
        return countRejection(error, position: position)
    }

    /// Counts a refused push in the rendition's statistics (`segmentsRejected`, `lastRejection`); returns `error`.
    @discardableResult
    package mutating func countRejection(_ error: IngestError, position: Int) -> IngestError {
        renditions[position].statistics.segmentsRejected += 1
        renditions[position].statistics.lastRejection = error.message
        return error
    }

    /// After a restore: a rendition whose role its first push decided gets it back from what it stored.
    mutating func settleRestoredRole(position: Int) {
        guard !renditions[position].roleDecided, let container = renditions[position].container else { return }
        let initTracks = renditions[position].currentInitVersion.flatMap {
            renditions[position].initSections[$0]?.info.tracks
        }
        let subtitles =
            container == .webVTT || (initTracks.map { !$0.isEmpty && $0.allSatisfy { $0.kind == .subtitles } } ?? false)
        let name = renditions[position].name
        renditions[position].role = subtitles ? .subtitles(parent: Self.derivedParent(name)) : .media
        renditions[position].roleDecided = true
    }

    /// The MPEGTS of the `X-TIMESTAMP-MAP` written into a WebVTT rendition's segments that carry none (and into its
    /// empty cue segments): the configured `timestampOffset`, else the parent container's offset (126000 under an
    /// MPEG-TS parent, 0 under fMP4 or without a parent).
    /// - Parameter announcedContainers: containers the renditions' pushes announced by file name, used while the
    ///   parent has not delivered yet (its `.ts` body may still be streaming when the small `.vtt` completes).
    package func webVTTTimestampOffset(
        rendition name: String, announcedContainers: [String: MediaContainer] = [:]
    ) -> Int64 {
        index[name].map { timestampOffset(position: $0, announcedContainers: announcedContainers) } ?? 0
    }

    /// The MPEGTS value of the X-TIMESTAMP-MAP the origin writes into a subtitle rendition's WebVTT: configured,
    /// else 126000 under an MPEG-TS parent (ffmpeg's muxer delay), else 0. The parent's container is its own, else
    /// what its pushes announced, else that of the channel's other media renditions (delivered, then announced).
    func timestampOffset(position: Int, announcedContainers: [String: MediaContainer] = [:]) -> Int64 {
        let rendition = renditions[position]
        if let configured = configuration.renditions.first(where: { $0.name == rendition.name })?.subtitles?
            .timestampOffset
        {
            return configured
        }
        guard let parent = rendition.parent else { return 0 }
        let container =
            index[parent].flatMap { renditions[$0].container } ?? announcedContainers[parent]
            ?? renditions.first { !$0.isFollower && $0.container != nil }?.container
            ?? announcedContainers.first { !$0.key.hasSuffix(OriginNames.subtitleSuffix) }?.value
        return container == .mpegTS ? WebVTTSegment.mpegTSParentOffset : 0
    }

    /// How long a slot every media rendition filled waits for subtitle renditions: configured, else
    /// min(TD/2, 1 s).
    var followerWaitMilliseconds: Int64 {
        configuration.followerWaitMilliseconds ?? min(Int64(targetDuration ?? 2) * 500, 1000)
    }

    /// The configured grace period, else half the target duration.
    var gracePeriodMilliseconds: Int64 {
        configuration.gracePeriodMilliseconds ?? Int64(targetDuration ?? 2) * 500
    }

    /// Fills the rendition's next slot with a probed segment, and says what the owner must do next (journal,
    /// publish). A refused segment is counted in the rendition's statistics and leaves the window alone.
    /// - Parameters:
    ///   - stored: where the durable store put the bytes (nil on a channel without a store).
    ///   - sequenceNumber: the number the input read from the push's naming (ffmpeg's `index7.ts`, `index7.vtt`):
    ///     it pairs WebVTT segments with their parent's.
    ///   - placement: a segment repaired from a peer: the slot, PDT and discontinuity flag the peer lists it with.
    package mutating func accept(
        rendition name: String, bytes: SharedBytes, info: SegmentInfo, stored: StoredSegment? = nil,
        sequenceNumber: Int? = nil, placement: PeerPlacement? = nil, nowMilliseconds now: Int64
    ) -> (result: Result<WindowEntry, IngestError>, actions: IngestActions) {
        // On a shared timeline, whether a segment fills a slot or comes after its GAP depends only on when it arrived,
        // never on when this origin's ingest loop last ticked: every origin of the group decides the same.
        let closedDue = configuration.sharedTimeline != nil && closeDueSlots(nowMilliseconds: now)
        let result = fillSlot(
            rendition: name, bytes: bytes, info: info, stored: stored, sequenceNumber: sequenceNumber,
            placement: placement, nowMilliseconds: now)
        let publish = if case .success = result { true } else { closedDue }
        return (result, actions(publish: publish, nowMilliseconds: now))
    }

    /// The actions of one pass: the queued store records, the journal record if due, and whether to publish.
    mutating func actions(publish: Bool, nowMilliseconds now: Int64) -> IngestActions {
        let records = store.pending
        store.pending.removeAll(keepingCapacity: true)
        return IngestActions(
            storeRecords: records, journalRecord: journalRecordDue(nowMilliseconds: now), publish: publish)
    }

    /// Runs the ingest loop up to `now`: closes the slots whose deadline passed (GAP entries for renditions that did
    /// not deliver) and releases expired retained segments.
    package mutating func tick(nowMilliseconds now: Int64) -> IngestActions {
        var changed = closeDueSlots(nowMilliseconds: now)
        if configuration.lowLatency != nil, tickLowLatency(nowMilliseconds: now) { changed = true }
        return actions(publish: changed, nowMilliseconds: now)
    }

    /// The steps of `accept`: check the segment, fix or check EXT-X-TARGETDURATION, place it on the rendition's
    /// media timeline, find its slot, refuse a second timeline, round its EXTINF, then append it.
    private mutating func fillSlot(
        rendition name: String, bytes: SharedBytes, info: SegmentInfo, stored: StoredSegment?, sequenceNumber: Int?,
        placement: PeerPlacement?, nowMilliseconds now: Int64
    ) -> Result<WindowEntry, IngestError> {
        guard let position = index[name] else { return .failure(.unknownRendition(configuration.name, name)) }
        func refuse(_ error: IngestError) -> Result<WindowEntry, IngestError> {
            .failure(countRejection(error, position: position))
        }
        if placement == nil, isCatchingUp(nowMilliseconds: now) { return refuse(catchingUpRefusal(rendition: name)) }
        if let error = settleRole(rendition: name, tracks: info.tracks) { return .failure(error) }
        if info.container == .webVTT {
            return placeFollower(
                position: position, bytes: bytes, info: info, stored: stored, sequenceNumber: sequenceNumber,
                nowMilliseconds: now
            ).mapError { error in countRejection(error, position: position) }
        }
        if let error = unacceptable(info, position: position) { return refuse(error) }
        let target: Int
        switch fixTargetDuration(info.duration.microseconds) {
        case .success(let value): target = value
        case .failure(let error): return refuse(error)
        }

        // Read what is needed, then mutate `renditions[position]` in place: holding a copy of the rendition while
        // appending would copy its whole window.
        let rendition = renditions[position].facts
        let durationMicroseconds = info.duration.microseconds
        let anchored = openingTime(
            arrivalMilliseconds: now - (durationMicroseconds + 500) / 1000, mediaStart: info.startTime)
        let msn = rendition.lastMSN.map { $0 + 1 } ?? joiningMSN(startMilliseconds: anchored)
        let timeline = Self.placeOnMediaTimeline(info, after: rendition)
        if let newest = rendition.lastMSN, Self.repeatsNewest(info, start: timeline.start, of: rendition) {
            return .failure(
                IngestError(
                    .alreadyListed, "segment already taken as msn \(newest) of rendition '\(name)' (same media time)"))
        }
        if let placement, let error = Self.misplaced(placement, msn: msn, slot: slotClock.slots[msn], rendition: name) {
            return refuse(error)
        }
        // A repaired segment takes the peer's discontinuity flag (an origin restart is none on the peer), unless its
        // media does not continue this rendition's own timeline.
        let discontinuity =
            placement.map {
                $0.discontinuity
                    || (timeline.discontinuity && !rendition.pendingDiscontinuity && !rendition.lastWasGap)
            } ?? timeline.discontinuity
        let existing = slotClock.slots[msn].flatMap { $0.durationMilliseconds > 0 ? $0 : nil }
        let slot =
            slotClock.slots[msn]
            ?? placement.map {
                Slot(programDateTimeMilliseconds: $0.programDateTimeMilliseconds, durationMilliseconds: 0)
            }
            ?? openSlot(msn: msn, anchoredAt: anchored, discontinuity: discontinuity, rendition: rendition)
        if slot.programDateTimeMilliseconds > now + Int64(target) * 1000 {
            let start = ProgramDateTime(millisecondsSince1970: slot.programDateTimeMilliseconds).formatted
            return refuse(
                IngestError(
                    .aheadOfClock,
                    "segment for msn \(msn) would start at \(start), "
                        + "more than one target duration ahead of the clock: push in real time"))
        }
        if let error = timelineConflict(
            rendition: name, msn: msn, slotEnd: slot.programDateTimeMilliseconds + durationMicroseconds / 1000,
            continuous: timeline.continuous, facts: rendition, target: target, nowMilliseconds: now)
        {
            renditions[position].statistics.timelineConflicts += 1
            return refuse(error)
        }
        let extinf = Self.roundedExtinf(info.duration, carry: rendition.roundingCarry, existingSlot: existing)
        var filled = slot
        if existing == nil { filled.durationMilliseconds = extinf.milliseconds }
        let entry = WindowEntry(
            msn: msn, durationMilliseconds: extinf.milliseconds,
            programDateTimeMilliseconds: slot.programDateTimeMilliseconds, discontinuity: discontinuity,
            content: .segment(bytes, startsWithKeyframe: info.startsWithKeyframe), container: info.container,
            initSectionVersion: info.container == .fragmentedMP4Segment ? rendition.currentInitVersion : nil,
            iFrameRangeEnd: info.iFrameRangeEnd)
        append(
            entry, bytes: bytes.count, to: position, info: info, mediaStart: timeline.start, carry: extinf.carry,
            nowMilliseconds: now)
        if slotClock.slots[msn] == nil, placement == nil,
            opensFeed(msn: msn, discontinuity: discontinuity, rendition: rendition)
        {
            holdOpeningIfNeeded(
                msn: msn, programDateTime: slot.programDateTimeMilliseconds, anchored: anchored, nowMilliseconds: now)
        }
        slotClock.slots[msn] = filled
        if let sequenceNumber, !renditions[position].isFollower {
            renditions[position].recentSequenceNumbers.append((sequenceNumber, msn))
            if renditions[position].recentSequenceNumbers.count > RenditionState.recentSequenceNumberLimit {
                renditions[position].recentSequenceNumbers.removeFirst()
            }
        }
        queueSegmentRecord(entry, position: position, info: info, stored: stored)
        closeFilledSlots(nowMilliseconds: now)
        return .success(entry)
    }

    /// Queues the store record of an accepted segment (whole or streamed), written before its slot is published.
    mutating func queueSegmentRecord(_ entry: WindowEntry, position: Int, info: SegmentInfo, stored: StoredSegment?) {
        guard store.keepsRecords else { return }
        let mediaEnd = renditions[position].lastMediaEnd
        let record = SegmentRecord(
            kind: stored == nil ? .unpersisted : .segment, msn: entry.msn,
            programDateTimeMilliseconds: entry.programDateTimeMilliseconds,
            durationMilliseconds: entry.durationMilliseconds, discontinuity: entry.discontinuity,
            startsWithKeyframe: info.startsWithKeyframe, container: info.container, location: stored,
            initSectionVersion: entry.initSectionVersion, mediaEndTicks: mediaEnd?.ticks,
            mediaTimescale: mediaEnd?.timescale ?? 90_000)
        store.pending.append(.segment(rendition: renditions[position].name, record))
        if let hold = peers.openingHold, entry.msn >= hold.msn {
            peers.openingRecords.append((renditions[position].name, record))
        }
    }

    /// Why a segment repaired from a peer cannot fill slot `msn` (the rendition's next): the peer lists it for another
    /// slot, or with another PDT than the slot has here. nil when it fits.
    static func misplaced(_ placement: PeerPlacement, msn: UInt64, slot: Slot?, rendition: String) -> IngestError? {
        if placement.msn != msn {
            return IngestError(
                .timelineConflict,
                "the peer lists the segment as msn \(placement.msn), but the next slot of rendition '\(rendition)' "
                    + "here is msn \(msn)")
        }
        if let slot, slot.programDateTimeMilliseconds != placement.programDateTimeMilliseconds {
            return IngestError(
                .timelineConflict,
                "the peer lists msn \(msn) at PDT \(placement.programDateTimeMilliseconds) ms, this origin at "
                    + "\(slot.programDateTimeMilliseconds) ms: the timelines disagree")
        }
        return nil
    }

    /// Why a segment cannot be taken at all: no duration, or fMP4 before any initialization section.
    func unacceptable(_ info: SegmentInfo, position: Int) -> IngestError? {
        guard info.duration.microseconds > 0 else { return .unprocessable("segment has no duration") }
        if info.container == .fragmentedMP4Segment, renditions[position].currentInitVersion == nil {
            return .unprocessable("fMP4 segment before any initialization section: push init.mp4 first")
        }
        return nil
    }

    /// EXT-X-TARGETDURATION is fixed by the first segment of the channel (or the configuration) and never changes:
    /// returns it, or why a segment this long cannot be taken.
    mutating func fixTargetDuration(_ durationMicroseconds: Int64) -> Result<Int, IngestError> {
        // Any Int64 of microseconds (saturated by `MediaTime.microseconds`) is at most 9.3e12 s: this fits.
        let roundedSeconds = Int((Double(durationMicroseconds) / 1_000_000).rounded())
        let longest = max(Self.maximumSegmentSeconds, targetDuration ?? 0)
        guard roundedSeconds <= longest else {
            let seconds = Double(durationMicroseconds) / 1_000_000
            return .failure(
                .implausibleTiming(
                    "segment lasts \(seconds) s, longer than the \(longest) s any segment of channel "
                        + "'\(configuration.name)' may last"
                        + (targetDuration == nil
                            ? " (its first segment fixes EXT-X-TARGETDURATION for ever): cut segments of a few seconds"
                            : "")))
        }
        if targetDuration == nil {
            let chosen = max(roundedSeconds, 1)
            targetDuration = chosen
            for i in renditions.indices { renditions[i].window.targetDuration = chosen }
        }
        let target = targetDuration!
        guard roundedSeconds <= target else {
            let seconds = Double(durationMicroseconds) / 1_000_000
            return .failure(
                .unprocessable(
                    "segment lasts \(seconds) s, but EXT-X-TARGETDURATION of channel '\(configuration.name)' is "
                        + "\(target) s and may never change: cut segments of at most \(Double(target) + 0.5) s"))
        }
        return .success(target)
    }

    /// Where the segment sits on the encoder's media timeline (start in unwrapped ticks), whether it continues the
    /// previous one, and whether it starts a discontinuity.
    static func placeOnMediaTimeline(
        _ info: SegmentInfo, after rendition: RenditionFacts
    )
        -> (start: Int64, continuous: Bool, discontinuity: Bool)
    {
        let timescale = info.startTime.timescale
        var start = info.startTime.ticks
        var continuous = false
        if let last = rendition.lastMediaEnd, last.timescale == timescale {
            if info.container == .mpegTS { start = MPEGTimestamp.unwrap(start, near: last.ticks) }
            continuous = abs(start - last.ticks) <= timescale / 4
        }
        let formatChanged =
            (rendition.container.map { $0 != info.container } ?? false)
            || (!rendition.tracks.isEmpty && changesFormat(info, from: rendition.tracks))
        // A subtitle rendition resuming after its own GAP (the encoder sent no fragment for a slot while media did)
        // continues the slot timeline: a discontinuity here would be taken by every rendition at this MSN, video
        // included. In an outage the media renditions start the discontinuity.
        let resumesAfterSubtitleGap = rendition.isSubtitles && rendition.lastWasGap
        let discontinuity =
            rendition.pendingDiscontinuity
            || (rendition.hasStarted
                && (formatChanged || (!resumesAfterSubtitleGap && (!continuous || rendition.lastWasGap))))
        return (start, continuous, discontinuity)
    }

    /// Whether the segment's tracks are not the rendition's (`previous`): another codec, or a track added or removed.
    /// A track the segment has no sample of is no change (RFC 8216 section 6.2.1 asks for a discontinuity when the
    /// tracks change, and this segment's track set is the rendition's): an encoder that dies just after a keyframe
    /// leaves a short last segment whose PMT lists the audio with no audio PES yet (its codec unknown), and an fMP4
    /// fragment lists only the tracks it has samples of (its init section, unchanged, lists them all). A discontinuity
    /// there would also keep the outage's filler from being read across that segment (`startGapFill`).
    static func changesFormat(_ info: SegmentInfo, from previous: [TrackInfo]) -> Bool {
        let codecs = info.tracks.map(\.codec)
        let previousCodecs = previous.map(\.codec)
        if codecs == previousCodecs { return false }
        if info.container == .mpegTS {
            // The PMT lists every track: the same count, each one without samples or with the rendition's codec.
            return codecs.count != previousCodecs.count
                || zip(codecs, previousCodecs).contains { $0 != nil && $0 != $1 }
        }
        // fMP4: the tracks with samples, in the init section's order, must be among the rendition's, in order.
        var rest = previousCodecs[...]
        for codec in codecs.compactMap({ $0 }) {
            guard let found = rest.firstIndex(of: codec) else { return true }
            rest = rest[(found + 1)...]
        }
        return false
    }

    /// The rendition's tracks after a segment: the segment's, unless it only lacks samples of some of the rendition's
    /// tracks (`changesFormat`), which the rendition keeps (the next full segment is then no format change either).
    /// A video track keeps the PQ/HLG reading of an earlier segment's alternative_transfer_characteristics SEI
    /// (`keepingPreferredTransfer`).
    static func tracks(
        after info: SegmentInfo, previous: [TrackInfo], previousContainer: MediaContainer?
    ) -> [TrackInfo] {
        guard !previous.isEmpty, previousContainer == info.container else { return info.tracks }
        guard info.tracks.map(\.codec) != previous.map(\.codec), !changesFormat(info, from: previous) else {
            return keepingPreferredTransfer(info.tracks, previous: previous)
        }
        return previous
    }

    /// `tracks` with the transfer an SEI gave the same track before, where this segment showed none (the probe
    /// reads the SEI in a segment's first GOP only, and an encoder may send it at the first IRAP only): same track
    /// ID, codec, stated transfer and Dolby Vision configuration. VIDEO-RANGE then does not flip HLG -> SDR -> HLG
    /// between reloads of the multivariant playlist; another stated transfer or codec is a new reading.
    static func keepingPreferredTransfer(_ tracks: [TrackInfo], previous: [TrackInfo]) -> [TrackInfo] {
        tracks.map { track in
            guard track.kind == .video, let stated = track.statedTransferCharacteristics,
                track.transferCharacteristics == stated,
                let earlier = previous.first(where: { $0.kind == .video && $0.trackID == track.trackID }),
                earlier.codec == track.codec, earlier.statedTransferCharacteristics == stated,
                earlier.dolbyVision == track.dolbyVision, let shown = earlier.transferCharacteristics, shown != stated
            else { return track }
            var kept = track
            kept.transferCharacteristics = shown
            return kept
        }
    }

    /// The segment ends where the rendition's newest entry (a segment, not a GAP) ends, within 10 ms: the same media
    /// again.
    static func repeatsNewest(_ info: SegmentInfo, start: Int64, of rendition: RenditionFacts) -> Bool {
        guard let last = rendition.lastMediaEnd, last.timescale == info.startTime.timescale, !rendition.lastWasGap
        else { return false }
        let duration = ticks(info.duration.ticks, from: info.duration.timescale, to: last.timescale)
        return duration > 0 && abs(start + duration - last.ticks) <= last.timescale / 100
    }

    /// A new slot for `msn` (no other rendition opened it yet): following the previous slot, or anchored on the
    /// clock. A feed that resumes (or restarts) opening a new slot re-anchors it on the clock, never earlier than the
    /// previous slot's end: it gets the same margin to its deadlines as a feed that starts, instead of inheriting
    /// the old grid (the discontinuity allows the PDT step). A new slot has no duration yet.
    func openSlot(
        msn: UInt64, anchoredAt anchored: Int64, discontinuity: Bool, rendition: RenditionFacts
    ) -> Slot {
        if msn > 0, let previous = slotClock.slots[msn - 1] {
            return Slot(
                programDateTimeMilliseconds: opensFeed(msn: msn, discontinuity: discontinuity, rendition: rendition)
                    ? max(previous.endMilliseconds, anchored) : previous.endMilliseconds,
                durationMilliseconds: 0)
        }
        return Slot(
            programDateTimeMilliseconds: max(anchored, journal.minimumProgramDateTime ?? anchored),
            durationMilliseconds: 0)
    }

    /// Whether a new slot `msn` opens a feed, so that its PDT may come from the anchor (`openSlot`): no slot before
    /// it, or a rendition that had started resumes with a discontinuity (a return from an outage, an encoder
    /// restart).
    func opensFeed(msn: UInt64, discontinuity: Bool, rendition: RenditionFacts) -> Bool {
        msn == 0 || slotClock.slots[msn - 1] == nil || (discontinuity && rendition.hasStarted)
    }

    /// A segment that does not continue the rendition's media timeline while that timeline is still live (no GAP
    /// since, no restart pending) is either an encoder restart or a second encoder pushing to the same rendition. A
    /// restart delivers in real time, so its slot ends at the clock; a second encoder's segment lands in the slot
    /// after the first encoder's newest one, ahead of the clock. It is refused as a timeline conflict unless its slot
    /// ends at most half a target duration ahead: the timeline that took the rendition keeps it.
    func timelineConflict(
        rendition name: String, msn: UInt64, slotEnd: Int64, continuous: Bool, facts rendition: RenditionFacts,
        target: Int, nowMilliseconds now: Int64
    ) -> IngestError? {
        let switchesTimeline =
            rendition.hasStarted && rendition.lastMediaEnd != nil && !continuous && !rendition.lastWasGap
            && !rendition.pendingDiscontinuity
        guard switchesTimeline, slotEnd > now + Int64(target) * 500 else { return nil }
        return IngestError(
            .timelineConflict,
            "segment does not continue the media timeline of rendition '\(name)' and its slot (msn \(msn)) "
                + "would end \(Double(slotEnd - now) / 1000) s ahead of the clock: another encoder is "
                + "pushing to this rendition, or timestamps jumped while pushing faster than real time")
    }

    /// EXTINF in whole milliseconds, carrying the rounding (exactly, in media ticks) so the sum of EXTINFs never
    /// drifts from the media timeline; a slot another rendition opened gives its duration when they differ by at
    /// most `slotSnapMilliseconds`. The duration has its own timescale (ADTS: the sample rate, while the start is a
    /// 90 kHz timestamp).
    static func roundedExtinf(
        _ duration: MediaTime, carry: (value: Int64, timescale: Int64), existingSlot existing: Slot?
    ) -> (milliseconds: Int64, carry: (value: Int64, timescale: Int64)) {
        let durationScale = max(duration.timescale, 1)
        let carried = carry.timescale == durationScale ? carry.value : 0
        let exact = duration.ticks * 1000 + carried  // in units of 1 / (1000 * durationScale) s
        var milliseconds = (exact + durationScale / 2) / durationScale
        if let existing, abs(milliseconds - existing.durationMilliseconds) <= Self.slotSnapMilliseconds {
            milliseconds = existing.durationMilliseconds
        }
        return (milliseconds, (value: exact - milliseconds * durationScale, timescale: durationScale))
    }

    /// Holds the entry for its slot and updates what the rendition knows of its feed and its statistics.
    mutating func append(
        _ entry: WindowEntry, bytes: Int, to position: Int, info: SegmentInfo, mediaStart start: Int64,
        carry: (value: Int64, timescale: Int64), nowMilliseconds now: Int64
    ) {
        let timescale = info.startTime.timescale
        let durationScale = max(info.duration.timescale, 1)
        let milliseconds = entry.durationMilliseconds
        renditions[position].held.append(entry)
        renditions[position].roundingCarry = carry
        renditions[position].tracks = Self.tracks(
            after: info, previous: renditions[position].tracks, previousContainer: renditions[position].container)
        renditions[position].container = info.container
        renditions[position].closedCaptions.formUnion(info.closedCaptions)
        let durationInStartScale = Self.ticks(info.duration.ticks, from: durationScale, to: timescale)
        renditions[position].lastMediaEnd = (start + durationInStartScale, timescale)
        renditions[position].pendingDiscontinuity = false
        renditions[position].inSlate = false
        renditions[position].gapFill = .idle
        if !info.startsWithKeyframe { renditions[position].allSegmentsIndependent = false }
        switch renditions[position].feed {
        case .live: break
        case .waiting, .dropped: renditions[position].feed = .live(sinceMilliseconds: now)
        }
        var statistics = renditions[position].statistics
        statistics.segmentsAccepted += 1
        if entry.discontinuity { statistics.discontinuities += 1 }
        let served = bytes + cipherPadding(bytes, msn: entry.msn)
        statistics.totalBytes += Int64(served)
        statistics.totalMilliseconds += milliseconds
        statistics.peakBitrate = max(
            statistics.peakBitrate, Int(Int64(served) * 8 * 1000 / max(milliseconds, 1)))
        // An encrypted channel serves `iframe-{msn}` resources, padded like segments.
        statistics.countIFrame(
            rangeEnd: entry.iFrameRangeEnd.map { $0 + cipherPadding($0, msn: entry.msn) }, milliseconds: milliseconds)
        statistics.driftMilliseconds = now - (entry.programDateTimeMilliseconds + milliseconds)
        renditions[position].statistics = statistics
    }

    /// Where a slot that opens a feed starts: when its segment started arriving, or with a shared timeline the
    /// anchor every origin of the group computes (`SharedTimeline`).
    func openingTime(arrivalMilliseconds arrival: Int64, mediaStart: MediaTime) -> Int64 {
        guard let shared = configuration.sharedTimeline else { return arrival }
        return shared.openingProgramDateTime(arrivalMilliseconds: arrival, mediaStart: mediaStart)
    }

    /// The MSN a rendition's first segment takes: the open slot that started closest to the segment's start (so
    /// renditions whose encoders start a moment apart line up), else the slot after the newest one. The channel's
    /// very first slot on a shared timeline takes the grid's MSN (never below `firstMSN`), and becomes `firstMSN`.
    mutating func joiningMSN(startMilliseconds start: Int64) -> UInt64 {
        if slotClock.closedThrough == nil, slotClock.slots.isEmpty, let shared = configuration.sharedTimeline {
            let grid = shared.firstMSN(
                programDateTimeMilliseconds: max(start, journal.minimumProgramDateTime ?? start),
                segmentDurationMilliseconds: configuration.segmentDurationMilliseconds)
            slotClock.firstMSN = max(grid, slotClock.firstMSN)
            return slotClock.firstMSN
        }
        let lowest = slotClock.lowestOpen
        let open = slotClock.slots.filter { $0.key >= lowest }
        let nearest = open.min {
            abs($0.value.programDateTimeMilliseconds - start) < abs($1.value.programDateTimeMilliseconds - start)
        }
        let nominal = configuration.segmentDurationMilliseconds
        if let nearest,
            abs(nearest.value.programDateTimeMilliseconds - start) * 2
                < max(nearest.value.durationMilliseconds > 0 ? nearest.value.durationMilliseconds : nominal, 1)
        {
            return nearest.key
        }
        return max(open.keys.max().map { $0 + 1 } ?? lowest, lowest)
    }

    /// Slots at the start of a channel's life that also wait for renditions that have not delivered yet (until
    /// their deadline), so encoders that start a moment apart fill the same first slots.
    static let startupSlots: UInt64 = 3

    /// Closes, in order, the open slots that every started media rendition has filled, once every started subtitle
    /// rendition has filled them too or the follower wait has passed since media filled them (a subtitle rendition
    /// that missed one gets an empty cue segment). A channel of subtitle renditions only waits for all of them.
    mutating func closeFilledSlots(nowMilliseconds now: Int64) {
        while true {
            let next = slotClock.nextToClose
            guard var slot = slotClock.slots[next] else { break }
            let started = renditions.filter(\.hasStarted)
            let media = started.filter { !$0.isFollower }
            // Low-Latency: a rendition in outage does not hold the slot open (GAP parts mark its time meanwhile).
            let leaders = (media.isEmpty ? started : media).filter {
                !isInLowLatencyOutage($0) && !skipped($0, msn: next)
            }
            guard !leaders.isEmpty, leaders.allSatisfy({ $0.hasEntry(msn: next) }) else { break }
            // The first slots wait (until their deadline) for renditions that have not delivered yet: configured
            // ones, or, on a channel created by pushes, renditions nobody has announced yet. Not for unannounced
            // ones in a Low-Latency channel: the next segment's parts are listed only once this slot closes, so a
            // wait here would stall every player for up to the grace period at each of the first slots.
            if next < slotClock.firstMSN + Self.startupSlots,
                started.count < renditions.count
                    || (configuration.renditions.isEmpty && configuration.lowLatency == nil)
            {
                break
            }
            if holdsOpening(msn: next, nowMilliseconds: now) { break }
            if !started.allSatisfy({ $0.fills(msn: next) }) {
                let filledAt = slot.mediaFilledAt ?? now
                if slot.mediaFilledAt == nil {
                    slot.mediaFilledAt = now
                    slotClock.slots[next] = slot
                }
                guard now >= filledAt + followerWaitMilliseconds else { break }
                for position in renditions.indices
                where renditions[position].hasStarted && !renditions[position].hasEntry(msn: next) {
                    writeMissing(position: position, msn: next, slot: slot, mediaDelivered: true)
                }
            }
            for position in renditions.indices
            where !renditions[position].isFollower && renditions[position].hasStarted
                && !renditions[position].hasEntry(msn: next)
            {
                writeGap(position: position, msn: next, slot: slot, nowMilliseconds: now)
            }
            if defersPublication(msn: next, nowMilliseconds: now) { break }
            publishSlot(next, nowMilliseconds: now)
        }
    }

    /// Moves every rendition's entry of slot `msn` into its window. If any of them starts a discontinuity, all of
    /// them do: the same MSN has the same discontinuity sequence number in every rendition (RFC 8216 section 6.2.4).
    mutating func publishSlot(_ msn: UInt64, nowMilliseconds now: Int64) {
        let discontinuity = renditions.contains { $0.held.first?.msn == msn && $0.held.first!.discontinuity }
        // The discontinuity sequence number of this MSN, the same in every rendition: a rendition whose first entry
        // this is (a late joiner, or every rendition after a restart) takes it instead of counting on its own.
        let base = journal.publishedDiscontinuityDomain ?? renditions.map(\.window.edgeDiscontinuitySequence).max() ?? 0
        let domain = base + (discontinuity ? 1 : 0)
        journal.publishedDiscontinuityDomain = domain
        for position in renditions.indices where renditions[position].held.first?.msn == msn {
            var entry = renditions[position].held.removeFirst()
            if renditions[position].isFollower, entry.container == .webVTT, let slot = slotClock.slots[msn] {
                entry = followerEntry(entry, slot: slot, position: position)
            }
            if discontinuity, !entry.discontinuity {
                entry.discontinuity = true
                renditions[position].statistics.discontinuities += 1
            }
            if renditions[position].window.lastMSN == nil, renditions[position].window.retained.isEmpty {
                renditions[position].window.startDiscontinuitySequence(at: domain - (entry.discontinuity ? 1 : 0))
            }
            renditions[position].window.append(entry, nowMilliseconds: now)
            renditions[position].lastAppendMilliseconds = now
            touch(renditions[position].name)
        }
        slotClock.close(msn)
        journal.behindEdge = true
        if store.keepsRecords, let slot = slotClock.slots[msn] {
            store.pending.append(
                .slot(
                    SlotRecord(
                        msn: msn, programDateTimeMilliseconds: slot.programDateTimeMilliseconds,
                        durationMilliseconds: slot.durationMilliseconds, discontinuitySequence: domain,
                        discontinuity: discontinuity)))
        }
    }

    /// Closes every slot whose end plus the grace period has passed, writing GAP entries where a started rendition
    /// did not deliver; releases expired retained segments. Returns true if anything changed.
    mutating func closeDueSlots(nowMilliseconds now: Int64) -> Bool {
        let closedBefore = slotClock.closedThrough
        let catchingUpBefore = peers.catchUpUntilMilliseconds != nil
        let catchingUp = continueCatchUp(nowMilliseconds: now)
        closeFilledSlots(nowMilliseconds: now)
        // The end of a catch-up changes the snapshot (playlists are served again).
        var changed =
            slotClock.closedThrough != closedBefore || catchingUpBefore != (peers.catchUpUntilMilliseconds != nil)
        while !catchingUp, let due = slotClock.dueToClose {
            guard let slot = slotOrGapSlot(due) else { break }
            guard now >= deadline(for: slot, msn: due) else { break }
            if holdsOpening(msn: due, nowMilliseconds: now) { break }
            // A streamed push still open at the deadline is closed at its last part, as a stalled push.
            let openPushes = renditions.indices.filter {
                renditions[$0].open.map { $0.pushed && $0.msn == due } ?? false
            }
            if !openPushes.isEmpty {
                for position in openPushes { closeStalled(position: position, nowMilliseconds: now) }
                changed = true
                continue
            }
            let mediaDelivered = renditions.contains { rendition in
                !rendition.isFollower && rendition.held.contains { $0.msn == due && !$0.isGap }
            }
            for position in renditions.indices where renditions[position].hasStarted {
                if renditions[position].isFollower {
                    guard !renditions[position].hasEntry(msn: due) else { continue }
                    writeMissing(position: position, msn: due, slot: slot, mediaDelivered: mediaDelivered)
                    continue
                }
                guard renditions[position].lastMSN != nil, !renditions[position].hasEntry(msn: due) else { continue }
                writeGap(position: position, msn: due, slot: slot, nowMilliseconds: now)
            }
            if defersPublication(msn: due, nowMilliseconds: now) { break }
            slotClock.slots[due] = slot
            publishSlot(due, nowMilliseconds: now)
            // Slots after it that were already filled by everyone close too.
            closeFilledSlots(nowMilliseconds: now)
            changed = true
        }
        for position in renditions.indices where renditions[position].window.releaseExpired(nowMilliseconds: now) {
            touch(renditions[position].name)
            changed = true
        }
        return changed
    }

    /// Slot `msn`, or, when no rendition opened it, the slot after `msn - 1` as a GAP would take it (of
    /// `gapSlotMilliseconds`); nil when neither exists.
    func slotOrGapSlot(_ msn: UInt64) -> Slot? {
        slotClock.slots[msn]
            ?? slotClock.slots[msn &- 1].map {
                Slot(programDateTimeMilliseconds: $0.endMilliseconds, durationMilliseconds: gapSlotMilliseconds($0))
            }
    }

    /// Length of a slot nobody filled, after `previous`: the previous slot's length, but never less than the
    /// nominal segment duration (an encoder stopped with SIGTERM flushes a short last segment: its 40 ms must not
    /// become the length of every GAP entry of the outage, hundreds of them) nor more than the target duration.
    func gapSlotMilliseconds(_ previous: Slot) -> Int64 {
        let nominal = configuration.segmentDurationMilliseconds
        let ceiling = Int64(targetDuration ?? Int(configuration.segmentDuration.rounded(.up))) * 1000
        return min(max(previous.durationMilliseconds, nominal), max(ceiling, 1))
    }

    /// When a slot is closed: its end plus the grace period, but never later than 1.5 target durations (less a
    /// margin for the tick) after the last entry was added to a rendition still missing it (RFC 8216 section 6.2.1:
    /// a new segment at least every 1.5 target durations, even when the encoder's timeline runs ahead of the clock).
    func deadline(for slot: Slot, msn: UInt64) -> Int64 {
        // A slot opened by a streamed push has no length until its segment closes: at most TD + 0.5 s.
        let length =
            slot.durationMilliseconds > 0 || !slot.opened
            ? slot.durationMilliseconds : Int64(targetDuration ?? 2) * 1000 + 500
        let bySlot = slot.programDateTimeMilliseconds + length + gracePeriodMilliseconds
        let limit = Int64(targetDuration ?? 2) * 1500 - Self.stalenessMarginMilliseconds
        let byStaleness = renditions.lazy
            .filter { !$0.isFollower && $0.hasStarted && ($0.lastMSN ?? 0) < msn && !isInLowLatencyOutage($0) }
            .map { $0.lastAppendMilliseconds + limit }
            .min()
        return min(bySlot, byStaleness ?? bySlot)
    }

    /// Safety margin under the 1.5 x TD limit: covers the ingest loop's tick and the time to publish.
    static let stalenessMarginMilliseconds: Int64 = 200

    /// A segment shorter than this (and than 3/4 of the nominal segment) was cut short: `defersPublication`.
    static let shortSegmentMilliseconds: Int64 = 1000

    /// Whether slot `msn`, which every rendition has an entry for, waits before it is published: one of its media
    /// entries is a segment cut short (the last one an encoder stopped mid-segment flushes: ffmpeg with SIGTERM),
    /// and the slot after it is neither filled by every media rendition nor due (`deadline`, whose staleness bound
    /// counts from the last publish, so the playlist still changes within 1.5 target durations). Chromium's native
    /// HLS aligns a playlist reload on PDT and takes any entry within 1 s of where the segment it played last ends:
    /// a segment under 1 s that is still last at the next reload is appended a second time, and chromium dies on
    /// it (docs/outages.md). Listed with, or about a second before, the entry after it, no reload a target
    /// duration later finds it last. Not in Low-Latency, where a segment's parts are listed as they come.
    func defersPublication(msn: UInt64, nowMilliseconds now: Int64) -> Bool {
        guard configuration.lowLatency == nil else { return false }
        let short = min(Self.shortSegmentMilliseconds, configuration.segmentDurationMilliseconds * 3 / 4)
        // Runs at every slot close: no copy of the renditions, and the common case (nothing cut short) ends here.
        let media = renditions.lazy.filter { !$0.isFollower && $0.hasStarted }
        let cutShort = media.contains { rendition in
            rendition.held.contains { $0.msn == msn && !$0.isGap && !$0.isSlate && $0.durationMilliseconds < short }
        }
        guard cutShort else { return false }
        let following = msn &+ 1
        guard !media.allSatisfy({ $0.hasEntry(msn: following) }), let slot = slotOrGapSlot(following)
        else { return false }
        return now < deadline(for: slot, msn: following)
    }

    /// The store record of an entry the origin made itself (a GAP, an empty cue file): no media timeline of its own.
    private static func generatedRecord(
        _ entry: WindowEntry, kind: SegmentRecord.Kind, location: StoredSegment?
    ) -> SegmentRecord {
        SegmentRecord(
            kind: kind, msn: entry.msn, programDateTimeMilliseconds: entry.programDateTimeMilliseconds,
            durationMilliseconds: entry.durationMilliseconds, discontinuity: false,
            startsWithKeyframe: kind != .gap, container: entry.container, location: location,
            initSectionVersion: entry.initSectionVersion, mediaEndTicks: nil, mediaTimescale: 90_000)
    }

    /// Writes the entry of a slot the rendition missed: an EXT-X-GAP entry (its URL answering the filler or 404), or
    /// under `outage: slate` a regular segment whose bytes are the filler, with a discontinuity where the slate
    /// starts; the encoder's next segment starts another (`inSlate`). The entry takes the slot's MSN, PDT and
    /// EXTINF either way, so every origin of a redundancy group lists the same.
    mutating func writeGap(position: Int, msn: UInt64, slot: Slot, nowMilliseconds now: Int64) {
        let filler = fillerSegment(position: position, msn: msn, slot: slot)
        let slate = configuration.outage == .slate && !renditions[position].isFollower ? filler : nil
        var entry = WindowEntry(
            msn: msn, durationMilliseconds: slot.durationMilliseconds,
            programDateTimeMilliseconds: slot.programDateTimeMilliseconds,
            discontinuity: slate != nil && !renditions[position].inSlate,
            content: slate.map { .segment($0, startsWithKeyframe: true) }
                ?? .gap(filler: configuration.gapResponse == .filler ? filler : nil),
            container: renditions[position].container ?? .mpegTS,
            initSectionVersion: renditions[position].currentInitVersion)
        if slate != nil {
            entry.isSlate = true
            renditions[position].inSlate = true
            renditions[position].pendingDiscontinuity = true
        }
        renditions[position].hold(entry)
        renditions[position].statistics.gapsWritten += 1
        if configuration.lowLatency != nil { finishGapParts(position: position, msn: msn, slot: slot) }
        if store.keepsRecords {
            store.pending.append(
                .segment(rendition: renditions[position].name, Self.generatedRecord(entry, kind: .gap, location: nil)))
        }
        if case .live = renditions[position].feed {
            renditions[position].feed = .dropped(sinceMilliseconds: slot.programDateTimeMilliseconds)
        }
        touch(renditions[position].name)
    }
}

/// What `ChannelState.accept` reads of a rendition before changing it.
struct RenditionFacts {
    let lastMSN: UInt64?
    let lastMediaEnd: (ticks: Int64, timescale: Int64)?
    let roundingCarry: (value: Int64, timescale: Int64)
    let container: MediaContainer?
    let tracks: [TrackInfo]
    let lastWasGap: Bool
    let pendingDiscontinuity: Bool
    let hasStarted: Bool
    let currentInitVersion: Int?
    /// Subtitles (IMSC1 reaches `accept`): a hole in them is no discontinuity of their own (see
    /// `placeOnMediaTimeline`).
    let isSubtitles: Bool
}

extension RenditionState {
    var facts: RenditionFacts {
        RenditionFacts(
            lastMSN: lastMSN, lastMediaEnd: lastMediaEnd, roundingCarry: roundingCarry,
            container: container, tracks: tracks, lastWasGap: lastEntry?.isGap ?? false,
            pendingDiscontinuity: pendingDiscontinuity, hasStarted: hasStarted, currentInitVersion: currentInitVersion,
            isSubtitles: isFollower)
    }

    /// Stores an initialization section; returns its version (a new one only if the bytes changed).
    package mutating func adoptInitSection(bytes: SharedBytes, info: InitSectionInfo) -> Int {
        if let current = currentInitVersion, let section = initSections[current], section.bytes == bytes {
            return current
        }
        let version = (initSections.keys.max() ?? -1) + 1
        if let current = currentInitVersion, initSections[current]?.info.tracks.map(\.codec) != info.tracks.map(\.codec)
        {
            pendingDiscontinuity = true
        }
        initSections[version] = InitSection(version: version, bytes: bytes, info: info)
        currentInitVersion = version
        // Keep only the sections a listed or retained segment still names, and the current one.
        let inUse = Set((window.entries + window.retained.map(\.entry)).compactMap(\.initSectionVersion) + [version])
        initSections = initSections.filter { inUse.contains($0.key) }
        return version
    }
}

// MARK: Subtitle renditions (followers)

extension ChannelState {
    /// Places a WebVTT segment, which has no duration of its own, in a slot: through its pushed `X-TIMESTAMP-MAP` and
    /// the parent's media timeline; else the parent's slot of the same sequence number (`MediaPush.sequenceNumber`:
    /// ffmpeg numbers `lo/index7.ts` and `lo/index7.vtt` alike); else the rendition's next MSN. Never a closed slot,
    /// nor one the rendition already filled: those go to the next open slot. The entry takes the slot's PDT and
    /// EXTINF when the slot closes.
    fileprivate mutating func placeFollower(
        position: Int, bytes: SharedBytes, info: SegmentInfo, stored: StoredSegment?, sequenceNumber: Int?,
        nowMilliseconds now: Int64
    ) -> Result<WindowEntry, IngestError> {
        if targetDuration == nil, renditions.allSatisfy(\.isFollower) {
            // A channel of subtitles only: EXT-X-TARGETDURATION from the nominal segment duration (with media, the
            // first media segment fixes it).
            _ = fixTargetDuration(configuration.segmentDurationMilliseconds * 1000)
        }
        let rendition = renditions[position]
        let parentPosition = rendition.parent.flatMap { index[$0] }
        let lowestOpen = slotClock.lowestOpen
        var msn: UInt64
        var placedByMedia = true
        if let map = info.webVTTTimestampMap, let parentPosition,
            let mapped = mappedMSN(map, parent: parentPosition, rendition: rendition.name)
        {
            switch mapped {
            case .success(let value): msn = value
            case .failure(let error): return .failure(error)
            }
        } else if let sequenceNumber, let parentPosition,
            let paired = renditions[parentPosition].recentSequenceNumbers.last(where: { $0.number == sequenceNumber })
        {
            msn = paired.msn
        } else {
            placedByMedia = false
            msn = rendition.lastMSN.map { $0 + 1 } ?? max(slotClock.slots.keys.max() ?? lowestOpen, lowestOpen)
        }
        let wanted = msn
        msn = max(msn, lowestOpen)
        if placedByMedia, msn == wanted, renditions[position].displacedMSNs.remove(msn) != nil {
            // The cue of this slot arrived: the late cue held here gives way (it is never listed).
            renditions[position].held.removeAll { $0.msn == msn }
            renditions[position].heldRecords[msn] = nil
            renditions[position].statistics.lateCuesSuperseded += 1
        }
        while renditions[position].hasEntry(msn: msn) { msn += 1 }
        if msn != wanted { renditions[position].displacedMSNs.insert(msn) }
        let mediaStarted = renditions.contains { !$0.isFollower && $0.hasStarted }
        if slotClock.slots[msn] == nil {
            if let newest = slotClock.slots.keys.max(), msn > newest + 1 {
                return .failure(
                    IngestError(
                        .aheadOfClock,
                        "no media segment has opened a slot near msn \(msn) yet: push subtitles in real time, "
                            + "with their media"))
            }
            if !mediaStarted {
                // Subtitles only: they open the slots themselves, of the nominal length.
                let previous = msn > 0 ? slotClock.slots[msn - 1] : nil
                let anchored = now - configuration.segmentDurationMilliseconds
                slotClock.slots[msn] = Slot(
                    programDateTimeMilliseconds: previous?.endMilliseconds
                        ?? max(anchored, journal.minimumProgramDateTime ?? anchored),
                    durationMilliseconds: configuration.segmentDurationMilliseconds)
            }
        }
        let slot = slotClock.slots[msn]
        let entry = WindowEntry(
            msn: msn, durationMilliseconds: slot?.durationMilliseconds ?? 0,
            programDateTimeMilliseconds: slot?.programDateTimeMilliseconds ?? 0,
            discontinuity: rendition.pendingDiscontinuity, content: .segment(bytes, startsWithKeyframe: true),
            container: .webVTT, initSectionVersion: nil)
        renditions[position].hold(entry)
        renditions[position].container = .webVTT
        renditions[position].tracks = info.tracks
        renditions[position].pendingDiscontinuity = false
        renditions[position].gapFill = .idle
        renditions[position].lastAppendMilliseconds = now
        renditions[position].statistics.segmentsAccepted += 1
        renditions[position].statistics.totalBytes += Int64(bytes.count)
        switch renditions[position].feed {
        case .live: break
        case .waiting, .dropped: renditions[position].feed = .live(sinceMilliseconds: now)
        }
        if store.keepsRecords {
            renditions[position].heldRecords[msn] = SegmentRecord(
                kind: stored == nil ? .unpersisted : .segment, msn: msn, programDateTimeMilliseconds: 0,
                durationMilliseconds: 0, discontinuity: entry.discontinuity, startsWithKeyframe: true,
                container: .webVTT, location: stored, initSectionVersion: nil, mediaEndTicks: nil,
                mediaTimescale: 90_000)
        }
        touch(rendition.name)
        closeFilledSlots(nowMilliseconds: now)
        return .success(entry)
    }

    /// The slot a pushed `X-TIMESTAMP-MAP` points at: its MPEGTS placed on the parent's media timeline (anchored at
    /// the parent's newest real segment). nil when the parent has no timeline yet; `outOfRange` when the point lies
    /// more than a target duration outside what the parent has listed or holds.
    private func mappedMSN(
        _ map: WebVTTTimestampMap, parent position: Int, rendition name: String
    ) -> Result<UInt64, IngestError>? {
        let parent = renditions[position]
        let entries = parent.window.entries + parent.held
        guard let mediaEnd = parent.lastMediaEnd, mediaEnd.timescale > 0,
            let newest = entries.last(where: { !$0.isGap }), let first = entries.first, let last = entries.last
        else { return nil }
        let end90 =
            mediaEnd.timescale == 90_000 ? mediaEnd.ticks : mediaEnd.ticks * 90_000 / mediaEnd.timescale
        let mpegts = parent.container == .mpegTS ? MPEGTimestamp.unwrap(map.mpegts, near: end90) : map.mpegts
        let point = newest.endMilliseconds + (mpegts - end90) / 90
        let tolerance = Int64(targetDuration ?? 2) * 1000
        guard point >= first.programDateTimeMilliseconds - tolerance, point < last.endMilliseconds + tolerance else {
            let format = { (ms: Int64) in ProgramDateTime(millisecondsSince1970: ms).formatted }
            return .failure(
                IngestError(
                    .outOfRange,
                    "X-TIMESTAMP-MAP MPEGTS:\(map.mpegts) of a segment of rendition '\(name)' maps to "
                        + "\(format(point)), more than one target duration outside the media timeline of "
                        + "'\(parent.name)' (\(format(first.programDateTimeMilliseconds)) to "
                        + "\(format(last.endMilliseconds)))"))
        }
        if point >= last.endMilliseconds { return .success(last.msn + 1) }
        let containing = entries.last { $0.programDateTimeMilliseconds <= point + Self.slotSnapMilliseconds }
        return .success(containing?.msn ?? first.msn)
    }

    /// A follower's held WebVTT entry as its slot closes: the slot's PDT and EXTINF; its store record is written now.
    fileprivate mutating func followerEntry(_ held: WindowEntry, slot: Slot, position: Int) -> WindowEntry {
        let entry = WindowEntry(
            msn: held.msn, durationMilliseconds: slot.durationMilliseconds,
            programDateTimeMilliseconds: slot.programDateTimeMilliseconds, discontinuity: held.discontinuity,
            content: held.content, container: held.container, initSectionVersion: nil)
        renditions[position].displacedMSNs.remove(held.msn)
        if var record = renditions[position].heldRecords.removeValue(forKey: held.msn) {
            record.programDateTimeMilliseconds = entry.programDateTimeMilliseconds
            record.durationMilliseconds = entry.durationMilliseconds
            store.pending.append(.segment(rendition: renditions[position].name, record))
            let milliseconds = max(entry.durationMilliseconds, 1)
            var statistics = renditions[position].statistics
            statistics.totalMilliseconds += entry.durationMilliseconds
            if let bytes = held.bytes {
                let served = bytes.count + cipherPadding(bytes.count, msn: held.msn)
                statistics.peakBitrate = max(statistics.peakBitrate, Int(Int64(served) * 8 * 1000 / milliseconds))
            }
            renditions[position].statistics = statistics
        } else if let bytes = held.bytes, !store.keepsRecords {
            let milliseconds = max(entry.durationMilliseconds, 1)
            renditions[position].statistics.totalMilliseconds += entry.durationMilliseconds
            renditions[position].statistics.peakBitrate = max(
                renditions[position].statistics.peakBitrate,
                Int(Int64(bytes.count + cipherPadding(bytes.count, msn: held.msn)) * 8 * 1000 / milliseconds))
        }
        return entry
    }

    /// A started subtitle rendition that has no entry for a closing slot: an empty cue segment when media delivered
    /// the slot and the rendition is WebVTT ("no cues" is valid content), else a GAP (an outage, or IMSC1).
    fileprivate mutating func writeMissing(position: Int, msn: UInt64, slot: Slot, mediaDelivered: Bool) {
        guard mediaDelivered, isWebVTT(position: position) else {
            writeGap(position: position, msn: msn, slot: slot, nowMilliseconds: slot.programDateTimeMilliseconds)
            return
        }
        let offset = timestampOffset(position: position)
        let bytes = WebVTTSegment.empty(mpegts: offset)
        let entry = WindowEntry(
            msn: msn, durationMilliseconds: slot.durationMilliseconds,
            programDateTimeMilliseconds: slot.programDateTimeMilliseconds, discontinuity: false,
            content: .segment(bytes, startsWithKeyframe: true), container: .webVTT, initSectionVersion: nil)
        renditions[position].hold(entry)
        renditions[position].statistics.emptyCueSegments += 1
        if store.keepsRecords {
            // Kind 4 keeps no chunk bytes: the offset field holds the map's MPEGTS value, the load regenerates them.
            let location = StoredSegment(
                chunk: 0, offset: UInt64(bitPattern: offset), length: UInt32(bytes.count),
                crc: WebVTTSegment.crc32(bytes))
            store.pending.append(
                .segment(
                    rendition: renditions[position].name,
                    Self.generatedRecord(entry, kind: .synthesized, location: location)))
        }
        touch(renditions[position].name)
    }

    /// True for a subtitle rendition of WebVTT text (not IMSC1 in fMP4).
    func isWebVTT(position: Int) -> Bool {
        let rendition = renditions[position]
        guard rendition.isFollower else { return false }
        return rendition.container == .webVTT || (rendition.container == nil && rendition.currentInitVersion == nil)
    }
}

extension RenditionState {
    /// Holds an entry for its open slot, in MSN order (a subtitle rendition may hold a later slot before an earlier
    /// one gets its empty cue segment).
    mutating func hold(_ entry: WindowEntry) {
        let at = held.lastIndex { $0.msn < entry.msn }.map { $0 + 1 } ?? 0
        held.insert(entry, at: at)
    }
}
