package import HLSPlaylist
package import LiveTimeline
public import Markers
import MediaProbe
import SharedBytes

/// The HLS output of a channel's timeline: a publish hands it the timeline's new value (read-only: `ChannelState`'s
/// fields are `package internal(set)`) and the previous snapshot, and it renders the changed renditions' playlists
/// into the next snapshot. What it remembers between renders travels in the snapshot (`PackagingMemory`).
package enum HLSPackager {
    /// Builds the next snapshot: re-renders only renditions whose state changed since `previous`.
    /// - Parameter markers: the channel's date ranges, overlaid on every rendition (`markersChanged()` marks every
    ///   rendition for re-rendering when they change).
    package static func render(
        _ timeline: ChannelState, name: String, previous: ChannelSnapshot, nowMilliseconds now: Int64,
        markers: MarkerBook = MarkerBook()
    ) -> ChannelSnapshot {
        var memory = previous.memory
        var snapshots: [String: RenditionSnapshot] = [:]
        for position in timeline.renditions.indices {
            let rendition = timeline.renditions[position]
            let revision = timeline.revisions[rendition.name, default: 0]
            if let old = previous.renditions[rendition.name], old.version == revision {
                snapshots[rendition.name] = old
                continue
            }
            var lowLatency: LowLatencySnapshot? = nil
            let playlist: SharedBytes?
            if rendition.window.entries.isEmpty {
                playlist = nil
            } else if timeline.isLowLatency(position: position) {
                let rendered = timeline.lowLatencyPlaylist(
                    position: position, markers: markers, memory: &memory, nowMilliseconds: now)
                playlist = SharedBytes(string: rendered.playlist.render())
                lowLatency = rendered.snapshot
            } else {
                playlist = SharedBytes(string: timeline.markedPlaylist(rendition, markers: markers).render())
            }
            let iFrameBytes: SharedBytes? =
                rendition.window.entries.isEmpty || !timeline.hasIFramePlaylist(rendition)
                ? nil : SharedBytes(string: timeline.iFramePlaylist(rendition).render())
            snapshots[rendition.name] = RenditionSnapshot(
                name: rendition.name, playlist: playlist, iFramePlaylist: iFrameBytes, version: revision,
                modifiedMilliseconds: now,
                targetDuration: rendition.window.targetDuration,
                entries: rendition.window.retained.map(\.entry) + rendition.window.entries,
                initSections: rendition.initSections, currentInitVersion: rendition.currentInitVersion,
                lowLatency: lowLatency, firstListedIndex: rendition.window.retained.count,
                driftMilliseconds: rendition.statistics.driftMilliseconds,
                discontinuitySequence: rendition.window.discontinuitySequence,
                carriesVideo: rendition.tracks.contains { $0.kind == .video },
                carriesAudio: rendition.tracks.contains { $0.kind == .audio },
                carriesSubtitles: rendition.tracks.contains { $0.kind == .subtitles })
        }
        let playlist = timeline.multivariant().map(timeline.playbackMultivariant)
        let text = playlist?.render()
        var multivariantBytes = previous.multivariantPlaylist
        var multivariantModified = previous.multivariantModifiedMilliseconds
        if text != memory.multivariantText || (text != nil && multivariantBytes == nil) {
            memory.multivariantText = text
            multivariantModified = now
            multivariantBytes = text.map { SharedBytes(string: $0) }
        }
        let steeredText = playlist.flatMap { timeline.steeredMultivariant($0, channel: name) }?.render()
        var steeredBytes = previous.steeredMultivariant
        if steeredText != memory.steeredText || (steeredText != nil && steeredBytes == nil) {
            memory.steeredText = steeredText
            multivariantModified = now
            steeredBytes = steeredText.map { SharedBytes(string: $0) }
        }
        return ChannelSnapshot(
            name: name, version: previous.version + 1, multivariantPlaylist: multivariantBytes,
            multivariantModifiedMilliseconds: multivariantModified, renditions: snapshots,
            encryption: timeline.snapshotEncryption(), catchingUp: timeline.isCatchingUp, memory: memory,
            steeredMultivariant: steeredBytes)
    }
}

extension ChannelState {
    /// The channel's rendition layout now: configuration, then the hint, then what the renditions delivered.
    package func layout() -> RenditionLayout {
        RenditionLayout.resolve(
            configured: configuration.renditions, hint: multivariantHint.hint,
            renditions: renditions.map { rendition in
                let isSubtitles = if case .subtitles = rendition.role { true } else { false }
                return LayoutRendition(name: rendition.name, tracks: rendition.tracks, isSubtitles: isSubtitles)
            },
            audioOnlyVariant: configuration.audioOnlyVariant)
    }

    /// With `steering`: `playlist` listed once per pathway (``MultivariantPlaylist/steered(pathways:serverURI:)``),
    /// its SERVER-URI `steering.json` beside the multivariant playlist, so that the first manifest comes from the
    /// origin (or CDN) that served the playlist. Every Content Steering rule holds (asserted in debug builds).
    package func steeredMultivariant(_ playlist: MultivariantPlaylist, channel: String) -> MultivariantPlaylist? {
        guard let steering = configuration.steering, !steering.pathways.isEmpty else { return nil }
        let steered = playlist.steered(
            pathways: steering.pathways.map {
                SteeringPathway(id: $0.id, uriPrefix: steering.uriPrefix($0, channel: channel))
            },
            serverURI: ContentSteeringConfiguration.manifestFile)
        assert(steered.steeringViolations().isEmpty, "steered multivariant: \(steered.steeringViolations())")
        return steered
    }

    /// The rendition's playlist with the channel's markers overlaid.
    func markedPlaylist(_ rendition: RenditionState, markers: MarkerBook) -> MediaPlaylist {
        let overlay = markers.overlay(
            entries: rendition.window.entries, cueTags: configuration.cueTagOptions,
            interstitials: configuration.liveInterstitials)
        return rendition.window.playlist(
            independentSegments: rendition.allSegmentsIndependent, dateRanges: overlay.dateRanges,
            extraTags: overlay.extraTags, decoration: decoration(for: rendition))
    }

    /// True when the rendition has an I-frame playlist: the channel has them on (`iFramePlaylists`) and the
    /// rendition carries video.
    func hasIFramePlaylist(_ rendition: RenditionState) -> Bool {
        configuration.iFramePlaylists && !rendition.isFollower && rendition.tracks.contains { $0.kind == .video }
    }

    /// The rendition's I-frame playlist (`{r}/iframes.m3u8`), decorated like its media playlist.
    func iFramePlaylist(_ rendition: RenditionState) -> MediaPlaylist {
        let decorated = decoration(for: rendition)
        return rendition.window.iFramePlaylist(decoration: decorated, encrypted: decorated.keys != nil)
    }

    /// The EXT-X-I-FRAME-STREAM-INF lines of `renditions` (the variants' video renditions, in their order): one per
    /// rendition with an I-frame playlist, its video codec and resolution, the I-frame bit rates; no AUDIO.
    private func iFrameStreams(_ renditions: [RenditionState], _ stated: [String: StatedRates]) -> [IFrameStream] {
        renditions.filter(hasIFramePlaylist).map { rendition in
            let video = rendition.tracks.first { $0.kind == .video }
            return withVideoAttributes(
                IFrameStream(
                    uri: "\(rendition.name)/iframes.m3u8",
                    bandwidth: max(stated[rendition.name]?.iFramePeak ?? 0, 1),
                    averageBandwidth: max(stated[rendition.name]?.iFrameAverage ?? 0, 1),
                    codecs: rendition.tracks.filter { $0.kind == .video }.compactMap(\.codec),
                    resolution: video.flatMap(Self.resolution)),
                of: rendition)
        }
    }

    /// `stream` (a variant or an I-frame stream of `rendition`) with the attributes of the rendition's video track:
    /// VIDEO-RANGE and SUPPLEMENTAL-CODECS as probed, HDCP-LEVEL and ALLOWED-CPC as the rendition configures them,
    /// else as the channel does; unchanged without video (audio-only variants).
    private func withVideoAttributes<Stream: VideoAttributed>(
        _ stream: Stream, of rendition: RenditionState
    ) -> Stream {
        guard let video = rendition.tracks.first(where: { $0.kind == .video }) else { return stream }
        let configured = configuration.renditions.first { $0.name == rendition.name }
        var stream = stream
        stream.videoAttributes = VideoAttributes(
            supplementalCodecs: video.supplementalCodec.map { [$0] } ?? [],
            videoRange: video.transferCharacteristics.map(HLSVideoRange.init(transferCharacteristics:)),
            hdcpLevel: configured?.hdcpLevel ?? configuration.hdcpLevel,
            allowedCPC: configured?.allowedCPC ?? configuration.allowedCPC)
        return stream
    }

    /// The multivariant playlist of the renditions that delivered media: grouped by the rendition layout (video
    /// variants referencing audio and subtitle groups), else one variant per rendition in channel order (radio,
    /// video with muxed audio). Every render passes `MultivariantPlaylist.validate()` (asserted in debug builds).
    package func multivariant() -> MultivariantPlaylist? {
        guard renditions.contains(where: { !$0.tracks.isEmpty }) else { return nil }
        let layout = layout()
        var playlist = layout.isGrouped ? groupedMultivariant(layout) : oneVariantPerRendition()
        playlist?.sessionKeys = sessionKeys()
        assert(playlist?.validate().isEmpty ?? true, "multivariant playlist breaks rule 35: \(playlist!.validate())")
        return playlist
    }

    /// The bit rates the multivariant playlist states for each rendition (BANDWIDTH, AVERAGE-BANDWIDTH and the
    /// I-frame stream's): the peak and the average of the segments the rendition lists (as served: with AES-128
    /// padding), else of the ones it still serves after they left the window, else the running statistics.
    ///
    /// A function of the listed entries, not of the process's history: an origin restarted on its store, and every
    /// origin of a redundancy group listing the same entries, state the same values (invariant 9 extended to the
    /// multivariant playlist). A running peak since start would differ between a restarted origin and its peer.
    func statedRates(_ renditions: [RenditionState]) -> [String: StatedRates] {
        var stated: [String: StatedRates] = [:]
        for rendition in renditions {
            var rates = StatedRates()
            for entries in [rendition.window.entries, rendition.window.retained.map(\.entry)] {
                rates = StatedRates()
                var bytes: Int64 = 0
                var milliseconds: Int64 = 0
                var iFrameBytes: Int64 = 0
                var iFrameMilliseconds: Int64 = 0
                for entry in entries where entry.durationMilliseconds > 0 {
                    guard let segment = entry.bytes else { continue }
                    let served = Int64(segment.count + cipherPadding(segment.count, msn: entry.msn))
                    bytes += served
                    milliseconds += entry.durationMilliseconds
                    rates.peak = max(rates.peak, Int(served * 8 * 1000 / entry.durationMilliseconds))
                    if let end = entry.iFrameRangeEnd {
                        let iFrame = Int64(end + cipherPadding(end, msn: entry.msn))
                        iFrameBytes += iFrame
                        iFrameMilliseconds += entry.durationMilliseconds
                        rates.iFramePeak = max(rates.iFramePeak, Int(iFrame * 8 * 1000 / entry.durationMilliseconds))
                    }
                }
                guard milliseconds > 0 else { continue }
                rates.average = Int(bytes * 8 * 1000 / milliseconds)
                if iFrameMilliseconds > 0 { rates.iFrameAverage = Int(iFrameBytes * 8 * 1000 / iFrameMilliseconds) }
                break
            }
            if rates.peak == 0 {
                let statistics = rendition.statistics
                rates = StatedRates(
                    peak: statistics.peakBitrate, average: statistics.averageBitrate,
                    iFramePeak: statistics.iFramePeakBitrate, iFrameAverage: statistics.iFrameAverageBitrate)
            }
            stated[rendition.name] = rates
        }
        return stated
    }

    /// The CLOSED-CAPTIONS group of the channel: one member per caption channel found in a video rendition.
    static let closedCaptionsGroup = "cc"

    /// Caption channels found in any video rendition, in INSTREAM-ID order.
    private func captionChannels(in videos: [RenditionState]) -> [ClosedCaptionChannel] {
        Set(videos.filter { $0.tracks.contains { $0.kind == .video } }.flatMap(\.closedCaptions)).sorted()
    }

    private func captionRenditions(_ channels: [ClosedCaptionChannel]) -> [Rendition] {
        channels.map { channel in
            Rendition(
                type: .closedCaptions, groupID: Self.closedCaptionsGroup, name: channel.instreamID, isDefault: false,
                autoselect: true, instreamID: channel.instreamID)
        }
    }

    /// Without groups: one variant per media rendition that has media, configured renditions in their configured
    /// order, then those created by pushes by name. Never in order of arrival: origins of a redundancy group see one
    /// encoder's renditions arrive in different orders and must list the same playlist.
    private func oneVariantPerRendition() -> MultivariantPlaylist? {
        let configured = Dictionary(
            configuration.renditions.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
        let started = renditions.filter { rendition in
            guard !rendition.tracks.isEmpty else { return false }
            if case .subtitles = rendition.role { return false }
            return !rendition.tracks.allSatisfy { $0.kind == .subtitles }
        }.sorted { (configured[$0.name] ?? .max, $0.name) < (configured[$1.name] ?? .max, $1.name) }
        guard !started.isEmpty else { return nil }
        let captions = captionChannels(in: started)
        let stated = statedRates(started)
        let variants = started.map { rendition -> VariantStream in
            let video = rendition.tracks.first { $0.kind == .video }
            let rates = stated[rendition.name] ?? StatedRates()
            return withVideoAttributes(
                VariantStream(
                    uri: "\(rendition.name)/index.m3u8",
                    bandwidth: max(rates.peak, 1),
                    averageBandwidth: max(rates.average, 1),
                    codecs: rendition.tracks.compactMap(\.codec),
                    resolution: video.flatMap(Self.resolution),
                    frameRate: video?.frameRate,
                    closedCaptions: captions.isEmpty ? nil : .group(Self.closedCaptionsGroup)),
                of: rendition)
        }
        var playlist = MultivariantPlaylist(
            independentSegments: started.allSatisfy(\.allSegmentsIndependent), renditions: captionRenditions(captions),
            variants: variants)
        playlist.iFrameStreams = iFrameStreams(started, stated)
        return playlist
    }

    /// Video variants referencing the layout's groups: each video rendition once per (audio group, subtitle group)
    /// pair, audio groups varying slowest; BANDWIDTH and AVERAGE-BANDWIDTH add the largest audio and subtitle rate
    /// of the groups, CODECS the groups' audio codecs (and `stpp.ttml.im1t` for IMSC, never `wvtt`).
    private func groupedMultivariant(_ layout: RenditionLayout) -> MultivariantPlaylist {
        let byName = Dictionary(renditions.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let videos = layout.videoVariants.compactMap { byName[$0] }
        let captions = captionChannels(in: videos)
        let closedCaptions: ClosedCaptionsReference =
            captions.isEmpty ? .none : .group(Self.closedCaptionsGroup)
        var media: [Rendition] = []
        for group in layout.groups {
            for member in group.members {
                let audio = byName[member.rendition]?.tracks.first { $0.kind == .audio }
                media.append(
                    Rendition(
                        type: group.type, groupID: group.id, name: member.name, uri: "\(member.rendition)/index.m3u8",
                        language: member.language, isDefault: member.isDefault, autoselect: member.autoselect,
                        channels: group.type == .audio ? "\(audio?.channelCount ?? 2)" : nil,
                        forced: group.type == .subtitles ? member.forced : nil))
            }
        }
        media += captionRenditions(captions)
        let stated = statedRates(renditions)
        func largest(_ group: MediaGroup?, _ rate: (StatedRates) -> Int) -> Int {
            group?.members.compactMap { stated[$0.rendition].map(rate) }.max() ?? 0
        }
        func audioCodecs(_ group: MediaGroup?) -> [String] {
            var codecs: [String] = []
            for member in group?.members ?? [] {
                for track in byName[member.rendition]?.tracks ?? [] where track.kind == .audio {
                    if let codec = track.codec, !codecs.contains(codec) { codecs.append(codec) }
                }
            }
            return codecs
        }
        let audioGroups: [MediaGroup?] = layout.groups.filter { $0.type == .audio }.map(Optional.some)
        let subtitleGroups: [MediaGroup?] = layout.groups.filter { $0.type == .subtitles }.map(Optional.some)
        var variants: [VariantStream] = []
        for audio in audioGroups.isEmpty ? [nil] : audioGroups {
            for subtitles in subtitleGroups.isEmpty ? [nil] : subtitleGroups {
                for video in videos {
                    let track = video.tracks.first { $0.kind == .video }
                    let rates = stated[video.name] ?? StatedRates()
                    let peak = rates.peak + largest(audio, \.peak) + largest(subtitles, \.peak)
                    let average = rates.average + largest(audio, \.average) + largest(subtitles, \.average)
                    // The video rendition's own codecs: its video, and its muxed audio if it carries any.
                    let videoCodecs = video.tracks.filter { $0.kind == .video || $0.kind == .audio }.compactMap(
                        \.codec)
                    variants.append(
                        withVideoAttributes(
                            VariantStream(
                                uri: "\(video.name)/index.m3u8", bandwidth: max(peak, 1),
                                averageBandwidth: max(average, 1),
                                codecs: videoCodecs + audioCodecs(audio)
                                    + (subtitles?.isIMSC == true ? ["stpp.ttml.im1t"] : []),
                                resolution: track.flatMap(Self.resolution), frameRate: track?.frameRate,
                                audioGroup: audio?.id, subtitlesGroup: subtitles?.id, closedCaptions: closedCaptions),
                            of: video))
                }
            }
        }
        if layout.audioOnlyVariants {
            for case let group? in audioGroups {
                guard let member = group.members.first(where: \.isDefault), let audio = byName[member.rendition]
                else { continue }
                variants.append(
                    VariantStream(
                        uri: "\(audio.name)/index.m3u8", bandwidth: max(stated[audio.name]?.peak ?? 0, 1),
                        averageBandwidth: max(stated[audio.name]?.average ?? 0, 1),
                        codecs: audio.tracks.filter { $0.kind == .audio }.compactMap(\.codec), audioGroup: group.id,
                        closedCaptions: captions.isEmpty ? ClosedCaptionsReference.none : nil))
            }
        }
        let members =
            layout.videoVariants + layout.groups.filter { $0.type == .audio }.flatMap { $0.members.map(\.rendition) }
        var playlist = MultivariantPlaylist(
            independentSegments: members.allSatisfy { byName[$0]?.allSegmentsIndependent ?? true }, renditions: media,
            variants: variants)
        playlist.iFrameStreams = iFrameStreams(videos, stated)
        return playlist
    }

    private static func resolution(_ track: TrackInfo) -> Resolution? {
        track.width.flatMap { width in track.height.map { Resolution(width: width, height: $0) } }
    }

    /// Status of the channel and its renditions.
    package func status(name: String, nowMilliseconds now: Int64, journalNote: String? = nil) -> ChannelStatus {
        var status = ChannelStatus(
            name: name,
            source: configuration.source == .push ? "push" : "test-source",
            targetDuration: targetDuration,
            lastClosedMSN: slotClock.closedThrough,
            journal: journalNote,
            renditions: renditions.map { rendition in
                let edge = rendition.window.entries.last
                let feed: String
                var since: Int64?
                switch rendition.feed {
                case .waiting: feed = "waiting"
                case .live(let at):
                    feed = "live"
                    since = at
                case .dropped(let at):
                    feed = "dropped"
                    since = at
                }
                let video = rendition.tracks.first { $0.kind == .video }
                return RenditionStatus(
                    name: rendition.name, feed: feed,
                    feedSince: since.map { ProgramDateTime(millisecondsSince1970: $0).formatted },
                    liveEdgeMSN: edge?.msn,
                    liveEdgeProgramDateTime: edge.map {
                        ProgramDateTime(millisecondsSince1970: $0.programDateTimeMilliseconds).formatted
                    },
                    liveEdgeLagMilliseconds: edge.map { now - $0.endMilliseconds },
                    mediaSequence: rendition.window.mediaSequence,
                    discontinuitySequence: rendition.window.discontinuitySequence,
                    windowSegments: rendition.window.entries.count,
                    windowMilliseconds: rendition.window.durationMilliseconds,
                    retainedSegments: rendition.window.retained.count,
                    segmentsAccepted: rendition.statistics.segmentsAccepted,
                    segmentsRejected: rendition.statistics.segmentsRejected,
                    gapsWritten: rendition.statistics.gapsWritten,
                    discontinuities: rendition.statistics.discontinuities,
                    driftMilliseconds: rendition.statistics.driftMilliseconds,
                    peakBitrate: rendition.statistics.peakBitrate,
                    averageBitrate: rendition.statistics.averageBitrate,
                    codecs: rendition.tracks.compactMap(\.codec),
                    resolution: video.flatMap { v in v.width.flatMap { w in v.height.map { "\(w)x\($0)" } } },
                    container: rendition.container?.rawValue,
                    lastRejection: rendition.statistics.lastRejection,
                    timelineConflicts: rendition.statistics.timelineConflicts,
                    hintsRead: rendition.statistics.hintsRead,
                    hintsRefused: rendition.statistics.hintsRefused,
                    role: rendition.isFollower ? "subtitles" : "media",
                    emptyCueSegments: rendition.statistics.emptyCueSegments,
                    lateCuesSuperseded: rendition.statistics.lateCuesSuperseded)
            })
        if isCatchingUp {
            status.peerWait = "catching up"
        } else if let held = heldOpening {
            status.peerWait = held.first ? "joining" : "agreeing on msn \(held.msn)"
        }
        let notes = layout().contradictions
        if multivariantHint.read + multivariantHint.refused > 0 || !notes.isEmpty {
            status.multivariantHints = MultivariantHintStatus(
                read: multivariantHint.read, refused: multivariantHint.refused,
                contradictions: multivariantHint.contradictions,
                members: multivariantHint.hint?.members.map(\.rendition) ?? [], layoutNotes: notes)
        }
        return status
    }
}

/// Channel status as the admin API reports it.
public struct ChannelStatus: Sendable, Codable, Hashable {
    public let name: String
    public let source: String
    public let targetDuration: Int?
    /// Every rendition has an entry for every MSN up to this one.
    public let lastClosedMSN: UInt64?
    /// What happened to the state and marker journals (restored, unreadable, write failures), if anything.
    public let journal: String?
    public let renditions: [RenditionStatus]
    /// The channel's durable store; nil without one.
    public var storage: StorageStatus? = nil
    /// What happened to the encoder's multivariant hints; nil when none came.
    public var multivariantHints: MultivariantHintStatus? = nil
    /// AES-128 encryption; nil for a channel that never encrypted.
    public var encryption: EncryptionStatus? = nil
    /// In a redundancy group, what the channel waits for from its peers: `catching up` (after a restart, the slots
    /// missed while down), `joining` (its first slot, for their discontinuity sequence); nil when nothing.
    public var peerWait: String? = nil
    /// SCTE-35 cues read from the pushed stream and the placement error of their out-points; nil while no
    /// section came.
    public var inbandCues: InbandCueStatus? = nil
}

/// The encoder's multivariant hints as the admin API reports them.
public struct MultivariantHintStatus: Sendable, Codable, Hashable {
    /// Hints read.
    public let read: Int
    /// Hints refused (400): not a multivariant playlist, a bad URI, NAME or DEFAULT twice in a group, a bad LANGUAGE.
    public let refused: Int
    /// Statements of read hints the configuration overrode.
    public let contradictions: Int
    /// The renditions the current hint places in groups.
    public let members: [String]
    /// Why the layout departs from the hint or the configuration now (the configuration wins, the probe overrules,
    /// muxed audio keeps one variant per rendition); empty when it does not.
    public var layoutNotes: [String] = []
}

/// The state of a channel's durable store, as the admin API and metrics report it.
public struct StorageStatus: Sendable, Codable, Hashable {
    /// `ok`, or `degraded` while writes fail (pushes are refused with 507 meanwhile).
    public let state: String
    /// The newest failure while degraded.
    public let reason: String?
    /// When the failures started (ISO 8601), while degraded.
    public let since: String?
    /// Bytes the channel's store holds on disk.
    public let bytes: Int64
    /// Failed store writes since the start.
    public let writeFailures: Int
    /// Lowest MSN still in the store (older ones were evicted).
    public let horizonMSN: UInt64
    /// Why the store's file system is nearly full while its writes still succeed (under `storage.minFreeBytes` with
    /// no time-shift left to evict): content steering judges the channel failing meanwhile; nil otherwise.
    public let nearlyFull: String?

    public init(
        state: String, reason: String?, since: String?, bytes: Int64, writeFailures: Int, horizonMSN: UInt64,
        nearlyFull: String? = nil
    ) {
        self.nearlyFull = nearlyFull
        self.state = state
        self.reason = reason
        self.since = since
        self.bytes = bytes
        self.writeFailures = writeFailures
        self.horizonMSN = horizonMSN
    }
}

/// Rendition status as the admin API reports it.
public struct RenditionStatus: Sendable, Codable, Hashable {
    public let name: String
    /// `waiting`, `live` or `dropped`.
    public let feed: String
    public let feedSince: String?
    public let liveEdgeMSN: UInt64?
    public let liveEdgeProgramDateTime: String?
    /// Shared clock minus the end of the newest entry, ms.
    public let liveEdgeLagMilliseconds: Int64?
    public let mediaSequence: UInt64?
    public let discontinuitySequence: UInt64
    public let windowSegments: Int
    public let windowMilliseconds: Int64
    public let retainedSegments: Int
    public let segmentsAccepted: Int
    public let segmentsRejected: Int
    public let gapsWritten: Int
    public let discontinuities: Int
    public let driftMilliseconds: Int64
    public let peakBitrate: Int
    public let averageBitrate: Int
    public let codecs: [String]
    public let resolution: String?
    public let container: String?
    public let lastRejection: String?
    /// Segments refused as another timeline pushed to the same rendition (see `RenditionStatistics`).
    public let timelineConflicts: Int
    /// Playlist hints read.
    public let hintsRead: Int
    /// Playlist hints refused (invalid or too large).
    public let hintsRefused: Int
    /// `media` (audio/video: fills slots) or `subtitles` (follows them).
    public let role: String
    /// Subtitle renditions: empty cue segments written for slots media delivered without cues.
    public let emptyCueSegments: Int
    /// Subtitle renditions: late cue files dropped for the cue file paired with the slot they were moved to.
    public let lateCuesSuperseded: Int
}

/// Bit rates stated in a multivariant playlist for one rendition, in bits per second (`ChannelState.statedRates`).
struct StatedRates: Sendable, Hashable {
    var peak = 0
    var average = 0
    var iFramePeak = 0
    var iFrameAverage = 0
}
