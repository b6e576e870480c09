package import HLSPlaylist
package import LiveTimeline

/// What playback authorization and encryption add to a rendition's media (and I-frame) playlists: the same for every
/// viewer, so the texts stay cacheable. Applied by `LiveWindow.playlist` / `iFramePlaylist` and the DVR renderer.
package struct PlaylistDecoration: Sendable {
    /// EXT-X-DEFINE lines of media playlists: `[.import("token")]`, `[.queryParameter("token")]` or none.
    package var definitions: [VariableDefinition]
    /// Appended to every segment, init section and key URI: `?token={$token}` or "".
    package var uriSuffix: String
    /// The key schedule; nil: no EXT-X-KEY.
    package var keys: KeySchedule?
    /// The URI of a key period's key, relative to the media playlist, suffix included.
    package var keyURI: @Sendable (UInt64) -> String

    package init(
        definitions: [VariableDefinition] = [], uriSuffix: String = "", keys: KeySchedule? = nil,
        keyURI: @escaping @Sendable (UInt64) -> String = { "../key-\($0).key" }
    ) {
        self.definitions = definitions
        self.uriSuffix = uriSuffix
        self.keys = keys
        self.keyURI = keyURI
    }

    /// No authorization, no encryption: playlists exactly as without this feature.
    package static let none = PlaylistDecoration()

    /// The EXT-X-KEY to state before segment `msn`: where the key changes (the MSN alone decides, so DVR blocks and
    /// live playlists agree) and on the first listed segment; nil: the key above still applies. A clear MSN gets
    /// METHOD=NONE only when an earlier span encrypted.
    package func key(at msn: UInt64, isFirstListed: Bool) -> EncryptionKey? {
        guard let keys, isFirstListed || keys.keyChanges(at: msn) else { return nil }
        if let period = keys.period(of: msn) { return .aes128(uri: keyURI(period)) }
        guard let first = keys.spans.first, first.fromMSN <= msn else { return nil }
        return isFirstListed ? nil : EncryptionKey.none
    }

    /// Applies the decoration to one rendered segment: suffix on its URI and init section, its EXT-X-KEY.
    package func apply(to segment: inout MediaSegment, msn: UInt64, isFirstListed: Bool) {
        if !uriSuffix.isEmpty {
            segment.uri += uriSuffix
            segment.map?.uri += uriSuffix
        }
        segment.key = key(at: msn, isFirstListed: isFirstListed)
    }
}
