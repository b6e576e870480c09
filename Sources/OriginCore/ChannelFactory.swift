import Glibc
import LiveTimeline
import Logging
import Markers
import Persistence

/// Builds a channel from its settings with what every channel of the origin shares (clock, journal, store,
/// recordings, shared markers): at start, on a push that creates a channel, and when a reload starts or re-opens one.
/// The channel continues from its journal and store.
struct ChannelFactory: Sendable {
    let clock: any OriginClock
    let logger: Logger
    let journal: StateJournal?
    let store: SegmentStore?
    let recordings: RecordingStore
    let sharedMarkers: (any SharedMarkerBooks)?
    /// Where the channels' marker journals live.
    let dataDirectory: String?
    /// What the inputs check of a configured channel before it is built (`Origin.init`'s `sourceCheck`).
    let sourceCheck: @Sendable (ChannelConfiguration) throws -> Void
    /// What the inputs do to a configured channel once built, before it is listed (`Origin.init`'s `sourcePrepare`).
    let sourcePrepare: @Sendable (Channel) -> Void

    /// The channel with `settings`.
    /// - Throws: `StoreError` when its part of the store cannot be opened, or when its key file exists but cannot
    ///   be read (an I/O error, a permission): the file may hold the secret every served key derives from, so the
    ///   channel does not start rather than re-key over it (at start the origin stops with the reason; a reload
    ///   keeps the running channel; a push is refused).
    func channel(_ settings: ChannelConfiguration) throws(StoreError) -> Channel {
        if let keys = journal.map(KeyJournal.beside), case .failure(let error) = keys.load(channel: settings.name),
            error.unreadable
        {
            logger.error(
                "channel not started: key file unreadable", metadata: ["hls.channel": "\(settings.name)", "reason": "\(error)"])
            throw StoreError(
                errno: EIO,
                message: "channel '\(settings.name)' not started: key file unreadable (\(error.message)); "
                    + "it is kept as it is: start or reload once it reads")
        }
        return Channel(
            configuration: settings, clock: clock, logger: logger, journal: journal,
            markers: MarkerStore.open(
                channel: settings.name, dataDirectory: dataDirectory, shared: sharedMarkers, logger: logger),
            store: try store?.channel(settings.name), recordings: recordings, outputs: Self.outputs(settings))
    }

    /// The outputs of a channel's timeline beside HLS (which every channel has, built by `Channel`): a publish hands
    /// each the new timeline value. A new output (DASH, a steering manifest) is a target conforming to
    /// `LiveTimeline.TimelineOutput` and one element here.
    static func outputs(_ settings: ChannelConfiguration) -> [any TimelineOutput] {
        []
    }

    /// With shared marker books, reads `channel`'s from the group's database off the caller's thread (a database
    /// round trip): for a channel created or re-opened while the origin runs, which another origin may hold markers
    /// for already.
    func readSharedMarkers(of channel: Channel) {
        guard sharedMarkers != nil else { return }
        BackgroundWork.run { channel.refreshSharedMarkers() }
    }

    /// A configured channel (at start, on reload): `sourceCheck` first, then `channel(_:)`, then `sourcePrepare`.
    func configuredChannel(_ settings: ChannelConfiguration) throws -> Channel {
        try sourceCheck(settings)
        let channel = try channel(settings)
        sourcePrepare(channel)
        return channel
    }
}
