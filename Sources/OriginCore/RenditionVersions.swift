import HLSPackaging
import LiveTimeline
import Synchronization

/// What one rendition last published, readable without a lock: the HTTP layer's per-thread answer caches check an
/// entry against it on every hit, so a publish invalidates only what it changed. A media playlist's answer holds
/// while `version` is the rendition version it was derived from; a segment's (its bytes never change) while its MSN
/// is at or above `retentionFloor`; a part's while its MSN is at or above `partFloor`.
///
/// Stored by `Channel.publish` after the snapshot it describes, so a reader that loads a value and then reads the
/// snapshot sees that snapshot or a newer one.
public final class RenditionVersions: Sendable {
    private let versionValue = Atomic<UInt64>(0)
    private let retentionFloorValue = Atomic<UInt64>(.max)
    private let partFloorValue = Atomic<UInt64>(.max)
    private let retiredValue = Atomic<Bool>(false)

    init() {}

    /// True once the channel object it belongs to was replaced by a reload: nothing derived from it holds.
    public var isRetired: Bool { retiredValue.load(ordering: .acquiring) }

    /// Marks it retired or not (`Channel.retire`, `Channel.resume`).
    func setRetired(_ retired: Bool) { retiredValue.store(retired, ordering: .releasing) }

    /// `RenditionSnapshot.version` of the rendition's latest snapshot.
    public var version: UInt64 { versionValue.load(ordering: .acquiring) }
    /// The lowest MSN whose segment is still served from memory (listed or retained); `UInt64.max` while none is.
    public var retentionFloor: UInt64 { retentionFloorValue.load(ordering: .acquiring) }
    /// The lowest MSN whose parts' URLs still answer; `UInt64.max` while none do.
    public var partFloor: UInt64 { partFloorValue.load(ordering: .acquiring) }

    /// Takes the values of `rendition` (called under the channel's state lock, after its snapshot was published).
    func update(to rendition: RenditionSnapshot) {
        retentionFloorValue.store(rendition.entries.first?.msn ?? .max, ordering: .releasing)
        partFloorValue.store(rendition.lowLatency?.parts.keys.min() ?? .max, ordering: .releasing)
        versionValue.store(rendition.version, ordering: .releasing)
    }
}

extension Channel {
    /// The lock-free versions of `rendition`; nil before the rendition is published.
    public func versions(ofRendition rendition: String) -> RenditionVersions? {
        renditionVersions.withLock { $0[rendition] }
    }

    /// Updates the versions of the renditions whose snapshot changed (part of `publish`).
    func publishRenditionVersions(_ snapshot: ChannelSnapshot, previous: ChannelSnapshot) {
        renditionVersions.withLock { table in
            for (name, rendition) in snapshot.renditions {
                if let versions = table[name] {
                    if previous.renditions[name]?.version != rendition.version { versions.update(to: rendition) }
                } else {
                    let versions = RenditionVersions()
                    versions.update(to: rendition)
                    table[name] = versions
                }
            }
        }
    }
}
