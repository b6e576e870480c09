public import Foundation
import GroupDatabase
import HLSPlaylist
import LiveTimeline
import Markers
import OriginCore
import PeerRepair
import Persistence
import Yams

/// The YAML configuration file (`config/default.yaml`). Unknown keys are errors, so a typo never goes unnoticed.
public enum ConfigurationFile {
    /// The environment variable whose value replaces every channel's `playback.secret`.
    public static let playbackSecretVariable = "HLSORIGIN_PLAYBACK_SECRET"

    /// Reads and validates a configuration file, with `HLSORIGIN_PLAYBACK_SECRET` from the process environment.
    public static func load(path: String) throws -> ServerConfiguration {
        try load(path: path, environment: ProcessInfo.processInfo.environment)
    }

    /// Reads and validates a configuration file. `environment` supplies `HLSORIGIN_PLAYBACK_SECRET`.
    public static func load(path: String, environment: [String: String]) throws -> ServerConfiguration {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError("cannot read configuration file '\(path)'")
        }
        return try parse(String(decoding: data, as: UTF8.self), source: path, environment: environment)
    }

    /// Parses configuration text. `environment` supplies `HLSORIGIN_PLAYBACK_SECRET`, which wins over the file's
    /// `playback.secret`.
    public static func parse(
        _ text: String, source: String = "configuration",
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> ServerConfiguration {
        let file: FileModel
        do {
            file = try YAMLDecoder().decode(Strict<FileModel>.self, from: text).value
        } catch let error as DecodingError {
            throw ConfigurationError("\(source): \(describe(error))")
        } catch {
            throw ConfigurationError("\(source): \(error)")
        }
        let secret = environment[playbackSecretVariable].flatMap { $0.isEmpty ? nil : $0 }
        return try file.configuration(source: source, playbackSecret: secret, environment: environment)
    }

    private static func describe(_ error: DecodingError) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context): return "missing key '\(path(context.codingPath + [key]))'"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "wrong type at '\(path(context.codingPath))': \(context.debugDescription)"
        case .dataCorrupted(let context):
            return "invalid value at '\(path(context.codingPath))': \(context.debugDescription)"
        @unknown default: return "\(error)"
        }
    }

    // MARK: - File model

    struct FileModel: StrictKeys {
        var server: ServerModel?
        var ingest: IngestModel?
        var admin: AdminModel?
        var channels: [ChannelModel]?
        var logLevel: String?
        var storage: StorageModel?
        var database: DatabaseModel?
        var redundancy: RedundancyModel?
        var tokens: [TokenModel]?
        var limits: LimitsModel?
        /// Content Steering (`ConfigurationFile+Steering.swift`).
        var steering: SteeringModel?

        var delivery: DeliveryModel?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case steering
            case server, ingest, admin, channels, logLevel, storage, database, redundancy, tokens, limits, delivery
        }

        func configuration(
            source: String, playbackSecret: String?, environment: [String: String]
        ) throws -> ServerConfiguration {
            var configuration = ServerConfiguration()
            if let server {
                configuration.host = server.host ?? configuration.host
                configuration.port = server.port ?? configuration.port
                configuration.dataDirectory = server.dataDir ?? configuration.dataDirectory
                configuration.threads = server.threads ?? configuration.threads
                configuration.connectionLimit = server.connectionLimit ?? configuration.connectionLimit
                configuration.perClientConnectionLimit =
                    server.perClientConnectionLimit ?? configuration.perClientConnectionLimit
                configuration.connectionTimeoutSeconds =
                    server.connectionTimeoutSeconds ?? configuration.connectionTimeoutSeconds
                configuration.remoteClientConnectionLimit =
                    server.remoteClientConnectionLimit ?? configuration.remoteClientConnectionLimit
                configuration.requestBodyTimeLimitSeconds =
                    server.requestBodyTimeLimitSeconds ?? configuration.requestBodyTimeLimitSeconds
                configuration.requestBodyMinimumBytesPerSecond =
                    server.requestBodyMinimumBytesPerSecond ?? configuration.requestBodyMinimumBytesPerSecond
                configuration.connectionMemoryKiB = server.connectionMemoryKiB ?? configuration.connectionMemoryKiB
                configuration.multivariantMaxAge = server.multivariantMaxAge ?? configuration.multivariantMaxAge
                configuration.clockOffsetMilliseconds =
                    server.clockOffsetMilliseconds ?? configuration.clockOffsetMilliseconds
                configuration.tls = try server.tls?.settings(source: source)
            }
            configuration.logLevel = logLevel ?? configuration.logLevel
            configuration.adminToken = admin?.token
            configuration.databaseURL = database?.url
            var ingestConfiguration = IngestConfiguration()
            if let ingest {
                ingestConfiguration.autoCreate = ingest.autoCreate ?? ingestConfiguration.autoCreate
                ingestConfiguration.maxSegmentBytes = ingest.maxSegmentBytes ?? ingestConfiguration.maxSegmentBytes
                configuration.ingestToken = ingest.token
                configuration.srt = try ingest.srt?.configuration(source: source)
                if let defaults = ingest.defaults {
                    ingestConfiguration.autoCreatedChannel = try defaults.channel(
                        name: "", source: source, playbackSecret: playbackSecret)
                }
            }
            configuration.origin.ingest = ingestConfiguration
            if let storage { configuration.origin.storage = try storage.configuration(source: source) }
            var names = Set<String>()
            for channel in channels ?? [] {
                guard let name = channel.name, !name.isEmpty else {
                    throw ConfigurationError("\(source): a channel has no name")
                }
                guard names.insert(name).inserted else {
                    throw ConfigurationError("\(source): channel '\(name)' is declared twice")
                }
                configuration.origin.channels.append(
                    try channel.channel(name: name, source: source, playbackSecret: playbackSecret))
            }
            if let redundancy {
                let timeline = try redundancy.timeline(source: source)
                configuration.peers = try redundancy.peerURLs(source: source)
                configuration.origin.ingest.autoCreatedChannel.sharedTimeline = timeline
                for index in configuration.origin.channels.indices {
                    configuration.origin.channels[index].sharedTimeline = timeline
                }
            }
            if let steering, let settings = try steering.configuration(peers: configuration.peers, source: source) {
                configuration.steering = settings
                for (index, model) in (channels ?? []).enumerated() where model.steering ?? true {
                    configuration.origin.channels[index].steering = settings
                }
                if ingest?.defaults?.steering ?? true {
                    configuration.origin.ingest.autoCreatedChannel.steering = settings
                }
            }
            if let limits { configuration.origin.limits = try limits.limits(source: source) }
            configuration.access = try access(source: source, environment: environment)
            if let delivery { configuration.delivery = try delivery.configuration(source: source) }
            try validate(configuration, source: source)
            return configuration
        }
    }

    struct ServerModel: StrictKeys {
        var host: String?
        var port: Int?
        var dataDir: String?
        var threads: Int?
        var connectionLimit: Int?
        var perClientConnectionLimit: Int?
        var connectionTimeoutSeconds: Int?
        var remoteClientConnectionLimit: Int?
        var requestBodyTimeLimitSeconds: Int?
        var requestBodyMinimumBytesPerSecond: Int?
        var connectionMemoryKiB: Int?
        var multivariantMaxAge: Int?
        var clockOffsetMilliseconds: Int64?
        var tls: TLSModel?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case host, port, dataDir, threads, connectionLimit, perClientConnectionLimit, connectionTimeoutSeconds
            case connectionMemoryKiB, multivariantMaxAge, clockOffsetMilliseconds, tls
            case remoteClientConnectionLimit, requestBodyTimeLimitSeconds, requestBodyMinimumBytesPerSecond
        }
    }

    struct IngestModel: StrictKeys {
        var autoCreate: Bool?
        var maxSegmentBytes: Int?
        var token: String?
        var tokens: [String]?
        var defaults: ChannelModel?
        /// The SRT listener (`ConfigurationFile+SRT.swift`).
        var srt: SRTModel?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case autoCreate, maxSegmentBytes, token, tokens, defaults, srt
        }
    }

    struct DVRModel: StrictKeys {
        var hours: Double?
        var maxBytes: Int64?
        enum CodingKeys: String, CodingKey, CaseIterable { case hours, maxBytes }
    }

    struct StorageModel: StrictKeys {
        var sync: String?
        var syncIntervalMilliseconds: Int?
        var maxBytes: Int64?
        var minFreeBytes: Int64?
        enum CodingKeys: String, CodingKey, CaseIterable { case sync, syncIntervalMilliseconds, maxBytes, minFreeBytes }

        func configuration(source: String) throws -> StorageConfiguration {
            var storage = try syncPolicy(source: source)
            if let maxBytes, maxBytes <= 0 { throw ConfigurationError("\(source): storage.maxBytes must be positive") }
            if let minFreeBytes, minFreeBytes < 0 {
                throw ConfigurationError("\(source): storage.minFreeBytes must be >= 0")
            }
            storage.maxBytes = maxBytes
            storage.minFreeBytes = minFreeBytes
            return storage
        }

        private func syncPolicy(source: String) throws -> StorageConfiguration {
            let interval = syncIntervalMilliseconds ?? 50
            guard (1...10_000).contains(interval) else {
                throw ConfigurationError("\(source): storage.syncIntervalMilliseconds must be between 1 and 10000")
            }
            switch sync ?? "always" {
            case "always":
                guard syncIntervalMilliseconds == nil else {
                    throw ConfigurationError(
                        "\(source): storage.syncIntervalMilliseconds applies to sync: batched only")
                }
                return StorageConfiguration(sync: .always)
            case "batched": return StorageConfiguration(sync: .batched(intervalMilliseconds: interval))
            case let other:
                throw ConfigurationError("\(source): storage.sync '\(other)' is not always or batched")
            }
        }
    }

    struct DatabaseModel: StrictKeys {
        var url: String?
        enum CodingKeys: String, CodingKey, CaseIterable { case url }
    }

    /// `redundancy:` this origin is one of a group fed the same segments: every channel numbers and times its
    /// slots as the others do (docs/redundancy.md).
    struct RedundancyModel: StrictKeys {
        /// Seconds the group's clocks (and a segment's arrival at each origin) agree within, by a wide margin.
        var clockTolerance: Double?
        /// Base URLs of the other origins of the group (`http://10.0.0.2:8080`), asked for slots this one missed.
        var peers: [String]?
        /// Seconds a restarted origin holds the slots it missed while down for its peers to fill (default 3 with
        /// peers; without peers there is nobody to ask).
        var catchUp: Double?
        enum CodingKeys: String, CodingKey, CaseIterable { case clockTolerance, peers, catchUp }

        func peerURLs(source: String) throws -> [String] {
            try (peers ?? []).map { peer in
                guard PeerURL(peer) != nil else {
                    throw ConfigurationError(
                        "\(source): redundancy.peers: '\(peer)' is not an http://host[:port] URL")
                }
                return peer
            }
        }

        func timeline(source: String) throws -> SharedTimeline {
            let seconds = clockTolerance ?? 0.5
            guard seconds.isFinite, (0.01...10).contains(seconds) else {
                throw ConfigurationError(
                    "\(source): redundancy.clockTolerance must be between 0.01 and 10 seconds (got \(seconds))")
            }
            let catchUpSeconds = (peers ?? []).isEmpty ? 0 : catchUp ?? 3
            guard catchUpSeconds.isFinite, (0...30).contains(catchUpSeconds) else {
                throw ConfigurationError(
                    "\(source): redundancy.catchUp must be between 0 and 30 seconds (got \(catchUpSeconds))")
            }
            return SharedTimeline(
                toleranceMilliseconds: Int64((seconds * 1000).rounded()),
                catchUpMilliseconds: Int64((catchUpSeconds * 1000).rounded()))
        }
    }

    struct AdminModel: StrictKeys {
        var token: String?
        var tokens: [String]?
        enum CodingKeys: String, CodingKey, CaseIterable { case token, tokens }
    }

    struct WindowModel: StrictKeys {
        var segments: Int?
        var seconds: Double?
        enum CodingKeys: String, CodingKey, CaseIterable { case segments, seconds }
    }

    struct RenditionModel: StrictKeys {
        var name: String
        var profile: String?
        var audio: MembershipModel?
        var subtitles: MembershipModel?
        var srt: StreamSelectionModel?
        /// HDCP-LEVEL and ALLOWED-CPC of this rendition's variants, over the channel's.
        var hdcpLevel: String?
        var allowedCPC: String?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case name, profile, audio, subtitles, srt, hdcpLevel, allowedCPC
        }

        /// The rendition as configured; `label` names the channel in a refusal. HDCP-LEVEL and ALLOWED-CPC are
        /// checked as the channel's are, and only a video rendition (no `audio:` or `subtitles:`) takes them.
        func rendition(label: String) throws -> RenditionConfiguration {
            let label = "\(label): rendition '\(name)'"
            if hdcpLevel != nil || allowedCPC != nil, audio != nil || subtitles != nil {
                throw ConfigurationError(
                    "\(label): hdcpLevel and allowedCPC are for video renditions, not audio or subtitles ones")
            }
            return RenditionConfiguration(
                name: name, testSourceProfile: profile, audio: audio?.membership, subtitles: subtitles?.membership,
                srt: srt?.selection, hdcpLevel: try hdcpLevel.map { try ChannelModel.hdcpLevel($0, label: label) },
                allowedCPC: try allowedCPC.map { try ChannelModel.allowedCPC($0, label: label) })
        }
    }

    /// `audio:` / `subtitles:` of a rendition: its EXT-X-MEDIA group.
    struct MembershipModel: StrictKeys {
        var group: String
        var language: String?
        var name: String?
        var `default`: Bool?
        var autoselect: Bool?
        var forced: Bool?
        var parent: String?
        var timestampOffset: Int64?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case group, language, name, `default`, autoselect, forced, parent, timestampOffset
        }

        var membership: MediaGroupMembership {
            MediaGroupMembership(
                group: group, language: language, name: name, isDefault: `default` ?? false,
                autoselect: autoselect ?? true, forced: forced ?? false, parent: parent,
                timestampOffset: timestampOffset)
        }
    }

    struct OutageModel: StrictKeys {
        var after: Double
        var seconds: Double
        var renditions: [String]?
        var every: Double?
        enum CodingKeys: String, CodingKey, CaseIterable { case after, seconds, renditions, every }
    }

    struct ChannelModel: StrictKeys {
        var name: String?
        var source: String?
        var targetDuration: Int?
        var segmentDuration: Double?
        var window: WindowModel?
        var gracePeriod: Double?
        var gapResponse: String?
        var outage: String?
        var slate: String?
        var renditions: [RenditionModel]?
        var outages: [OutageModel]?
        var legacyCueTags: Bool?
        var cueTags: String?
        var oatcls: Bool?
        var inbandCues: String?
        var interstitials: InterstitialsModel?
        var dvr: DVRModel?
        var audioOnlyVariant: Bool?
        var followerWaitMilliseconds: Int64?
        var iFramePlaylists: Bool?
        /// HDCP-LEVEL: TYPE-0, TYPE-1 or NONE.
        var hdcpLevel: String?
        /// ALLOWED-CPC: `KEYFORMAT:LABEL/LABEL,...`.
        var allowedCPC: String?
        var playback: PlaybackModel?
        var encryption: EncryptionModel?
        var lowLatency: LowLatencyModel?
        /// Who may push into the channel (`ingest: {tokens, renditions}`); read by `FileModel.access`.
        var ingest: ChannelIngestModel?
        /// false: the channel is not steered although `steering:` is set (default true).
        var steering: Bool?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case name, source, targetDuration, segmentDuration, window, gracePeriod, gapResponse, renditions, outages
            case legacyCueTags, dvr, audioOnlyVariant, followerWaitMilliseconds, iFramePlaylists, playback, encryption
            case cueTags, oatcls
            case lowLatency, outage, slate, ingest, inbandCues, interstitials
            case hdcpLevel, allowedCPC
            case steering
        }

        /// `cueTags:`; the older `legacyCueTags: true` means `both` (DATERANGE and the CUE tags).
        /// `hdcpLevel:` of a channel or a rendition: TYPE-0, TYPE-1 or NONE; `label` names where it was read.
        static func hdcpLevel(_ value: String, label: String) throws -> HDCPLevel {
            guard let level = HDCPLevel(rawValue: value) else {
                let known = HDCPLevel.allCases.map(\.rawValue).joined(separator: ", ")
                throw ConfigurationError("\(label): hdcpLevel '\(value)' is not one of \(known)")
            }
            return level
        }

        /// `allowedCPC:` of a channel or a rendition (`AllowedCPC`'s rules); `label` names where it was read.
        static func allowedCPC(_ value: String, label: String) throws -> AllowedCPC {
            do { return try AllowedCPC(value) } catch { throw ConfigurationError("\(label): \(error)") }
        }

        func cueTagMode(channel name: String, file: String) throws -> CueTagMode {
            guard let cueTags else { return legacyCueTags == true ? .both : .daterange }
            guard let mode = CueTagMode(rawValue: cueTags) else {
                let known = CueTagMode.allCases.map(\.rawValue).joined(separator: ", ")
                throw ConfigurationError("\(file): channel '\(name)': cueTags '\(cueTags)' is not one of \(known)")
            }
            guard legacyCueTags == nil else {
                throw ConfigurationError(
                    "\(file): channel '\(name)': give cueTags or the older legacyCueTags (true = cueTags: both), not both")
            }
            return mode
        }

        /// The channel's settings; `playbackSecret` (from the environment) replaces `playback.secret`.
        func channel(name: String, source file: String, playbackSecret: String? = nil) throws -> ChannelConfiguration {
            var channel = ChannelConfiguration(name: name)
            switch source ?? "push" {
            case "push": channel.source = .push
            case "test-source": channel.source = .testSource
            case let other:
                throw ConfigurationError("\(file): channel '\(name)': source '\(other)' is not push or test-source")
            }
            channel.targetDuration = targetDuration
            channel.segmentDuration = segmentDuration ?? channel.segmentDuration
            channel.gracePeriod = gracePeriod
            if let gapResponse {
                guard let response = GapResponse(rawValue: gapResponse) else {
                    let known = GapResponse.allCases.map(\.rawValue).joined(separator: " or ")
                    throw ConfigurationError(
                        "\(file): channel '\(name)': gapResponse '\(gapResponse)' is not \(known)")
                }
                channel.gapResponse = response
            }
            if let outage {
                guard let mode = OutageMode(rawValue: outage) else {
                    let known = OutageMode.allCases.map(\.rawValue).joined(separator: " or ")
                    throw ConfigurationError("\(file): channel '\(name)': outage '\(outage)' is not \(known)")
                }
                channel.outage = mode
            }
            channel.cueTags = try cueTagMode(channel: name, file: file)
            channel.oatcls = oatcls ?? false
            if let inbandCues {
                guard let mode = InbandCueMode(rawValue: inbandCues) else {
                    let known = InbandCueMode.allCases.map(\.rawValue).joined(separator: ", ")
                    throw ConfigurationError(
                        "\(file): channel '\(name)': inbandCues '\(inbandCues)' is not one of \(known)")
                }
                channel.inbandCues = mode
            }
            if let dvr {
                guard let hours = dvr.hours, hours > 0, hours <= 24 * 366 else {
                    throw ConfigurationError("\(file): channel '\(name)': dvr.hours must be a positive number of hours")
                }
                if let maxBytes = dvr.maxBytes, maxBytes <= 0 {
                    throw ConfigurationError("\(file): channel '\(name)': dvr.maxBytes must be positive")
                }
                channel.dvr = DVRConfiguration(hours: hours, maxBytes: dvr.maxBytes)
            }
            if let window {
                switch (window.segments, window.seconds) {
                case (let count?, nil): channel.window = .segments(count)
                case (nil, let seconds?): channel.window = .seconds(seconds)
                default:
                    throw ConfigurationError("\(file): channel '\(name)': window takes one of segments or seconds")
                }
            }
            let label = "\(file): \(name.isEmpty ? "ingest.defaults" : "channel '\(name)'")"
            channel.renditions = try (renditions ?? []).map { try $0.rendition(label: label) }
            if let slate {
                // Every configured rendition's clip must be usable now, not at the first outage.
                for rendition in channel.renditions {
                    do {
                        _ = try ChannelConfiguration.loadSlateClip(
                            ChannelConfiguration.slateClipPath(slate, rendition: rendition.name))
                    } catch {
                        throw ConfigurationError(
                            "\(file): channel '\(name)': slate clip of rendition '\(rendition.name)': \(error)")
                    }
                }
                channel.slateClip = slate
            }
            channel.audioOnlyVariant = audioOnlyVariant ?? false
            channel.followerWaitMilliseconds = followerWaitMilliseconds
            channel.scheduledOutages = (outages ?? []).map {
                ScheduledOutage(
                    afterSeconds: $0.after, durationSeconds: $0.seconds, renditions: $0.renditions ?? [],
                    everySeconds: $0.every)
            }
            channel.iFramePlaylists = iFramePlaylists ?? true
            channel.hdcpLevel = try hdcpLevel.map { try Self.hdcpLevel($0, label: label) }
            channel.allowedCPC = try allowedCPC.map { try Self.allowedCPC($0, label: label) }
            channel.interstitials = try interstitials?.settings(label: label) ?? InterstitialSettings()
            if channel.inbandCues == .interstitials, channel.interstitials.asset == nil {
                throw ConfigurationError(
                    "\(label): inbandCues 'interstitials' needs interstitials.assetList or interstitials.assetUri")
            }
            channel.playback = try playback?.authorization(label: label, environmentSecret: playbackSecret)
            channel.encryption = try encryption?.configuration(label: label)
            if let lowLatency {
                channel.lowLatency = try lowLatency.configuration(label: label)
                // Parts are listed before any segment could fix the target duration: an LL channel fixes it here.
                channel.targetDuration = targetDuration ?? Int(channel.segmentDuration.rounded(.up))
                guard channel.outage == .gap else {
                    throw ConfigurationError(
                        "\(label): outage 'slate' is not supported with lowLatency (parts of an outage are GAP parts)")
                }
            }
            return channel
        }
    }

    /// `lowLatency:` of a channel: Low-Latency HLS parts cut from pushes streamed while they are encoded.
    struct LowLatencyModel: StrictKeys {
        var partTarget: Double?
        enum CodingKeys: String, CodingKey, CaseIterable { case partTarget }
        /// The shortest PART-TARGET taken, in seconds (shorter parts cost more requests than they save latency).
        static let minimumPartTarget = 0.1

        func configuration(label: String) throws -> LowLatencyConfiguration {
            guard let partTarget else {
                throw ConfigurationError("\(label): lowLatency.partTarget is required (seconds, e.g. 0.4)")
            }
            guard partTarget.isFinite else { throw ConfigurationError("\(label): lowLatency.partTarget is not finite") }
            return LowLatencyConfiguration(partTarget: partTarget)
        }
    }

    /// `playback:` of a channel: token authorization of the multivariant, segments, init sections and keys.
    struct PlaybackModel: StrictKeys {
        var authorization: String?
        var form: String?
        var secret: String?
        var maxTokenSeconds: Int64?
        enum CodingKeys: String, CodingKey, CaseIterable { case authorization, form, secret, maxTokenSeconds }

        /// Minimum length of a playback secret, in bytes (UTF-8).
        static let minimumSecretBytes = 32

        /// nil for `authorization: off` (the default); the other keys are still checked, so a typo in a switched-off
        /// block is found before it is switched on.
        func authorization(label: String, environmentSecret: String?) throws -> PlaybackAuthorization? {
            let enabled: Bool
            switch authorization ?? "off" {
            case "off": enabled = false
            case "token": enabled = true
            case let other: throw ConfigurationError("\(label): playback.authorization '\(other)' is not off or token")
            }
            guard let form = PlaybackAuthorization.Form(rawValue: form ?? "import") else {
                throw ConfigurationError("\(label): playback.form '\(form ?? "")' is not import or queryparam")
            }
            let maxTokenSeconds = maxTokenSeconds ?? 86400
            guard maxTokenSeconds > 0 else {
                throw ConfigurationError("\(label): playback.maxTokenSeconds must be positive")
            }
            if let secret, secret.utf8.count < Self.minimumSecretBytes {
                throw ConfigurationError(
                    "\(label): playback.secret must be at least \(Self.minimumSecretBytes) bytes "
                        + "(it has \(secret.utf8.count))")
            }
            guard enabled else { return nil }
            if let environmentSecret, environmentSecret.utf8.count < Self.minimumSecretBytes {
                throw ConfigurationError(
                    "\(label): \(ConfigurationFile.playbackSecretVariable) must be at least "
                        + "\(Self.minimumSecretBytes) bytes (it has \(environmentSecret.utf8.count))")
            }
            guard let chosen = environmentSecret ?? secret else {
                throw ConfigurationError(
                    "\(label): playback.secret is required with authorization: token "
                        + "(or set \(ConfigurationFile.playbackSecretVariable))")
            }
            return PlaybackAuthorization(form: form, secret: Array(chosen.utf8), maxTokenSeconds: maxTokenSeconds)
        }
    }

    /// `encryption:` of a channel: AES-128 on the way out with a key per `rotateEvery` segments.
    struct EncryptionModel: StrictKeys {
        var method: String?
        var rotateEvery: Int?
        var keyURI: String?
        enum CodingKeys: String, CodingKey, CaseIterable { case method, rotateEvery, keyURI }

        /// Why SAMPLE-AES is refused (docs/encryption.md).
        static let sampleAESRefusal =
            "SAMPLE-AES/FairPlay needs a key server and a packager outside this origin (docs/encryption.md)"

        func configuration(label: String) throws -> EncryptionConfiguration {
            switch method ?? "AES-128" {
            case "AES-128": break
            case "SAMPLE-AES", "SAMPLE-AES-CTR", "SAMPLE-AES-CENC":
                throw ConfigurationError("\(label): encryption.method: \(Self.sampleAESRefusal)")
            case let other: throw ConfigurationError("\(label): encryption.method '\(other)' is not AES-128")
            }
            guard let rotateEvery else {
                throw ConfigurationError("\(label): encryption.rotateEvery is required (segments per key, >= 1)")
            }
            guard rotateEvery >= 1 else { throw ConfigurationError("\(label): encryption.rotateEvery must be >= 1") }
            if let keyURI {
                if keyURI.isEmpty { throw ConfigurationError("\(label): encryption.keyURI is empty") }
                if let bad = Self.unknownPlaceholder(in: keyURI) {
                    throw ConfigurationError(
                        "\(label): encryption.keyURI placeholder '\(bad)' is not {channel} or {period}")
                }
            }
            return EncryptionConfiguration(rotateEvery: rotateEvery, keyURITemplate: keyURI)
        }

        /// The first `{...}` (or unclosed `{` / stray `}`) of `template` that is not `{channel}` or `{period}`.
        static func unknownPlaceholder(in template: String) -> String? {
            var rest = Substring(template)
            while let brace = rest.firstIndex(where: { $0 == "{" || $0 == "}" }) {
                guard rest[brace] == "{" else { return String(rest[brace...]) }
                guard let close = rest[brace...].firstIndex(of: "}") else { return String(rest[brace...]) }
                let placeholder = rest[brace...close]
                guard placeholder == "{channel}" || placeholder == "{period}" else { return String(placeholder) }
                rest = rest[rest.index(after: close)...]
            }
            return nil
        }
    }

    static func validate(_ configuration: ServerConfiguration, source: String) throws {
        func fail(_ message: String) -> ConfigurationError { ConfigurationError("\(source): \(message)") }
        guard ServerConfiguration.validPorts.contains(configuration.port) else {
            throw fail("port \(configuration.port) out of range")
        }
        guard configuration.connectionLimit > 0 else { throw fail("connectionLimit must be positive") }
        if let url = configuration.databaseURL {
            do {
                _ = try GroupDatabase.Location(url: url)
            } catch {
                throw fail(error.message)
            }
        }
        guard configuration.connectionTimeoutSeconds > 0 else {
            throw fail("connectionTimeoutSeconds must be positive")
        }
        guard configuration.remoteClientConnectionLimit >= 0, configuration.requestBodyTimeLimitSeconds >= 0,
            configuration.requestBodyMinimumBytesPerSecond >= 0
        else {
            throw fail(
                "remoteClientConnectionLimit, requestBodyTimeLimitSeconds and requestBodyMinimumBytesPerSecond "
                    + "must not be negative (0: no limit)")
        }
        guard (4...1024).contains(configuration.connectionMemoryKiB) else {
            throw fail("connectionMemoryKiB must be between 4 and 1024")
        }
        guard configuration.origin.ingest.maxSegmentBytes > 0 else { throw fail("maxSegmentBytes must be positive") }
        for channel in configuration.origin.channels + [configuration.origin.ingest.autoCreatedChannel] {
            let label = channel.name.isEmpty ? "ingest.defaults" : "channel '\(channel.name)'"
            if !channel.name.isEmpty, !OriginNames.isValid(channel.name) {
                throw fail("\(label): name must be \(OriginNames.rule)")
            }
            for rendition in channel.renditions where !OriginNames.isValid(rendition.name) {
                throw fail("\(label): rendition name '\(rendition.name)' must be \(OriginNames.rule)")
            }
            if Set(channel.renditions.map(\.name)).count != channel.renditions.count {
                throw fail("\(label): rendition names must be distinct")
            }
            if let problem = streamSelectionProblem(channel) { throw fail("\(label): \(problem)") }
            if let target = channel.targetDuration, target < 1 { throw fail("\(label): targetDuration must be >= 1") }
            guard channel.segmentDuration > 0 else { throw fail("\(label): segmentDuration must be positive") }
            if let target = channel.targetDuration, channel.segmentDuration.rounded() > Double(target) {
                throw fail("\(label): segmentDuration \(channel.segmentDuration) rounds above targetDuration \(target)")
            }
            switch channel.window {
            case .segments(let count) where count < 1: throw fail("\(label): window.segments must be >= 1")
            case .seconds(let seconds) where seconds <= 0: throw fail("\(label): window.seconds must be positive")
            default: break
            }
            if let grace = channel.gracePeriod, grace < 0 { throw fail("\(label): gracePeriod must be >= 0") }
            for outage in channel.scheduledOutages {
                guard channel.source == .testSource else {
                    throw fail("\(label): outages are simulated by the built-in test source only")
                }
                guard outage.afterSeconds >= 0, outage.durationSeconds > 0,
                    (outage.everySeconds ?? 1) > outage.durationSeconds
                else { throw fail("\(label): an outage needs after >= 0, seconds > 0 and every > seconds") }
                let unknown = outage.renditions.filter { name in !channel.renditions.contains { $0.name == name } }
                guard unknown.isEmpty else {
                    throw fail("\(label): outage names unknown rendition(s) \(unknown.joined(separator: ", "))")
                }
            }
            if let lowLatency = channel.lowLatency {
                // `channel(name:source:playbackSecret:)` fixed the target duration of an LL channel.
                let target = Double(channel.targetDuration ?? Int(channel.segmentDuration.rounded(.up)))
                guard lowLatency.partTarget >= LowLatencyModel.minimumPartTarget,
                    lowLatency.partTarget <= target / 2
                else {
                    throw fail(
                        "\(label): lowLatency.partTarget \(lowLatency.partTarget) must be between "
                            + "\(LowLatencyModel.minimumPartTarget) and half the target duration (\(target / 2))")
                }
            }
            if let wait = channel.followerWaitMilliseconds, wait < 0 {
                throw fail("\(label): followerWaitMilliseconds must be >= 0")
            }
            try validateGroups(channel, label: label, fail: fail)
            if channel.source == .testSource, channel.renditions.isEmpty {
                throw fail("\(label): a test-source channel needs at least one rendition")
            }
        }
    }
}

extension ConfigurationFile {
    /// The `audio:`/`subtitles:` memberships of a channel's renditions, checked with the rules an encoder's hint is
    /// checked with (NAME unique and one DEFAULT per group, RFC 5646 LANGUAGE), plus: a rendition is audio or
    /// subtitles, not both, and a subtitle rendition's `parent` is another rendition of the channel.
    static func validateGroups(
        _ channel: ChannelConfiguration, label: String, fail: (String) -> ConfigurationError
    ) throws {
        var members: [MultivariantHint.Member] = []
        for rendition in channel.renditions {
            if rendition.audio != nil, rendition.subtitles != nil {
                throw fail("\(label): rendition '\(rendition.name)' is audio or subtitles, not both")
            }
            if let parent = rendition.subtitles?.parent ?? rendition.audio?.parent {
                guard rendition.subtitles != nil else {
                    throw fail("\(label): rendition '\(rendition.name)': parent is for subtitles only")
                }
                guard parent != rendition.name, channel.renditions.contains(where: { $0.name == parent }) else {
                    throw fail("\(label): rendition '\(rendition.name)': parent '\(parent)' is not another rendition")
                }
            }
            for (kind, membership) in [
                (MultivariantHint.MemberKind.audio, rendition.audio), (.subtitles, rendition.subtitles),
            ] {
                guard let membership else { continue }
                if membership.group.isEmpty { throw fail("\(label): rendition '\(rendition.name)': empty group") }
                members.append(
                    MultivariantHint.Member(
                        rendition: rendition.name, kind: kind, group: membership.group,
                        name: membership.name ?? rendition.name, language: membership.language,
                        isDefault: membership.isDefault, autoselect: membership.autoselect, forced: membership.forced))
            }
        }
        do {
            try MultivariantHint.validateGroups(members)
        } catch {
            throw fail("\(label): \(error.message)")
        }
    }
}

/// A configuration that cannot be used, with the reason.
public struct ConfigurationError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
