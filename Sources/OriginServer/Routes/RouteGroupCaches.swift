import HLSPackaging
import HLSPlaylist
import MicroHTTPD
import OriginCore
import SharedBytes
import Synchronization

/// What the live and playback routes (`live.*`, and the fast path in front of them) keep between requests.
final class LiveRouteCaches: Sendable {
    /// Per-thread prepared answers of plain `/live` GETs (`OriginHTTPHandler.handlePlain`).
    let answers = LiveAnswerCache()
    /// Prepared `/live` answers and gzip forms of the published playlist versions, segments and parts, shared by
    /// threads.
    let prepared = LiveResponseStore()
    /// Prepared Low-Latency playlist forms (delta updates, blocking answers), shared by threads.
    let lowLatency = LowLatencyAnswerStore()
}

/// What the time-shift routes (DVR `?start=` on the live playlists, `/vod`) keep between requests.
final class TimeShiftRouteCaches: Sendable {
    /// Rendered blocks of DVR and VOD playlists, shared by threads.
    let blocks = DVRPlaylistCache()
    /// Gzip forms of recent DVR and VOD playlists.
    let gzip = DVRGzipCache()
}

/// Prepared answers of Low-Latency playlist forms other than the regular one (`LiveResponseStore` keeps that):
/// per rendition, the newest version of each delta update and of the blocking forms (which differ in
/// Cache-Control), with their gzip forms. A blocking reload released for thousands of clients builds each form
/// once.
final class LowLatencyAnswerStore: Sendable {
    /// Which form: the delta asked (nil: the full playlist) and whether it answers a blocking request.
    struct Form: Hashable {
        let skip: SkipRequest?
        let blocking: Bool
    }

    private struct Key: Hashable {
        let channel: String
        let rendition: String
        let form: Form
    }

    private let forms = Mutex<[Key: PlaylistResponses]>([:])

    init() {}

    /// The prepared answers of `bytes`, form `form` of `rendition`'s current playlist.
    func playlist(
        channel: String, of rendition: RenditionSnapshot, bytes: SharedBytes, form: Form
    )
        -> PlaylistResponses
    {
        let key = Key(channel: channel, rendition: rendition.name, form: form)
        let modified = rendition.modifiedMilliseconds
        return forms.withLock { forms in
            let current = forms[key]
            if let current, current.matches(bytes, modifiedMilliseconds: modified) { return current }
            let made = PlaylistResponses(bytes: bytes, order: rendition.version, modifiedMilliseconds: modified)
            if current.map({ $0.order < made.order }) ?? true { forms[key] = made }
            return made
        }
    }
}

/// Gzip forms of the DVR playlists answered lately, by the hash of their text: many players ask for the same
/// start-over or catch-up playlist, and a 24 h one is 3.4 MB of text.
final class DVRGzipCache: Sendable {
    /// Forms kept; the table is emptied when it would hold more.
    static let capacity = 32
    private let forms = Mutex<[UInt64: (bytes: SharedBytes, gzipped: SharedBytes)]>([:])

    /// The gzip form of `bytes` (whose FNV-1a hash is `hash`), compressed once (level 1); nil if it cannot be.
    func gzipped(_ bytes: SharedBytes, hash: UInt64) -> SharedBytes? {
        if let form = forms.withLock({ $0[hash] }), form.bytes == bytes { return form.gzipped }
        guard let gzipped = Gzip.compress(bytes, level: 1) else { return nil }
        forms.withLock { forms in
            if forms.count >= Self.capacity { forms.removeAll(keepingCapacity: true) }
            forms[hash] = (bytes, gzipped)
        }
        return gzipped
    }
}
