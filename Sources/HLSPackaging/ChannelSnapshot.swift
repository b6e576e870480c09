import HLSPlaylist
public import LiveTimeline
import MediaProbe
public import SharedBytes

/// What the HTTP layer serves for one rendition: an immutable value published after every change.
public final class RenditionSnapshot: Sendable {
    /// Rendition name.
    public let name: String
    /// The rendered media playlist; nil until the rendition has an entry.
    public let playlist: SharedBytes?
    /// The rendered I-frame playlist (`iframes.m3u8`); nil until the rendition has an entry, for renditions without
    /// video, and when the channel has I-frame playlists off.
    public let iFramePlaylist: SharedBytes?
    /// Increases with every new playlist of this rendition (validator for ETag).
    public let version: UInt64
    /// Time the playlist last changed, ms since the epoch (Last-Modified).
    public let modifiedMilliseconds: Int64
    /// EXT-X-TARGETDURATION in seconds (Cache-Control of the playlist derives from it).
    public let targetDuration: Int
    /// Listed and retained entries, ascending MSN.
    public let entries: [WindowEntry]
    /// Initialization sections by version.
    public let initSections: [Int: InitSection]
    /// The version of the initialization section the next pushed fMP4 segment is probed with; nil before any.
    public let currentInitVersion: Int?
    /// Parts, the last part and the preload hint, delta updates: nil for a regular rendition (no EXT-X-PART-INF).
    public let lowLatency: LowLatencySnapshot?
    /// Index in `entries` of the first entry the playlist lists (those before it are retained only).
    public let firstListedIndex: Int
    /// The shared clock minus the end of the newest accepted segment's PDT when it was accepted, ms (the rendition's
    /// PDT-versus-clock drift, as the admin status reports it).
    public let driftMilliseconds: Int64
    /// EXT-X-DISCONTINUITY-SEQUENCE of the playlist.
    public let discontinuitySequence: UInt64
    /// Whether the rendition's probed tracks include video, audio, subtitles (CMSD's object type of its segments).
    public let carriesVideo: Bool
    public let carriesAudio: Bool
    public let carriesSubtitles: Bool

    init(
        name: String, playlist: SharedBytes?, iFramePlaylist: SharedBytes? = nil, version: UInt64,
        modifiedMilliseconds: Int64, targetDuration: Int, entries: [WindowEntry], initSections: [Int: InitSection],
        currentInitVersion: Int?, lowLatency: LowLatencySnapshot? = nil, firstListedIndex: Int = 0,
        driftMilliseconds: Int64 = 0, discontinuitySequence: UInt64 = 0, carriesVideo: Bool = false,
        carriesAudio: Bool = false, carriesSubtitles: Bool = false
    ) {
        self.carriesVideo = carriesVideo
        self.carriesAudio = carriesAudio
        self.carriesSubtitles = carriesSubtitles
        self.discontinuitySequence = discontinuitySequence
        self.lowLatency = lowLatency
        self.firstListedIndex = firstListedIndex
        self.driftMilliseconds = driftMilliseconds
        self.name = name
        self.playlist = playlist
        self.iFramePlaylist = iFramePlaylist
        self.version = version
        self.modifiedMilliseconds = modifiedMilliseconds
        self.targetDuration = targetDuration
        self.entries = entries
        self.initSections = initSections
        self.currentInitVersion = currentInitVersion
    }

    /// The entries the playlist lists (the live window), ascending MSN.
    public var listedEntries: ArraySlice<WindowEntry> { entries[min(firstListedIndex, entries.count)...] }

    /// The entry (segment or GAP) with this MSN, while it is listed or retained.
    public func entry(msn: UInt64) -> WindowEntry? {
        var low = 0
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].msn < msn { low = middle + 1 } else { high = middle }
        }
        return low < entries.count && entries[low].msn == msn ? entries[low] : nil
    }
}

/// What the HTTP layer serves for one channel.
public final class ChannelSnapshot: Sendable {
    /// Channel name.
    public let name: String
    /// Increases with every publish.
    public let version: UInt64
    /// The rendered multivariant playlist; nil until some rendition has media.
    public let multivariantPlaylist: SharedBytes?
    /// Time the multivariant playlist (or its steered form) last changed, ms since the epoch.
    public let multivariantModifiedMilliseconds: Int64
    /// With Content Steering (`steering:`): the multivariant playlist with every variant and rendition listed per
    /// pathway and EXT-X-CONTENT-STEERING, which the live route serves; `multivariantPlaylist` stays the plain one
    /// (time-shift and recordings copy it). nil without steering.
    public let steeredMultivariant: SharedBytes?
    /// Renditions by name.
    public let renditions: [String: RenditionSnapshot]
    /// The channel's AES-128 keys and schedule; nil for a channel that never encrypted. Read by the HTTP thread and
    /// the accept-time encryption without taking the channel's state lock.
    public let encryption: SnapshotEncryption?
    /// The channel is catching up with its redundancy group after a restart: its playlists still show the window
    /// as it was before, and are not served.
    public let catchingUp: Bool
    /// What the packaging carries to the next render (`HLSPackager.render`).
    package let memory: PackagingMemory

    package init(
        name: String, version: UInt64, multivariantPlaylist: SharedBytes?, multivariantModifiedMilliseconds: Int64,
        renditions: [String: RenditionSnapshot], encryption: SnapshotEncryption? = nil, catchingUp: Bool = false,
        memory: PackagingMemory = PackagingMemory(), steeredMultivariant: SharedBytes? = nil
    ) {
        self.steeredMultivariant = steeredMultivariant
        self.catchingUp = catchingUp
        self.memory = memory
        self.name = name
        self.version = version
        self.multivariantPlaylist = multivariantPlaylist
        self.multivariantModifiedMilliseconds = multivariantModifiedMilliseconds
        self.renditions = renditions
        self.encryption = encryption
    }
}

/// What the HLS packaging remembers from one render of a channel to the next: kept in the snapshot it rendered, so
/// the timeline holds no presentation state.
package struct PackagingMemory: Sendable {
    /// The text of the last rendered multivariant playlist (its bytes and time change only when it does).
    var multivariantText: String?
    /// The text of the last steered multivariant playlist (`ChannelSnapshot.steeredMultivariant`).
    var steeredText: String?
    /// Low-Latency: the date range IDs each rendition's last render showed.
    var shownDateRanges: [String: Set<String>] = [:]
    /// Low-Latency: date range IDs that left the playlists, and when (ms), for `_HLS_skip=v2`.
    var removedDateRanges: [String: Int64] = [:]

    package init() {}
}

/// A channel's encryption as a snapshot shows it.
public final class SnapshotEncryption: Sendable {
    /// The 32-byte key secret (period keys are derived from it).
    public let secret: [UInt8]
    /// Which MSNs are encrypted under which key period.
    package let schedule: KeySchedule
    /// `{channel}`/`{period}` template of the key URI; nil: the origin serves `key-{period}.key`.
    public let keyURITemplate: String?
    /// The key period of the newest published MSN; nil while it is clear.
    public let currentPeriod: UInt64?
    /// The highest key period of any published MSN: keys above it are not in use yet.
    public let highestPeriod: UInt64?
    /// The key file was unreadable at start and the channel re-keyed.
    public let rekeyed: Bool

    package init(
        secret: [UInt8], schedule: KeySchedule, keyURITemplate: String?, currentPeriod: UInt64?,
        highestPeriod: UInt64?, rekeyed: Bool
    ) {
        self.secret = secret
        self.schedule = schedule
        self.keyURITemplate = keyURITemplate
        self.currentPeriod = currentPeriod
        self.highestPeriod = highestPeriod
        self.rekeyed = rekeyed
    }

    /// The key period of `msn`; nil when `msn` is clear.
    public func period(of msn: UInt64) -> UInt64? { schedule.period(of: msn) }

    /// The key part of the decoration of channel `channel`'s media playlists (live and DVR: both sit beside
    /// `index.m3u8` in the rendition's directory).
    package func decoration(channel: String) -> PlaylistDecoration {
        ChannelEncryption(secret: secret, schedule: schedule, keyURITemplate: keyURITemplate)
            .keyDecoration(channel: channel)
    }
}

extension ChannelSnapshot {
    /// The multivariant playlist's text without its EXT-X-I-FRAME-STREAM-INF lines, for copies served elsewhere
    /// (recordings): I-frame playlists are live only, so those URIs would name nothing there.
    public var multivariantWithoutIFrameStreams: String? {
        multivariantPlaylist.map { bytes in
            String(decoding: bytes.array, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
                .filter { !$0.hasPrefix("#EXT-X-I-FRAME-STREAM-INF:") }.joined(separator: "\n")
        }
    }
}
