package import HLSPlaylist
package import LiveTimeline

/// Playback authorization in the playlists: the media playlists hand the viewer's token on to every segment, init
/// section and key URI through an EXT-X-DEFINE variable, so they stay the same for every viewer (cacheable); the
/// multivariant playlist supplies the variable (its `VALUE` in `import` form, the request's query in `queryparam`).
extension ChannelState {
    /// The EXT-X-DEFINE variable that carries the viewer's token, and the query argument a request carries it in.
    package static let playbackTokenName = "token"
    /// Appended to segment, init section, key (and in `queryparam` form playlist) URIs.
    package static let playbackURISuffix = "?token={$token}"
    /// The start of the DEFINE line of an `import` form multivariant template; the viewer's token goes right after it.
    package static let playbackTemplateMarker = "#EXT-X-DEFINE:NAME=\"token\",VALUE=\""

    /// The playback half of a media (or I-frame) playlist's `PlaylistDecoration`: its EXT-X-DEFINE lines and the URI
    /// suffix. Empty without playback authorization.
    package func playbackDecoration() -> (definitions: [VariableDefinition], uriSuffix: String) {
        Self.playbackDecoration(configuration.playback)
    }

    /// The playback half of a media playlist's decoration for these settings.
    package static func playbackDecoration(
        _ playback: PlaybackAuthorization?
    ) -> (definitions: [VariableDefinition], uriSuffix: String) {
        guard let playback else { return ([], "") }
        switch playback.form {
        case .importVariable: return ([.import(name: playbackTokenName)], playbackURISuffix)
        case .queryParameter: return ([.queryParameter(name: playbackTokenName)], playbackURISuffix)
        }
    }

    /// `uri` with the token handed on: `?token={$token}`, or `&token={$token}` when it has a query already (an
    /// external key server's URI template). Unchanged when it already carries the variable.
    package static func appendingPlaybackToken(to uri: String) -> String {
        guard !uri.contains("{$\(playbackTokenName)}") else { return uri }
        return uri + (uri.contains("?") ? "&" : "?") + "\(playbackTokenName)={$\(playbackTokenName)}"
    }

    /// The multivariant playlist with playback authorization applied; unchanged without it.
    /// - `import`: `#EXT-X-DEFINE:NAME="token",VALUE=""`, a template: the HTTP layer puts each viewer's token between
    ///   the quotes (right after `playbackTemplateMarker`).
    /// - `queryparam`: `#EXT-X-DEFINE:QUERYPARAM="token"`, and the variant, I-frame stream and EXT-X-MEDIA URIs get
    ///   `?token={$token}` so that the media playlists are fetched with the token in their own query. One text for
    ///   every viewer.
    /// In both forms session key URIs get the suffix.
    package func playbackMultivariant(_ playlist: MultivariantPlaylist) -> MultivariantPlaylist {
        Self.playbackMultivariant(playlist, playback: configuration.playback)
    }

    /// `playbackMultivariant(_:)` for these settings.
    package static func playbackMultivariant(
        _ playlist: MultivariantPlaylist, playback: PlaybackAuthorization?
    ) -> MultivariantPlaylist {
        guard let playback else { return playlist }
        var playlist = playlist
        playlist.sessionKeys = playlist.sessionKeys.map { key in
            guard case .aes128(let uri, let iv) = key else { return key }
            return .aes128(uri: appendingPlaybackToken(to: uri), iv: iv)
        }
        switch playback.form {
        case .importVariable:
            playlist.definitions.append(.value(name: playbackTokenName, value: ""))
        case .queryParameter:
            playlist.definitions.append(.queryParameter(name: playbackTokenName))
            for index in playlist.variants.indices {
                playlist.variants[index].uri = appendingPlaybackToken(to: playlist.variants[index].uri)
            }
            for index in playlist.iFrameStreams.indices {
                playlist.iFrameStreams[index].uri = appendingPlaybackToken(to: playlist.iFrameStreams[index].uri)
            }
            for index in playlist.renditions.indices {
                playlist.renditions[index].uri = playlist.renditions[index].uri.map(appendingPlaybackToken(to:))
            }
        }
        return playlist
    }
}

extension ChannelState {
    /// `decoration` (the keys part, or `.none`) with the playback part added: the definitions, the URI suffix on
    /// segment and init section URIs, and the token handed on to key URIs. Unchanged without playback authorization.
    package func playbackDecorated(_ decoration: PlaylistDecoration) -> PlaylistDecoration {
        Self.playbackDecorated(decoration, playback: configuration.playback)
    }

    /// `playbackDecorated(_:)` for these settings.
    package static func playbackDecorated(
        _ decoration: PlaylistDecoration, playback: PlaybackAuthorization?
    ) -> PlaylistDecoration {
        guard playback != nil else { return decoration }
        var decorated = decoration
        (decorated.definitions, decorated.uriSuffix) = playbackDecoration(playback)
        let keyURI = decoration.keyURI
        decorated.keyURI = { appendingPlaybackToken(to: keyURI($0)) }
        return decorated
    }
}
