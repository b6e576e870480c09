import Foundation
import HLSCrypto
import HLSPackaging
import HLSPlaylist
import LiveTimeline
import MediaProbe
import MicroHTTPD
import OriginCore
import SharedBytes
import TestSupport
import Testing

@testable import OriginServer

/// Playback authorization over HTTP: which `/live` answers need a token, what a refusal looks like and leaves behind,
/// the multivariant playlist per viewer (`import`) or shared (`queryparam`), media playlists the same for everyone.
@Suite("Playback authorization routes", .offThePool)
struct PlaybackRoutesTests {
    static let secret = Array("playback secret of the unit tests, 32+ bytes".utf8)

    /// A stack whose channel `ch` needs tokens in `form` (and `open`, a second channel, does not).
    static func stack(
        form: PlaybackAuthorization.Form = .importVariable, dataDirectory: String? = nil
    ) throws -> OriginTestStack {
        let stack = try OriginTestStack { configuration in
            configuration.origin.channels[0].playback = PlaybackAuthorization(
                form: form, secret: Self.secret, maxTokenSeconds: 3600)
            if let dataDirectory {
                configuration.origin.dataDirectory = dataDirectory
                configuration.origin.channels[0].window = .segments(3)
                configuration.origin.channels[0].dvr = DVRConfiguration(hours: 1)
            }
        }
        try stack.slots(3)
        return stack
    }

    static func nowSeconds(_ stack: OriginTestStack) -> Int64 { stack.clock.nowMilliseconds() / 1000 }

    static func token(_ stack: OriginTestStack, ahead: Int64 = 600, channel: String = "ch") -> String {
        PlaybackToken.issue(channel: channel, expirySeconds: nowSeconds(stack) + ahead, secret: secret)
    }

    /// Tokens refused for each reason, with the reason line and the metric label.
    static func refusedTokens(_ stack: OriginTestStack) -> [(query: String, reason: String, label: String)] {
        let now = nowSeconds(stack)
        let valid = token(stack)
        let tampered = String(valid.dropLast()) + (valid.last == "A" ? "Q" : "A")
        return [
            ("", "playback token missing", "missing"),
            ("?token=", "playback token missing", "missing"),
            ("?token=tomorrow", "playback token malformed", "malformed"),
            ("?token=\(tampered)", "playback token signature does not match channel 'ch'", "signature"),
            (
                "?token=\(token(stack, channel: "other"))", "playback token signature does not match channel 'ch'",
                "signature"
            ),
            (
                "?token=\(token(stack, ahead: -1))",
                "playback token expired at \(PlaybackRoutesTests.iso8601(now - 1))", "expired"
            ),
            (
                "?token=\(token(stack, ahead: 0))", "playback token expired at \(PlaybackRoutesTests.iso8601(now))",
                "expired"
            ),
            (
                "?token=\(token(stack, ahead: 3601))", "playback token expires too far ahead (max 3600 s)",
                "too_far_ahead"
            ),
        ]
    }

    static func iso8601(_ seconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    /// Every protected resource kind: multivariant, segment, init section, key, I-frame resource.
    static let protectedPaths = [
        "/live/ch/index.m3u8", "/live/ch/360p/1.ts", "/live/ch/360p/init-0.mp4", "/live/ch/key-0.key",
        "/live/ch/360p/iframe-1.ts",
    ]

    @Test func everyReasonIsRefusedOnEveryProtectedResourceWithNoStoreAndCORS() throws {
        let stack = try Self.stack()
        for (query, reason, _) in Self.refusedTokens(stack) {
            for path in Self.protectedPaths {
                for method in ["GET", "HEAD"] {
                    let response = try stack.request(method, path + query)
                    #expect(response.status == 403, "\(method) \(path)\(query)")
                    if method == "GET" { #expect(response.text == reason + "\n", "\(path)\(query)") }
                    #expect(response.header("Cache-Control") == "no-store")
                    #expect(response.header("Access-Control-Allow-Origin") == "*")
                }
            }
        }
    }

    @Test func aValidTokenOpensSegmentsAndTheMultivariantPlaylist() throws {
        let stack = try Self.stack()
        let token = Self.token(stack)
        let segment = try stack.get("/live/ch/360p/1.ts?token=\(token)")
        #expect(segment.status == 200)
        #expect(segment.body == stack.pushed["360p"]?[1])
        let multivariant = try stack.get("/live/ch/index.m3u8?token=\(token)")
        #expect(multivariant.status == 200)
        #expect(multivariant.header("Cache-Control") == "private, no-store")
        #expect(multivariant.header("ETag") == nil)
        #expect(multivariant.header("Content-Type") == "application/vnd.apple.mpegurl")
        let lines = multivariant.text.split(separator: "\n")
        #expect(lines.prefix(2) == ["#EXTM3U", "#EXT-X-VERSION:8"])
        #expect(lines.contains("#EXT-X-DEFINE:NAME=\"token\",VALUE=\"\(token)\""))
        #expect(lines.contains("360p/index.m3u8"))
        // An unknown path of a protected channel is still a 404 once authorized.
        #expect(try stack.get("/live/ch/360p/99.ts?token=\(token)").status == 404)
    }

    @Test func gapFillersNeedATokenAndTheirEntryKeepsTheSuffix() throws {
        let stack = try Self.stack()
        // Let the next slot pass without a push: the ingest loop writes GAP 3 with a filler.
        stack.clock.advance(seconds: 3)
        stack.origin.tick()
        #expect(try stack.playlistText("360p").hasSuffix("#EXT-X-GAP\n#EXTINF:2.000,\n3.ts?token={$token}\n"))
        #expect(try stack.get("/live/ch/360p/3.ts").text == "playback token missing\n")
        let filler = try stack.get("/live/ch/360p/3.ts?token=\(Self.token(stack))")
        #expect(filler.status == 200)
        #expect(filler.header("Content-Type") == "video/mp2t")
    }

    @Test func storedSegmentsNeedAToken() throws {
        let directory = NSTemporaryDirectory() + "playback-store-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let stack = try Self.stack(dataDirectory: directory)
        try stack.slots(20)
        let channel = try #require(stack.origin.channel(named: "ch"))
        #expect(channel.snapshot.renditions["360p"]?.entry(msn: 0) == nil, "segment 0 is only in the store")
        #expect(try stack.get("/live/ch/360p/0.ts").text == "playback token missing\n")
        let stored = try stack.get("/live/ch/360p/0.ts?token=\(Self.token(stack))")
        #expect(stored.status == 200)
        #expect(stored.body == stack.pushed["360p"]?[0])
    }

    @Test func importFormMultivariantCarriesEachRequestsTokenAndNothingElseDiffers() throws {
        let stack = try Self.stack()
        let first = Self.token(stack, ahead: 60)
        let second = Self.token(stack, ahead: 120)
        let a = try stack.get("/live/ch/index.m3u8?token=\(first)").text
        let b = try stack.get("/live/ch/index.m3u8?other=1&token=\(second)&token=ignored").text
        #expect(a.contains("VALUE=\"\(first)\"\n"))
        #expect(b.contains("VALUE=\"\(second)\"\n"))
        #expect(a.replacingOccurrences(of: first, with: "") == b.replacingOccurrences(of: second, with: ""))
        let playlist = try MultivariantPlaylist.parse(a)
        #expect(playlist.definitions == [.value(name: "token", value: first)])
    }

    @Test func mediaPlaylistsAreOpenAndTheSameForEveryViewer() throws {
        let stack = try Self.stack()
        let anonymous = try stack.get("/live/ch/360p/index.m3u8")
        #expect(anonymous.status == 200)
        let withToken = try stack.get("/live/ch/360p/index.m3u8?token=\(Self.token(stack))")
        let withBadToken = try stack.get("/live/ch/360p/index.m3u8?token=bad")
        #expect(withToken.text == anonymous.text)
        #expect(withBadToken.text == anonymous.text)
        #expect(anonymous.header("Cache-Control") == "public, max-age=1")
        #expect(
            anonymous.text == """
                #EXTM3U
                #EXT-X-VERSION:8
                #EXT-X-TARGETDURATION:2
                #EXT-X-MEDIA-SEQUENCE:0
                #EXT-X-DISCONTINUITY-SEQUENCE:0
                #EXT-X-INDEPENDENT-SEGMENTS
                #EXT-X-DEFINE:IMPORT="token"
                #EXT-X-PROGRAM-DATE-TIME:2026-01-01T00:00:00.000Z
                #EXTINF:2.000,
                0.ts?token={$token}
                #EXT-X-PROGRAM-DATE-TIME:2026-01-01T00:00:02.000Z
                #EXTINF:2.000,
                1.ts?token={$token}
                #EXT-X-PROGRAM-DATE-TIME:2026-01-01T00:00:04.000Z
                #EXTINF:2.000,
                2.ts?token={$token}

                """)
    }

    @Test func iFramePlaylistsAreOpenAndCarryTheImportAndTheSuffix() throws {
        let stack = try Self.stack()
        let anonymous = try stack.get("/live/ch/360p/iframes.m3u8")
        #expect(anonymous.status == 200, "\(anonymous.text)")
        #expect(try stack.get("/live/ch/360p/iframes.m3u8?token=bad").text == anonymous.text)
        let lines = anonymous.text.split(separator: "\n")
        #expect(lines.prefix(2) == ["#EXTM3U", "#EXT-X-VERSION:8"])
        #expect(lines.contains("#EXT-X-I-FRAMES-ONLY"))
        #expect(lines.contains("#EXT-X-DEFINE:IMPORT=\"token\""))
        #expect(lines.last == "2.ts?token={$token}")
        #expect(lines.contains { $0.hasPrefix("#EXT-X-BYTERANGE:") && $0.hasSuffix("@0") })
        // The multivariant lists it without a suffix in import form (the I-frame playlist imports the variable).
        let multivariant = try stack.get("/live/ch/index.m3u8?token=\(Self.token(stack))").text
        #expect(multivariant.contains(",URI=\"360p/iframes.m3u8\"\n"))
    }

    @Test func queryParameterFormSharesOneMultivariantTextAtVersion11() throws {
        let stack = try Self.stack(form: .queryParameter)
        let first = try stack.get("/live/ch/index.m3u8?token=\(Self.token(stack, ahead: 60))")
        let second = try stack.get("/live/ch/index.m3u8?token=\(Self.token(stack, ahead: 120))")
        #expect(first.status == 200)
        #expect(first.text == second.text)
        #expect(first.header("ETag") != nil)
        let lines = first.text.split(separator: "\n")
        #expect(lines.prefix(2) == ["#EXTM3U", "#EXT-X-VERSION:11"])
        #expect(lines.contains("#EXT-X-DEFINE:QUERYPARAM=\"token\""))
        #expect(lines.contains("360p/index.m3u8?token={$token}"))
        #expect(lines.contains("180p/index.m3u8?token={$token}"))
        #expect(
            lines.contains {
                $0.hasPrefix("#EXT-X-I-FRAME-STREAM-INF:") && $0.hasSuffix(",URI=\"360p/iframes.m3u8?token={$token}\"")
            })
        #expect(try stack.get("/live/ch/index.m3u8").status == 403)
        // The media playlist, fetched with the token in its query as the client substitutes it: the live playlist
        // (the token is no DVR argument), version 11, the same for every viewer.
        let media = try stack.get("/live/ch/360p/index.m3u8?token=\(Self.token(stack))")
        #expect(media.status == 200)
        #expect(media.text == (try stack.get("/live/ch/360p/index.m3u8").text))
        let mediaLines = media.text.split(separator: "\n")
        #expect(mediaLines.prefix(2) == ["#EXTM3U", "#EXT-X-VERSION:11"])
        #expect(mediaLines.contains("#EXT-X-DEFINE:QUERYPARAM=\"token\""))
        #expect(mediaLines.contains("2.ts?token={$token}"))
        #expect(!media.text.contains("EXT-X-PLAYLIST-TYPE"))
    }

    @Test func alternateRenditionURIsGetTheSuffixInQueryParameterForm() throws {
        let playlist = MultivariantPlaylist(
            renditions: [
                Rendition(type: .audio, groupID: "aud", name: "English", uri: "en/index.m3u8", isDefault: true),
                Rendition(type: .closedCaptions, groupID: "cc", name: "CC1", isDefault: false, instreamID: "CC1"),
            ],
            variants: [VariantStream(uri: "hi/index.m3u8", bandwidth: 1000, codecs: ["avc1.64001f"], audioGroup: "aud")]
        )
        let query = ChannelState.playbackMultivariant(
            playlist, playback: PlaybackAuthorization(form: .queryParameter, secret: Self.secret))
        #expect(query.renditions.map(\.uri) == ["en/index.m3u8?token={$token}", nil])
        #expect(query.variants.map(\.uri) == ["hi/index.m3u8?token={$token}"])
        #expect(query.definitions == [.queryParameter(name: "token")])
        let imported = ChannelState.playbackMultivariant(
            playlist, playback: PlaybackAuthorization(form: .importVariable, secret: Self.secret))
        #expect(imported.renditions == playlist.renditions)
        #expect(imported.variants == playlist.variants)
        #expect(imported.definitions == [.value(name: "token", value: "")])
        #expect(ChannelState.playbackMultivariant(playlist, playback: nil) == playlist)
        #expect(ChannelState.appendingPlaybackToken(to: "https://k/x.key?v=1") == "https://k/x.key?v=1&token={$token}")
        #expect(ChannelState.appendingPlaybackToken(to: "key-3.key?token={$token}") == "key-3.key?token={$token}")
    }

    @Test func aRefusedRequestLeavesCachesAndMetricsAsTheyWere() throws {
        let stack = try Self.stack()
        let handler = stack.handler
        // Warm up what allowed requests keep: a prepared segment, a cached media playlist.
        #expect(try stack.get("/live/ch/360p/0.ts?token=\(Self.token(stack))").status == 200)
        #expect(try stack.get("/live/ch/360p/index.m3u8").status == 200)
        let cache = handler.live.answers.usage
        let segments = handler.live.prepared.segmentUsage.count
        let responses = handler.metrics.snapshot.map { "\($0.0)=\($0.1)" }
        // Plain requests (the fast path) and requests with a bad token, of every protected kind.
        for path in Self.protectedPaths {
            #expect(try stack.get(path).status == 403)
            #expect(try stack.get(path + "?token=bad").status == 403)
        }
        #expect(handler.live.answers.usage == cache)
        #expect(handler.live.prepared.segmentUsage.count == segments)
        #expect(handler.metrics.snapshot.map { "\($0.0)=\($0.1)" } == responses)
        #expect(handler.playbackRefusals.counts(channel: "ch") == ["missing": 5, "malformed": 5])
        let metrics = try stack.get("/metrics").text
        #expect(metrics.contains("hlsorigin_playback_refused_total{channel=\"ch\",reason=\"missing\"} 5\n"))
        #expect(metrics.contains("hlsorigin_playback_refused_total{channel=\"ch\",reason=\"malformed\"} 5\n"))
    }

    /// `handlePlain` with a thread index past the per-thread tables (no table is touched, so nothing races with the
    /// server's own threads): nil means the request goes the normal route.
    static func plain(_ stack: OriginTestStack, _ path: String) -> HTTPRequestAction? {
        Array(path.utf8).withUnsafeBytes { bytes in
            stack.handler.handlePlain(
                PlainRequest(
                    isHead: false, path: bytes, acceptEncoding: nil, threadIndex: LiveAnswerCache.threadCapacity))
        }
    }

    @Test func theFastPathAnswersOnlyPlaylistsOfAProtectedChannel() throws {
        let stack = try Self.stack()
        #expect(Self.plain(stack, "/live/ch/360p/index.m3u8") != nil)
        for path in Self.protectedPaths {
            #expect(Self.plain(stack, path) == nil, "\(path)")
        }
        let open = try OriginTestStack()
        try open.slots(2)
        #expect(Self.plain(open, "/live/ch/360p/0.ts") != nil)
        #expect(Self.plain(open, "/live/ch/index.m3u8") != nil)
        // Over HTTP: refused plain requests keep nothing in the per-thread tables.
        let connection = try stack.connect()
        #expect(try connection.request("GET", "/live/ch/360p/index.m3u8").status == 200)
        let before = stack.handler.live.answers.usage
        for path in Self.protectedPaths {
            #expect(try connection.request("GET", path).status == 403)
        }
        #expect(stack.handler.live.answers.usage == before)
    }

    @Test func theDVRMultivariantNeedsATokenAndCarriesIt() throws {
        let directory = NSTemporaryDirectory() + "playback-dvr-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let stack = try Self.stack(dataDirectory: directory)
        try stack.slots(5)
        let start = "-6"
        #expect(try stack.get("/live/ch/index.m3u8?start=\(start)").status == 403)
        let token = Self.token(stack)
        let dvr = try stack.get("/live/ch/index.m3u8?start=\(start)&token=\(token)")
        #expect(dvr.status == 200, "\(dvr.text)")
        #expect(dvr.header("Cache-Control") == "private, no-store")
        let lines = dvr.text.split(separator: "\n")
        #expect(lines.contains("#EXT-X-DEFINE:NAME=\"token\",VALUE=\"\(token)\""))
        // The relative start is fixed to an absolute one, as for open channels.
        #expect(lines.contains { $0.hasPrefix("360p/index.m3u8?start=1767") })
        // A malformed DVR query is still a 400 once authorized; its media playlist stays open.
        #expect(try stack.get("/live/ch/index.m3u8?start=never&token=\(token)").status == 400)
        #expect(try stack.get("/live/ch/360p/index.m3u8?start=\(start)").status == 200)
    }

    /// A time-shifted media playlist of a protected channel imports the token and lists its segments with it, like the
    /// live one (its segments are checked), at version 8.
    @Test func theDVRMediaPlaylistImportsTheTokenAndSuffixesItsSegments() throws {
        let directory = NSTemporaryDirectory() + "playback-dvr-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let stack = try Self.stack(dataDirectory: directory)
        try stack.slots(5)
        let dvr = try stack.get("/live/ch/360p/index.m3u8?start=-6")
        #expect(dvr.status == 200, "\(dvr.text)")
        let lines = dvr.text.split(separator: "\n")
        #expect(lines.contains("#EXT-X-VERSION:8"))
        #expect(lines.contains("#EXT-X-DEFINE:IMPORT=\"token\""))
        let uris = lines.filter { !$0.hasPrefix("#") }
        #expect(!uris.isEmpty)
        #expect(uris.allSatisfy { $0.hasSuffix(".ts?token={$token}") }, "\(uris)")
    }

    @Test func theQueryParameterDVRMultivariantKeepsTheSuffixBeforeTheDVRQuery() throws {
        let directory = NSTemporaryDirectory() + "playback-dvr-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let stack = try Self.stack(form: .queryParameter, dataDirectory: directory)
        let dvr = try stack.get("/live/ch/index.m3u8?start=-4&token=\(Self.token(stack))")
        #expect(dvr.status == 200, "\(dvr.text)")
        let lines = dvr.text.split(separator: "\n")
        #expect(lines.contains("#EXT-X-DEFINE:QUERYPARAM=\"token\""))
        #expect(lines.contains { $0.hasPrefix("360p/index.m3u8?token={$token}&start=1767") })
    }

    @Test func adminIssuesTokensThatOpenTheChannel() throws {
        let stack = try Self.stack()
        let response = try stack.request("POST", "/admin/channels/ch/tokens", body: Array(#"{"ttlSeconds": 600}"#.utf8))
        #expect(response.status == 201, "\(response.text)")
        struct Answer: Decodable {
            let token: String
            let expires: String
            let multivariant: String
        }
        let answer = try JSONDecoder().decode(Answer.self, from: Data(response.body))
        let expiry = Self.nowSeconds(stack) + 600
        #expect(answer.token == PlaybackToken.issue(channel: "ch", expirySeconds: expiry, secret: Self.secret))
        #expect(answer.expires == Self.iso8601(expiry))
        #expect(answer.multivariant == "/live/ch/index.m3u8?token=\(answer.token)")
        #expect(try stack.get(answer.multivariant).status == 200)
        #expect(try stack.request("POST", "/admin/channels/ch/tokens").status == 201)
        #expect(
            try stack.request("POST", "/admin/channels/ch/tokens", body: Array(#"{"ttlSeconds": 3601}"#.utf8)).status
                == 400)
        #expect(try stack.request("POST", "/admin/channels/ch/tokens", body: Array("{".utf8)).status == 400)
        #expect(try stack.request("POST", "/admin/channels/nope/tokens").status == 404)
        #expect(try stack.request("GET", "/admin/channels/ch/tokens").status == 405)
    }

    @Test func anOpenChannelIssuesNoTokensAndAnswersWithoutOne() throws {
        let stack = try OriginTestStack()
        try stack.slots(2)
        #expect(try stack.request("POST", "/admin/channels/ch/tokens").status == 409)
        #expect(try stack.get("/live/ch/index.m3u8").status == 200)
        #expect(try stack.get("/live/ch/360p/0.ts").status == 200)
        #expect(!(try stack.get("/live/ch/360p/index.m3u8").text.contains("DEFINE")))
        #expect(!(try stack.get("/metrics").text.contains("hlsorigin_playback_refused_total")))
        let status = try stack.get("/admin/channels/ch").text
        #expect(!status.contains("\"playback\""))
    }

    @Test func statusCountsRefusalsByReason() throws {
        let stack = try Self.stack()
        #expect(try stack.get("/live/ch/index.m3u8").status == 403)
        #expect(try stack.get("/live/ch/360p/0.ts?token=x").status == 403)
        #expect(try stack.get("/live/ch/360p/0.ts?token=x").status == 403)
        struct Status: Decodable {
            struct Playback: Decodable {
                let form: String
                let refused: [String: Int]
            }
            let name: String
            let playback: Playback
        }
        let one = try JSONDecoder().decode(Status.self, from: Data(try stack.get("/admin/channels/ch").body))
        #expect(one.name == "ch")
        #expect(one.playback.form == "import")
        #expect(one.playback.refused == ["missing": 1, "malformed": 2])
        let all = try JSONDecoder().decode([Status].self, from: Data(try stack.get("/admin/channels").body))
        #expect(all.map(\.playback.refused) == [["missing": 1, "malformed": 2]])
    }

    @Test func keyURIsCarryTheTokenAndTheKeysPartIsKept() throws {
        let keys = PlaylistDecoration(keys: KeySchedule(), keyURI: { "https://k/\($0).key?v=1" })
        let playback = PlaybackAuthorization(form: .importVariable, secret: Self.secret)
        let decorated = ChannelState.playbackDecorated(keys, playback: playback)
        #expect(decorated.definitions == [.import(name: "token")])
        #expect(decorated.uriSuffix == "?token={$token}")
        #expect(decorated.keys == keys.keys)
        #expect(decorated.keyURI(7) == "https://k/7.key?v=1&token={$token}")
        #expect(ChannelState.playbackDecorated(.none, playback: playback).keyURI(3) == "../key-3.key?token={$token}")
        let open = ChannelState.playbackDecorated(keys, playback: nil)
        #expect(open.definitions.isEmpty && open.uriSuffix.isEmpty)
        #expect(open.keyURI(7) == "https://k/7.key?v=1")
    }
}

/// The worked example of docs/design/iframes-define-aes-design.md section 7, byte for byte: what the playback part
/// adds to the multivariant and media playlists of channel `news` (import form, keys rotating every 3 segments).
@Suite("Playback authorization: the design's worked example", .offThePool)
struct PlaybackWorkedExampleTests {
    static let token = "1795914000-3q2-7wAAAAC0aGxzb3Jp_w"
    static let playback = PlaybackAuthorization(
        form: .importVariable, secret: Array("worked example secret, 32 bytes or more".utf8))

    /// The multivariant playlist as the core builds it before the playback part (session key without suffix).
    static var multivariant: MultivariantPlaylist {
        var playlist = MultivariantPlaylist(
            independentSegments: true,
            variants: [
                VariantStream(
                    uri: "hi/index.m3u8", bandwidth: 2_612_000, averageBandwidth: 2_180_000,
                    codecs: ["avc1.64001f", "mp4a.40.2"], resolution: Resolution(width: 1280, height: 720),
                    frameRate: 30)
            ])
        playlist.sessionKeys = [.aes128(uri: "key-34.key")]
        playlist.iFrameStreams = [
            IFrameStream(
                uri: "hi/iframes.m3u8", bandwidth: 301_000, averageBandwidth: 262_000, codecs: ["avc1.64001f"],
                resolution: Resolution(width: 1280, height: 720))
        ]
        return playlist
    }

    @Test func importFormMultivariantJoinedWithTheRequestsToken() {
        let template = ChannelState.playbackMultivariant(Self.multivariant, playback: Self.playback).render()
        let joined = OriginHTTPHandler.joinedMultivariant(SharedBytes(string: template), token: Self.token)
        #expect(
            String(decoding: joined.array, as: UTF8.self) == """
                #EXTM3U
                #EXT-X-VERSION:8
                #EXT-X-INDEPENDENT-SEGMENTS
                #EXT-X-DEFINE:NAME="token",VALUE="1795914000-3q2-7wAAAAC0aGxzb3Jp_w"
                #EXT-X-SESSION-KEY:METHOD=AES-128,URI="key-34.key?token={$token}"
                #EXT-X-STREAM-INF:BANDWIDTH=2612000,AVERAGE-BANDWIDTH=2180000,CODECS="avc1.64001f,mp4a.40.2",RESOLUTION=1280x720,FRAME-RATE=30.000
                hi/index.m3u8
                #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=301000,AVERAGE-BANDWIDTH=262000,CODECS="avc1.64001f",RESOLUTION=1280x720,URI="hi/iframes.m3u8"

                """)
    }

    @Test func queryParameterFormMultivariant() {
        var playback = Self.playback
        playback.form = .queryParameter
        #expect(
            ChannelState.playbackMultivariant(Self.multivariant, playback: playback).render() == """
                #EXTM3U
                #EXT-X-VERSION:11
                #EXT-X-INDEPENDENT-SEGMENTS
                #EXT-X-DEFINE:QUERYPARAM="token"
                #EXT-X-SESSION-KEY:METHOD=AES-128,URI="key-34.key?token={$token}"
                #EXT-X-STREAM-INF:BANDWIDTH=2612000,AVERAGE-BANDWIDTH=2180000,CODECS="avc1.64001f,mp4a.40.2",RESOLUTION=1280x720,FRAME-RATE=30.000
                hi/index.m3u8?token={$token}
                #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=301000,AVERAGE-BANDWIDTH=262000,CODECS="avc1.64001f",RESOLUTION=1280x720,URI="hi/iframes.m3u8?token={$token}"

                """)
    }

    /// Rendition `hi`: 100..103 listed, 101 a GAP, 103 after the feed came back; DSN 4.
    static var window: LiveWindow {
        var window = LiveWindow(length: .segments(4), targetDuration: 2, discontinuitySequence: 4)
        let start: Int64 = 1_795_480_800_000  // 2026-11-24T00:40:00Z
        for (index, msn) in (100...103).enumerated() {
            let content: WindowEntry.Content =
                msn == 101 ? .gap(filler: nil) : .segment(SharedBytes([0x47]), startsWithKeyframe: true)
            window.append(
                WindowEntry(
                    msn: UInt64(msn), durationMilliseconds: msn == 103 ? 1960 : 2000,
                    programDateTimeMilliseconds: start + Int64(index) * 2000, discontinuity: msn == 103,
                    content: content, container: .mpegTS, initSectionVersion: nil),
                nowMilliseconds: start + Int64(index) * 2000)
        }
        return window
    }

    @Test func mediaPlaylistWithKeysAndTheToken() {
        var schedule = KeySchedule()
        schedule.change(rotateEvery: 3, fromMSN: 0)
        let decoration = ChannelState.playbackDecorated(PlaylistDecoration(keys: schedule), playback: Self.playback)
        #expect(
            Self.window.playlist(independentSegments: true, decoration: decoration).render() == """
                #EXTM3U
                #EXT-X-VERSION:8
                #EXT-X-TARGETDURATION:2
                #EXT-X-MEDIA-SEQUENCE:100
                #EXT-X-DISCONTINUITY-SEQUENCE:4
                #EXT-X-INDEPENDENT-SEGMENTS
                #EXT-X-DEFINE:IMPORT="token"
                #EXT-X-KEY:METHOD=AES-128,URI="../key-33.key?token={$token}"
                #EXT-X-PROGRAM-DATE-TIME:2026-11-24T00:40:00.000Z
                #EXTINF:2.000,
                100.ts?token={$token}
                #EXT-X-PROGRAM-DATE-TIME:2026-11-24T00:40:02.000Z
                #EXT-X-GAP
                #EXTINF:2.000,
                101.ts?token={$token}
                #EXT-X-KEY:METHOD=AES-128,URI="../key-34.key?token={$token}"
                #EXT-X-PROGRAM-DATE-TIME:2026-11-24T00:40:04.000Z
                #EXTINF:2.000,
                102.ts?token={$token}
                #EXT-X-DISCONTINUITY
                #EXT-X-PROGRAM-DATE-TIME:2026-11-24T00:40:06.000Z
                #EXTINF:1.960,
                103.ts?token={$token}

                """)
    }

    @Test func queryParameterFormMediaPlaylistIsVersion11() {
        var playback = Self.playback
        playback.form = .queryParameter
        let text = Self.window.playlist(
            independentSegments: true, decoration: ChannelState.playbackDecorated(.none, playback: playback)
        ).render()
        let lines = text.split(separator: "\n")
        #expect(lines.prefix(2) == ["#EXTM3U", "#EXT-X-VERSION:11"])
        #expect(lines.contains("#EXT-X-DEFINE:QUERYPARAM=\"token\""))
        #expect(lines.last == "103.ts?token={$token}")
        #expect(!text.contains("EXT-X-KEY"))
    }
}
