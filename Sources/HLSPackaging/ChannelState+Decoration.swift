package import HLSPlaylist
package import LiveTimeline

/// The encryption part of a channel's status.
public struct EncryptionStatus: Sendable, Codable, Hashable {
    /// Segments per key of the span in force at the live edge; nil: segments are clear from `since` on.
    public let rotateEvery: UInt64?
    /// The key period of the newest published MSN; nil while it is clear.
    public let currentPeriod: UInt64?
    /// The first MSN of the span in force.
    public let since: UInt64?
    /// `active`, `clear` (turned off), or `rekeyed` (the key file was unreadable at start: a new secret).
    public let state: String

    public init(rotateEvery: UInt64?, currentPeriod: UInt64?, since: UInt64?, state: String) {
        self.rotateEvery = rotateEvery
        self.currentPeriod = currentPeriod
        self.since = since
        self.state = state
    }
}

extension ChannelEncryption {
    /// The key part of the decoration of the channel's media playlists (live and DVR: both sit beside `index.m3u8`
    /// in the rendition's directory); `.none` before any span.
    package func keyDecoration(channel: String) -> PlaylistDecoration {
        guard !schedule.spans.isEmpty else { return .none }
        return PlaylistDecoration(
            keys: schedule, keyURI: { [self] in keyURI(period: $0, channel: channel, relativePrefix: "../") })
    }
}

extension ChannelState {
    /// What playback authorization and encryption add to a rendition's playlists (DEFINEs, URI suffix, EXT-X-KEY):
    /// the channel's key schedule and key URIs (every rendition of a channel shares them), then the playback
    /// authorization (`ChannelState+Playback`). Every playlist of the rendition that takes a decoration gets it here.
    package func decoration(for rendition: RenditionState) -> PlaylistDecoration {
        playbackDecorated(encryption?.keyDecoration(channel: configuration.name) ?? .none)
    }

    /// The EXT-X-SESSION-KEY of the multivariant: the key of the newest published MSN's period, its URI relative
    /// to the multivariant; none while that MSN is clear.
    package func sessionKeys() -> [EncryptionKey] {
        guard let encryption, let newest = newestPublishedMSN, let period = encryption.schedule.period(of: newest)
        else { return [] }
        return [.aes128(uri: encryption.keyURI(period: period, channel: configuration.name, relativePrefix: ""))]
    }

    /// The encryption part of the next snapshot; nil for a channel that never encrypted.
    package func snapshotEncryption() -> SnapshotEncryption? {
        guard let encryption, !encryption.schedule.spans.isEmpty || encryption.rekeyed else { return nil }
        return SnapshotEncryption(
            secret: encryption.secret, schedule: encryption.schedule, keyURITemplate: encryption.keyURITemplate,
            currentPeriod: newestPublishedMSN.flatMap { encryption.schedule.period(of: $0) },
            highestPeriod: newestPublishedMSN.flatMap { encryption.schedule.highestPeriod(below: $0 + 1) },
            rekeyed: encryption.rekeyed)
    }
}
