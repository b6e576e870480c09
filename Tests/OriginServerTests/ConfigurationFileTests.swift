import Foundation
import LiveTimeline
import MicroHTTPD
import OriginCore
import OriginServer
import TestSupport
import Testing

/// The YAML configuration: the shipped default, unknown keys, bad values.
@Suite("Configuration file", .offThePool)
struct ConfigurationFileTests {
    static let defaultPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("config/default.yaml").path

    /// The message of the `ConfigurationError` that parsing `text` throws.
    static func refusal(_ text: String) -> String? {
        do {
            _ = try ConfigurationFile.parse(text, source: "test.yaml")
            return nil
        } catch let error as ConfigurationError {
            return error.message
        } catch {
            return "unexpected error type: \(error)"
        }
    }

    @Test func defaultConfigurationIsTheDemoChannel() throws {
        let configuration = try ConfigurationFile.load(path: Self.defaultPath)
        #expect(configuration.host == "0.0.0.0")
        #expect(configuration.port == 8080)
        #expect(configuration.dataDirectory == "./data")
        #expect(configuration.multivariantMaxAge == 5)
        #expect(configuration.connectionMemoryKiB == 8)
        #expect(configuration.adminToken == nil)
        #expect(configuration.ingestToken == nil)
        #expect(configuration.origin.ingest.autoCreate)
        #expect(configuration.origin.ingest.maxSegmentBytes == 64 << 20)
        #expect(configuration.origin.ingest.autoCreatedChannel.segmentDuration == 2)
        #expect(configuration.origin.ingest.autoCreatedChannel.window == .segments(6))
        let channels = configuration.origin.channels
        #expect(channels.map(\.name) == ["demo"])
        let demo = try #require(channels.first)
        #expect(demo.source == .testSource)
        #expect(demo.segmentDuration == 2)
        #expect(demo.window == .segments(6))
        #expect(
            demo.renditions == [
                RenditionConfiguration(name: "360p", testSourceProfile: "360p"),
                RenditionConfiguration(name: "180p", testSourceProfile: "180p"),
            ])
    }

    @Test func slowAndCrowdingClientLimitsHaveSaneDefaultsAndCanBeSet() throws {
        let defaults = try ConfigurationFile.parse("{}")
        #expect(defaults.remoteClientConnectionLimit == 256)
        #expect(defaults.requestBodyTimeLimitSeconds == 300)
        #expect(defaults.requestBodyMinimumBytesPerSecond == 1024)
        let http = OriginService.httpConfiguration(defaults)
        #expect(http.remoteClientConnectionLimit == 256)
        #expect(http.requestBodyTimeLimit == 300)
        #expect(http.requestBodyMinimumRate == 1024)
        let set = try ConfigurationFile.parse(
            "server:\n  remoteClientConnectionLimit: 0\n  requestBodyTimeLimitSeconds: 60\n"
                + "  requestBodyMinimumBytesPerSecond: 4096\n")
        #expect(set.remoteClientConnectionLimit == 0)
        #expect(OriginService.httpConfiguration(set).requestBodyTimeLimit == 60)
        #expect(OriginService.httpConfiguration(set).requestBodyMinimumRate == 4096)
        #expect(Self.refusal("server:\n  requestBodyTimeLimitSeconds: -1\n")?.contains("must not be negative") == true)
    }

    @Test func aDatabaseURLTakesLibpqsSSLModesAndRefusesOthers() throws {
        for mode in ["disable", "prefer", "require", "verify-ca", "verify-full"] {
            #expect(Self.refusal("database:\n  url: postgres://u@db/x?sslmode=\(mode)\n") == nil, "\(mode)")
        }
        #expect(Self.refusal("database:\n  url: postgres://u@db/x?sslmode=verify-full&sslrootcert=/ca.pem\n") == nil)
        let bogus = try #require(Self.refusal("database:\n  url: postgres://u@db/x?sslmode=bogus\n"))
        #expect(bogus.contains("sslmode 'bogus' is not one of disable, prefer, require, verify-ca, verify-full"))
        let unknown = try #require(Self.refusal("database:\n  url: postgres://u@db/x?ssl=true\n"))
        #expect(unknown.contains("parameter 'ssl' is not known"))
    }

    @Test func emptyFileGivesTheDefaults() throws {
        let configuration = try ConfigurationFile.parse("{}")
        #expect(configuration.port == 8080)
        #expect(configuration.origin.channels.isEmpty)
    }

    @Test(arguments: [
        ("servr:\n  port: 1\n", "servr"),
        ("server:\n  prot: 1\n", "prot"),
        ("ingest:\n  autocreate: true\n", "autocreate"),
        ("admin:\n  tokn: x\n", "tokn"),
        ("channels:\n  - name: a\n    windw: { segments: 3 }\n", "windw"),
        ("channels:\n  - name: a\n    window: { segment: 3 }\n", "segment"),
        ("channels:\n  - name: a\n    renditions:\n      - name: r\n        profil: 360p\n", "profil"),
        ("ingest:\n  defaults:\n    targetDurationn: 2\n", "targetDurationn"),
        ("channels:\n  - name: a\n    dvr: { hour: 2 }\n", "hour"),
    ])
    func unknownKeysAreRefusedByName(text: String, key: String) throws {
        let message = try #require(Self.refusal(text))
        #expect(message.hasPrefix("test.yaml: "), "\(message)")
        #expect(message.contains("unknown key '\(key)'"), "\(message)")
    }

    @Test(arguments: [
        ("server:\n  port: 70000\n", "test.yaml: port 70000 out of range"),
        ("server:\n  port: -1\n", "test.yaml: port -1 out of range"),
        (
            "channels:\n  - name: a\n    window: { segments: 3, seconds: 10 }\n",
            "test.yaml: channel 'a': window takes one of segments or seconds"
        ),
        (
            "channels:\n  - name: a\n    source: rtmp\n",
            "test.yaml: channel 'a': source 'rtmp' is not push or test-source"
        ),
        ("channels:\n  - name: a\n  - name: a\n", "test.yaml: channel 'a' is declared twice"),
        ("channels:\n  - source: push\n", "test.yaml: a channel has no name"),
        (
            "channels:\n  - name: a/b\n",
            "test.yaml: channel 'a/b': name must be 1-64 characters of A-Z a-z 0-9 _ -"
        ),
        ("channels:\n  - name: \"\"\n", "test.yaml: a channel has no name"),
        (
            "channels:\n  - name: a\n    renditions:\n      - name: \"7 20p\"\n",
            "test.yaml: channel 'a': rendition name '7 20p' must be 1-64 characters of A-Z a-z 0-9 _ -"
        ),
        (
            "channels:\n  - name: a\n    renditions:\n      - name: r\n      - name: r\n",
            "test.yaml: channel 'a': rendition names must be distinct"
        ),
        (
            "channels:\n  - name: a\n    source: test-source\n",
            "test.yaml: channel 'a': a test-source channel needs at least one rendition"
        ),
        (
            "channels:\n  - name: a\n    window: { segments: 0 }\n",
            "test.yaml: channel 'a': window.segments must be >= 1"
        ),
        (
            "channels:\n  - name: a\n    targetDuration: 2\n    segmentDuration: 4\n",
            "test.yaml: channel 'a': segmentDuration 4.0 rounds above targetDuration 2"
        ),
        ("ingest:\n  maxSegmentBytes: 0\n", "test.yaml: maxSegmentBytes must be positive"),
        ("server:\n  connectionMemoryKiB: 2\n", "test.yaml: connectionMemoryKiB must be between 4 and 1024"),
        (
            "channels:\n  - name: a\n    dvr: { hours: 0 }\n",
            "test.yaml: channel 'a': dvr.hours must be a positive number of hours"
        ),
        ("channels:\n  - name: a\n    outage: black\n", "test.yaml: channel 'a': outage 'black' is not gap or slate"),
        (
            "channels:\n  - name: a\n    inbandCues: yes\n",
            "test.yaml: channel 'a': inbandCues 'yes' is not one of ignore, markers, interstitials"
        ),
        (
            "channels:\n  - name: a\n    slate: /nonexistent/clip-{rendition}.ts\n    renditions: [{name: hi}]\n",
            "test.yaml: channel 'a': slate clip of rendition 'hi': cannot read '/nonexistent/clip-hi.ts'"
        ),
        (
            "channels:\n  - name: a\n    outage: slate\n    lowLatency: { partTarget: 0.5 }\n",
            "test.yaml: channel 'a': outage 'slate' is not supported with lowLatency (parts of an outage are GAP parts)"
        ),
    ])
    func badValuesAreRefusedWithAClearMessage(text: String, message: String) throws {
        #expect(Self.refusal(text) == message)
    }

    @Test func outageIsGapByDefaultAndSlateWhenAsked() throws {
        let configuration = try ConfigurationFile.parse(
            "channels:\n  - name: a\n  - name: b\n    outage: slate\n  - name: c\n    outage: gap\n")
        #expect(configuration.origin.channels.map(\.outage) == [.gap, .slate, .gap])
    }

    @Test func inbandCuesAreMarkersByDefault() throws {
        let configuration = try ConfigurationFile.parse(
            "channels:\n  - name: a\n  - name: b\n    inbandCues: ignore\n  - name: c\n    inbandCues: markers\n")
        #expect(configuration.origin.channels.map(\.inbandCues) == [.markers, .ignore, .markers])
    }

    @Test func wrongTypesNameTheirPlace() throws {
        let message = try #require(Self.refusal("server:\n  port: eighty\n"))
        #expect(message.hasPrefix("test.yaml: "), "\(message)")
        #expect(message.contains("server.port"), "\(message)")
    }

    @Test func unreadableFileIsNamed() throws {
        #expect(throws: ConfigurationError.self) { try ConfigurationFile.load(path: "/nonexistent/hlsorigin.yaml") }
        do {
            _ = try ConfigurationFile.load(path: "/nonexistent/hlsorigin.yaml")
        } catch let error as ConfigurationError {
            #expect(error.message == "cannot read configuration file '/nonexistent/hlsorigin.yaml'")
        }
    }
}

@Suite("Configuration: DVR", .offThePool)
struct DVRConfigurationTests {
    @Test func dvrHoursAreReadPerChannelAndForAutoCreatedChannelsAndDefaultOff() throws {
        let configuration = try ConfigurationFile.parse(
            "ingest:\n  defaults:\n    dvr: { hours: 24 }\nchannels:\n  - name: a\n    dvr: { hours: 1.5 }\n"
                + "  - name: b\n")
        #expect(configuration.origin.ingest.autoCreatedChannel.dvr == DVRConfiguration(hours: 24))
        #expect(configuration.origin.channels.map(\.dvr) == [DVRConfiguration(hours: 1.5), nil])
        #expect(configuration.origin.channels.first?.dvr?.milliseconds == 5_400_000)
        #expect(try ConfigurationFile.parse("logLevel: info\n").origin.ingest.autoCreatedChannel.dvr == nil)
    }
}

@Suite("Configuration: clock offset", .offThePool)
struct ClockOffsetConfigurationTests {
    @Test func clockOffsetIsReadAndDefaultsToZero() throws {
        #expect(
            try ConfigurationFile.parse("server:\n  clockOffsetMilliseconds: -1500\n").clockOffsetMilliseconds == -1500)
        #expect(try ConfigurationFile.parse("logLevel: info\n").clockOffsetMilliseconds == 0)
    }
}

@Suite("Configuration: I-frame playlists, playback authorization, encryption", .offThePool)
struct ProtectionConfigurationTests {
    static let secret = "0123456789abcdef0123456789abcdef"

    static func parse(_ text: String, environment: [String: String] = [:]) throws -> ServerConfiguration {
        try ConfigurationFile.parse(text, source: "test.yaml", environment: environment)
    }

    static func refusal(_ text: String, environment: [String: String] = [:]) -> String? {
        do {
            _ = try parse(text, environment: environment)
            return nil
        } catch let error as ConfigurationError {
            return error.message
        } catch {
            return "unexpected error type: \(error)"
        }
    }

    @Test func defaultsAreIFramePlaylistsOnAndNoProtection() throws {
        let configuration = try Self.parse("channels:\n  - name: a\n")
        let channel = try #require(configuration.origin.channels.first)
        #expect(channel.iFramePlaylists)
        #expect(channel.playback == nil)
        #expect(channel.encryption == nil)
        #expect(configuration.origin.ingest.autoCreatedChannel.iFramePlaylists)
        let shipped = try ConfigurationFile.load(path: ConfigurationFileTests.defaultPath, environment: [:])
        #expect(shipped.origin.channels.allSatisfy { $0.playback == nil && $0.encryption == nil && $0.iFramePlaylists })
    }

    @Test func everyKeyIsRead() throws {
        let configuration = try Self.parse(
            """
            channels:
              - name: news
                iFramePlaylists: false
                playback:
                  authorization: token
                  form: queryparam
                  secret: "\(Self.secret)"
                  maxTokenSeconds: 3600
                encryption:
                  method: AES-128
                  rotateEvery: 10
                  keyURI: "https://keys.example.com/{channel}/{period}.key"
            """)
        let news = try #require(configuration.origin.channels.first)
        #expect(!news.iFramePlaylists)
        #expect(
            news.playback
                == PlaybackAuthorization(form: .queryParameter, secret: Array(Self.secret.utf8), maxTokenSeconds: 3600))
        #expect(
            news.encryption
                == EncryptionConfiguration(
                    rotateEvery: 10, keyURITemplate: "https://keys.example.com/{channel}/{period}.key"))
    }

    @Test func playbackDefaultsToImportFormAndADayAndMethodDefaultsToAES128() throws {
        let configuration = try Self.parse(
            "channels:\n  - name: a\n    playback: { authorization: token, secret: \"\(Self.secret)\" }\n"
                + "    encryption: { rotateEvery: 1 }\n")
        let channel = try #require(configuration.origin.channels.first)
        #expect(channel.playback?.form == .importVariable)
        #expect(channel.playback?.maxTokenSeconds == 86400)
        #expect(channel.encryption == EncryptionConfiguration(rotateEvery: 1, keyURITemplate: nil))
    }

    @Test func authorizationOffMeansNoPlaybackEvenWithASecret() throws {
        let configuration = try Self.parse(
            "channels:\n  - name: a\n    playback: { authorization: off, secret: \"\(Self.secret)\" }\n"
                + "  - name: b\n    playback: { secret: \"\(Self.secret)\" }\n")
        #expect(configuration.origin.channels.map(\.playback) == [nil, nil])
    }

    @Test func environmentSecretWinsOverTheFilesAndSuffices() throws {
        let fromEnvironment = String(repeating: "e", count: 40)
        let configuration = try Self.parse(
            "channels:\n  - name: a\n    playback: { authorization: token, secret: \"\(Self.secret)\" }\n"
                + "  - name: b\n    playback: { authorization: token }\n",
            environment: [ConfigurationFile.playbackSecretVariable: fromEnvironment])
        #expect(
            configuration.origin.channels.map(\.playback?.secret) == [
                Array(fromEnvironment.utf8), Array(fromEnvironment.utf8),
            ])
        // An empty variable counts as unset.
        let withEmpty = try Self.parse(
            "channels:\n  - name: a\n    playback: { authorization: token, secret: \"\(Self.secret)\" }\n",
            environment: [ConfigurationFile.playbackSecretVariable: ""])
        #expect(withEmpty.origin.channels.first?.playback?.secret == Array(Self.secret.utf8))
    }

    @Test func autoCreatedChannelsTakeTheSameKeys() throws {
        let configuration = try Self.parse(
            "ingest:\n  defaults:\n    iFramePlaylists: false\n"
                + "    playback: { authorization: token, form: queryparam, secret: \"\(Self.secret)\" }\n"
                + "    encryption: { rotateEvery: 5 }\n")
        let defaults = configuration.origin.ingest.autoCreatedChannel
        #expect(!defaults.iFramePlaylists)
        #expect(defaults.playback?.form == .queryParameter)
        #expect(defaults.encryption?.rotateEvery == 5)
        #expect(
            Self.refusal("ingest:\n  defaults:\n    playback: { authorization: token }\n")
                == "test.yaml: ingest.defaults: playback.secret is required with authorization: token "
                + "(or set HLSORIGIN_PLAYBACK_SECRET)")
    }

    @Test(arguments: [
        (
            "playback: { authorization: token, secret: short }",
            "test.yaml: channel 'a': playback.secret must be at least 32 bytes (it has 5)"
        ),
        (
            "playback: { authorization: token }",
            "test.yaml: channel 'a': playback.secret is required with authorization: token "
                + "(or set HLSORIGIN_PLAYBACK_SECRET)"
        ),
        (
            "playback: { authorization: yes, secret: \"\(secret)\" }",
            "test.yaml: channel 'a': playback.authorization 'yes' is not off or token"
        ),
        (
            "playback: { authorization: token, form: cookie, secret: \"\(secret)\" }",
            "test.yaml: channel 'a': playback.form 'cookie' is not import or queryparam"
        ),
        (
            "playback: { authorization: token, maxTokenSeconds: 0, secret: \"\(secret)\" }",
            "test.yaml: channel 'a': playback.maxTokenSeconds must be positive"
        ),
        (
            "encryption: { method: SAMPLE-AES, rotateEvery: 10 }",
            "test.yaml: channel 'a': encryption.method: SAMPLE-AES/FairPlay needs a key server and a packager "
                + "outside this origin (docs/encryption.md)"
        ),
        (
            "encryption: { method: AES-256, rotateEvery: 10 }",
            "test.yaml: channel 'a': encryption.method 'AES-256' is not AES-128"
        ),
        ("encryption: { rotateEvery: 0 }", "test.yaml: channel 'a': encryption.rotateEvery must be >= 1"),
        (
            "encryption: { method: AES-128 }",
            "test.yaml: channel 'a': encryption.rotateEvery is required (segments per key, >= 1)"
        ),
        (
            "encryption: { rotateEvery: 2, keyURI: \"https://k/{chanel}/{period}\" }",
            "test.yaml: channel 'a': encryption.keyURI placeholder '{chanel}' is not {channel} or {period}"
        ),
        (
            "encryption: { rotateEvery: 2, keyURI: \"https://k/{channel}/{period\" }",
            "test.yaml: channel 'a': encryption.keyURI placeholder '{period' is not {channel} or {period}"
        ),
        (
            "encryption: { rotateEvery: 2, keyURI: \"https://k/period}\" }",
            "test.yaml: channel 'a': encryption.keyURI placeholder '}' is not {channel} or {period}"
        ),
    ])
    func refusalsNameTheKeyPath(setting: String, message: String) throws {
        #expect(Self.refusal("channels:\n  - name: a\n    \(setting)\n") == message)
    }

    @Test func aShortEnvironmentSecretIsRefusedByName() throws {
        #expect(
            Self.refusal(
                "channels:\n  - name: a\n    playback: { authorization: token, secret: \"\(Self.secret)\" }\n",
                environment: [ConfigurationFile.playbackSecretVariable: "tiny"])
                == "test.yaml: channel 'a': HLSORIGIN_PLAYBACK_SECRET must be at least 32 bytes (it has 4)")
    }

    @Test(arguments: [
        ("playback: { authorisation: token }", "authorisation"),
        ("encryption: { rotateevery: 3 }", "rotateevery"),
        ("iFramePlaylist: false", "iFramePlaylist"),
    ])
    func unknownKeysInsideTheNewBlocksAreRefused(setting: String, key: String) throws {
        let message = try #require(Self.refusal("channels:\n  - name: a\n    \(setting)\n"))
        #expect(message.contains("unknown key '\(key)'"), "\(message)")
    }
}

/// Every mapping of the file refuses a key it does not know, naming the key, its place and the keys it knows, in the
/// words the hand-written decoders used before `StrictKeys` replaced them (one case per model).
@Suite("Configuration: every mapping refuses unknown keys", .offThePool)
struct StrictConfigurationKeysTests {
    @Test(arguments: [
        (
            "serverx: 1",
            "serverx", "serverx",
            ["admin", "channels", "database", "delivery", "ingest", "limits", "logLevel", "redundancy", "server", "steering",
             "storage", "tokens"]
        ),
        (
            "server: {hots: x}",
            "server.hots", "hots",
            ["clockOffsetMilliseconds", "connectionLimit", "connectionMemoryKiB", "connectionTimeoutSeconds",
             "dataDir", "host", "multivariantMaxAge", "perClientConnectionLimit", "port",
             "remoteClientConnectionLimit", "requestBodyMinimumBytesPerSecond", "requestBodyTimeLimitSeconds",
             "threads", "tls"]
        ),
        (
            "server: {tls: {cert: a}}",
            "server.tls.cert", "cert",
            ["certificate", "host", "key", "only", "port", "priorities"]
        ),
        (
            "ingest: {autoCreate: 3, foo: 1}",
            "ingest.foo", "foo",
            ["autoCreate", "defaults", "maxSegmentBytes", "srt", "token", "tokens"]
        ),
        (
            "ingest: {defaults: {windw: 1}}",
            "ingest.defaults.windw", "windw",
            ["allowedCPC", "audioOnlyVariant", "cueTags", "dvr", "encryption", "followerWaitMilliseconds",
             "gapResponse", "gracePeriod", "hdcpLevel", "iFramePlaylists", "inbandCues", "ingest", "interstitials",
             "legacyCueTags", "lowLatency", "name", "oatcls", "outage",
             "outages", "playback",
             "renditions", "segmentDuration", "slate", "source", "steering", "targetDuration", "window"]
        ),
        (
            "channels: [{name: a, renditions: [{nam: b}]}]",
            "channels.[0].renditions.[0].nam", "nam",
            ["allowedCPC", "audio", "hdcpLevel", "name", "profile", "srt", "subtitles"]
        ),
        (
            "channels: [{name: a, renditions: [{name: b, audio: {group: g, lang: en}}]}]",
            "channels.[0].renditions.[0].audio.lang", "lang",
            ["autoselect", "default", "forced", "group", "language", "name", "parent", "timestampOffset"]
        ),
        (
            "channels: [{name: a, outages: [{after: 1, seconds: 2, evry: 3}]}]",
            "channels.[0].outages.[0].evry", "evry",
            ["after", "every", "renditions", "seconds"]
        ),
        (
            "channels: [{name: a, dvr: {hours: 1, maxbytes: 2}}]",
            "channels.[0].dvr.maxbytes", "maxbytes",
            ["hours", "maxBytes"]
        ),
        (
            "channels: [{name: a, window: {segs: 3}}]",
            "channels.[0].window.segs", "segs",
            ["seconds", "segments"]
        ),
        (
            "channels: [{name: a, playback: {authorisation: token}}]",
            "channels.[0].playback.authorisation", "authorisation",
            ["authorization", "form", "maxTokenSeconds", "secret"]
        ),
        (
            "channels: [{name: a, encryption: {method: AES-128, rotate: 1}}]",
            "channels.[0].encryption.rotate", "rotate",
            ["keyURI", "method", "rotateEvery"]
        ),
        (
            "channels: [{name: a, lowLatency: {partTargt: 1}}]",
            "channels.[0].lowLatency.partTargt", "partTargt",
            ["partTarget"]
        ),
        (
            "channels: [{name: a, ingest: {tokenz: [a]}}]",
            "channels.[0].ingest.tokenz", "tokenz",
            ["renditions", "tokens"]
        ),
        (
            "storage: {sync: always, interval: 3}",
            "storage.interval", "interval",
            ["maxBytes", "minFreeBytes", "sync", "syncIntervalMilliseconds"]
        ),
        (
            "database: {uri: x}",
            "database.uri", "uri",
            ["url"]
        ),
        (
            "redundancy: {peer: [x]}",
            "redundancy.peer", "peer",
            ["catchUp", "clockTolerance", "peers"]
        ),
        (
            "admin: {tokenz: [a]}",
            "admin.tokenz", "tokenz",
            ["token", "tokens"]
        ),
        (
            "tokens: [{name: a, secrte: b}]",
            "tokens.[0].secrte", "secrte",
            ["name", "secret", "secretEnv", "secretFile"]
        ),
        (
            "limits: {channelBytes: 5}",
            "limits.channelBytes", "channelBytes",
            ["autoCreationsPerMinute", "channelDiskBytes", "channelMemoryBytes", "channels", "renditionsPerChannel"]
        ),
    ] as [(String, String, String, [String])])
    func anUnknownKeyIsRefusedWithItsPlaceAndTheKnownKeys(text: String, place: String, key: String, known: [String]) {
        let expected =
            "test.yaml: invalid value at '\(place)': unknown key '\(key)' (known: \(known.joined(separator: ", ")))"
        #expect(ConfigurationFileTests.refusal(text) == expected)
    }

    @Test(arguments: [
        (
            "channels: [{name: a, renditions: [{name: b, audio: {language: en}}]}]",
            "test.yaml: missing key 'channels.[0].renditions.[0].audio.group'"
        ),
        (
            "channels: [{name: a, ingest: {tokens: [a], renditions: {x: [1, {a: b}]}}}]",
            "test.yaml: wrong type at 'channels.[0].ingest.renditions.x.[1]': Expected to decode Scalar but found "
            + "Mapping instead."
        ),
        (
            "channels: [{name: a, renditions: [{name: b, subtitles: {group: g, timestampOffset: x}}]}]",
            "test.yaml: wrong type at 'channels.[0].renditions.[0].subtitles.timestampOffset': Expected to decode "
            + "Int64 but found Scalar instead."
        ),
    ])
    func valuesInsideNestedMappingsAndListsAreDecodedAsBefore(text: String, message: String) {
        #expect(ConfigurationFileTests.refusal(text) == message)
    }
}
