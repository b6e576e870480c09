import HLSPlaylist

extension ChannelState {
    /// What playback authorization and encryption add to a rendition's playlists (DEFINEs, URI suffix, EXT-X-KEY).
    /// Every playlist of the rendition that takes a decoration gets it from here, so the features that decorate
    /// change only this function. Playback authorization only so far (`.none` without it).
    func decoration(for rendition: RenditionState) -> PlaylistDecoration {
        playbackDecorated(.none)
    }
}
