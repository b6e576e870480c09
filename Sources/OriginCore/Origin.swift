import HLSPlaylist
import Logging
import MediaProbe
import SharedBytes
import Synchronization

/// Settings of the origin core.
public struct OriginConfiguration: Sendable {
    /// Channels declared in the configuration file, in order.
    public var channels: [ChannelConfiguration]
    /// Ingest switches and limits.
    public var ingest: IngestConfiguration
    /// Where state that must survive a restart is kept: the state journal in `channels/`, markers in `markers/`;
    /// nil keeps state in memory only. Default: nil.
    public var dataDirectory: String?

    public init(
        channels: [ChannelConfiguration] = [], ingest: IngestConfiguration = IngestConfiguration(),
        dataDirectory: String? = nil
    ) {
        self.channels = channels
        self.ingest = ingest
        self.dataDirectory = dataDirectory
    }
}

/// The origin: all channels, the ingest entry point and the ingest loop's tick.
public final class Origin: Sendable {
    /// The settings the origin was started with.
    public let configuration: OriginConfiguration
    /// The shared clock.
    public let clock: any OriginClock
    private let logger: Logger
    private let channels: Mutex<[String: Channel]>
    private let channelOrder: Mutex<[String]>
    private let feeds: Mutex<[String: TestSourceFeed]>
    private let journal: StateJournal?

    /// Creates the configured channels and their test source feeds.
    public init(configuration: OriginConfiguration, clock: any OriginClock, logger: Logger) throws {
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        let journal = try configuration.dataDirectory.map { try StateJournal(directory: $0 + "/channels") }
        self.journal = journal
        var channels: [String: Channel] = [:]
        var feeds: [String: TestSourceFeed] = [:]
        for channelConfiguration in configuration.channels {
            guard OriginNames.isValid(channelConfiguration.name) else {
                throw IngestError.invalidName("channel", channelConfiguration.name)
            }
            let channel = Channel(
                configuration: channelConfiguration, clock: clock, logger: logger, journal: journal,
                markers: Self.markerStore(channelConfiguration.name, configuration, logger))
            channels[channel.name] = channel
            if channelConfiguration.source == .testSource {
                feeds[channel.name] = try TestSourceFeed(channel: channel, clock: clock, logger: logger)
            }
        }
        self.channels = Mutex(channels)
        self.channelOrder = Mutex(configuration.channels.map(\.name))
        self.feeds = Mutex(feeds)
    }

    /// The channel with this name.
    public func channel(named name: String) -> Channel? {
        // An uncontended lock costs tens of nanoseconds; a lock-free directory would need memory reclamation.
        channels.withLock { $0[name] }
    }

    /// All channels in configuration (then creation) order.
    public var allChannels: [Channel] {
        let order = channelOrder.withLock { $0 }
        return channels.withLock { channels in order.compactMap { channels[$0] } }
    }

    /// The test source feed of a `.testSource` channel.
    public func testSourceFeed(channel: String) -> TestSourceFeed? {
        feeds.withLock { $0[channel] }
    }

    /// Takes a pushed file: `.m3u8` files are encoder hints (parsed, not trusted), everything else must be media
    /// (an fMP4 initialization section or a segment; the container is detected from the bytes, not the name).
    public func ingest(channel channelName: String, rendition: String, fileName: String, body: SharedBytes)
        throws(IngestError) -> IngestReceipt
    {
        guard OriginNames.isValid(channelName) else { throw .invalidName("channel", channelName) }
        guard OriginNames.isValid(rendition) else { throw .invalidName("rendition", rendition) }
        guard body.count <= configuration.ingest.maxSegmentBytes else {
            throw .tooLarge(body.count, limit: configuration.ingest.maxSegmentBytes)
        }
        let wouldCreate =
            self.channel(named: channelName).map { $0.configuration.source == .push && !$0.hasRendition(rendition) }
            ?? true
        if configuration.ingest.autoCreate, wouldCreate { try refuseBeforeCreating(fileName: fileName, body: body) }
        let channel = try channelForIngest(channelName, rendition: rendition)
        if fileName.hasSuffix(".m3u8") {
            return try acceptHint(channel: channel, rendition: rendition, body: body)
        }
        guard body.count > 0 else { throw channel.recordRejection(rendition: rendition, .notMedia("empty body")) }
        let container = body.withUnsafeBytes { MediaProbe.detectContainer($0) }
        switch container {
        case .fragmentedMP4Init:
            return try channel.acceptInitSection(rendition: rendition, bytes: body)
        case .mpegTS, .fragmentedMP4Segment, .adts:
            return try channel.acceptSegment(rendition: rendition, bytes: body)
        case .webVTT:
            throw channel.recordRejection(
                rendition: rendition, .unprocessable("WebVTT renditions are not supported yet"))
        case nil:
            throw channel.recordRejection(rendition: rendition, Self.notMedia(fileName: fileName, body: body))
        }
    }

    /// Largest playlist hint read (1 MiB, about 30,000 segment lines): a bigger one is refused unread.
    /// Encoders should keep their playlist bounded (ffmpeg: `-hls_list_size` other than 0).
    public static let maxHintBytes = 1 << 20

    private static func notMedia(fileName: String, body: SharedBytes) -> IngestError {
        .notMedia(
            "'\(fileName)' is not MPEG-TS, fMP4, ADTS AAC or an .m3u8 playlist (first bytes: "
                + body.withUnsafeBytes { $0.prefix(8).map { String($0, radix: 16) }.joined(separator: " ") } + ")")
    }

    /// Throws what the push would get once its channel and rendition existed, so a refused push never leaves an
    /// auto-created channel or rendition behind (junk PUTs would otherwise create channels without limit).
    private func refuseBeforeCreating(fileName: String, body: SharedBytes) throws(IngestError) {
        if fileName.hasSuffix(".m3u8") {
            do {
                _ = try MediaPlaylist.parse(String(decoding: body.array, as: UTF8.self))
            } catch {
                throw IngestError.invalidHint(error)
            }
            return
        }
        guard body.count > 0 else { throw .notMedia("empty body") }
        let container = body.withUnsafeBytes { MediaProbe.detectContainer($0) }
        do {
            switch container {
            case .fragmentedMP4Init:
                _ = try body.withUnsafeBytes { raw throws(ProbeError) in try MediaProbe.probeInitSection(raw) }
            case .mpegTS, .fragmentedMP4Segment, .adts:
                // A new rendition has no initialization section yet, exactly as in `Channel.acceptSegment`.
                _ = try body.withUnsafeBytes { raw throws(ProbeError) in
                    try MediaProbe.probeSegment(raw, initSection: nil)
                }
            case .webVTT:
                throw IngestError.unprocessable("WebVTT renditions are not supported yet")
            case nil:
                throw Self.notMedia(fileName: fileName, body: body)
            }
        } catch let error as IngestError {
            throw error
        } catch {
            throw .unprocessable(
                container == .fragmentedMP4Init
                    ? "invalid fMP4 initialization section: \(error)" : "segment could not be probed: \(error)")
        }
    }

    private func channelForIngest(_ name: String, rendition: String) throws(IngestError) -> Channel {
        let autoCreate = configuration.ingest.autoCreate
        let channel = try channels.withLock { channels throws(IngestError) -> Channel in
            if let existing = channels[name] { return existing }
            guard autoCreate else { throw .unknownChannel(name) }
            var settings = configuration.ingest.autoCreatedChannel
            settings.name = name
            settings.source = .push
            settings.renditions = []
            let created = Channel(
                configuration: settings, clock: clock, logger: logger, journal: journal,
                markers: Self.markerStore(name, configuration, logger))
            channels[name] = created
            channelOrder.withLock { $0.append(name) }
            logger.info("channel created on first push", metadata: ["hls.channel": "\(name)"])
            return created
        }
        if channel.configuration.source == .testSource { throw .notPushed(name) }
        if !channel.hasRendition(rendition) {
            guard autoCreate else { throw .unknownRendition(name, rendition) }
            channel.addRendition(rendition)
        }
        return channel
    }

    private func acceptHint(channel: Channel, rendition: String, body: SharedBytes) throws(IngestError)
        -> IngestReceipt
    {
        guard body.count <= Self.maxHintBytes else {
            let error = IngestError(
                .hintTooLarge,
                "playlist hint of \(body.count) bytes is larger than \(Self.maxHintBytes) bytes and was not read: "
                    + "keep the encoder's playlist bounded")
            channel.recordHint(rendition: rendition, refused: error)
            throw error
        }
        let text = String(decoding: body.array, as: UTF8.self)
        let hint: MediaPlaylist
        do {
            hint = try MediaPlaylist.parse(text)
        } catch {
            let error = IngestError.invalidHint(error)
            channel.recordHint(rendition: rendition, refused: error)
            throw error
        }
        channel.recordHint(rendition: rendition, refused: nil)
        return IngestReceipt(
            kind: .hintRead,
            message: "\(rendition): playlist hint read (\(hint.segments.count) segments); the origin keeps its own",
            msn: nil)
    }

    /// Runs the ingest loop once for every channel: test sources deliver what is due, slots whose deadline passed
    /// are closed.
    public func tick() {
        let feeds = feeds.withLock { Array($0.values) }
        for feed in feeds { feed.tick() }
        for channel in allChannels { channel.tick() }
    }

    /// Writes every channel's state journal now (graceful shutdown).
    public func flushJournals() {
        for channel in allChannels { channel.flushJournal() }
    }

    /// Ticks every `interval` until the task is cancelled.
    public func run(interval: Duration = .milliseconds(50)) async {
        while !Task.isCancelled {
            tick()
            try? await Task.sleep(for: interval)
        }
    }
}
