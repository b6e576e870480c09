import HLSPlaylist
import MediaProbe
import SharedBytes
import Synchronization

/// What the HTTP layer serves for one rendition: an immutable value published after every change.
public final class RenditionSnapshot: Sendable {
    /// Rendition name.
    public let name: String
    /// The rendered media playlist; nil until the rendition has an entry.
    public let playlist: SharedBytes?
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
    /// Forms of the playlist derived on first use (e.g. gzip).
    public let derived = DerivedBytes()
    /// An object derived from this playlist version on first use (the HTTP layer keeps its prepared responses here).
    public let derivedObject = DerivedObject()

    init(
        name: String, playlist: SharedBytes?, version: UInt64, modifiedMilliseconds: Int64, targetDuration: Int,
        entries: [WindowEntry], initSections: [Int: InitSection]
    ) {
        self.name = name
        self.playlist = playlist
        self.version = version
        self.modifiedMilliseconds = modifiedMilliseconds
        self.targetDuration = targetDuration
        self.entries = entries
        self.initSections = initSections
    }

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
    /// Time the multivariant playlist last changed, ms since the epoch.
    public let multivariantModifiedMilliseconds: Int64
    /// Renditions by name.
    public let renditions: [String: RenditionSnapshot]
    /// Forms of the multivariant playlist derived on first use (e.g. gzip); shared by consecutive snapshots whose
    /// multivariant playlist is the same.
    public let derived: DerivedBytes
    /// An object derived from the multivariant playlist on first use (the HTTP layer keeps its prepared responses
    /// here); shared like `derived`.
    public let derivedObject: DerivedObject

    package init(
        name: String, version: UInt64, multivariantPlaylist: SharedBytes?, multivariantModifiedMilliseconds: Int64,
        renditions: [String: RenditionSnapshot], derivedFrom previous: ChannelSnapshot? = nil
    ) {
        if let previous, let bytes = multivariantPlaylist, previous.multivariantPlaylist === bytes,
            previous.multivariantModifiedMilliseconds == multivariantModifiedMilliseconds
        {
            derived = previous.derived
            derivedObject = previous.derivedObject
        } else {
            derived = DerivedBytes()
            derivedObject = DerivedObject()
        }
        self.name = name
        self.version = version
        self.multivariantPlaylist = multivariantPlaylist
        self.multivariantModifiedMilliseconds = multivariantModifiedMilliseconds
        self.renditions = renditions
    }
}

/// Bytes derived from a snapshot on first use and kept as long as the snapshot lives (e.g. the gzip form of a
/// playlist): computed once per change, never per request.
public final class DerivedBytes: Sendable {
    private let store = Mutex<[String: SharedBytes]>([:])

    public init() {}

    /// The bytes stored under `key`, made by `make` the first time.
    public func value(_ key: String, make: () -> SharedBytes) -> SharedBytes {
        if let existing = store.withLock({ $0[key] }) { return existing }
        let made = make()
        return store.withLock { store in
            if let raced = store[key] { return raced }
            store[key] = made
            return made
        }
    }
}
