import Foundation
import HLSCrypto
import HLSPackaging
import LiveTimeline
import MicroHTTPD
import OriginCore
import PeerRepair
import ContinuousTSInput
import SRTInput
import SharedBytes
import Synchronization

/// Playback authorization of `/live/{channel}/...` for channels with `playback` set: the multivariant playlist (live
/// and DVR), segments (GAP fillers and stored ones included), init sections, keys and I-frame resources need a valid
/// `?token=`; media and I-frame playlists never do (they are the same for every viewer and hold no secret).
extension OriginHTTPHandler {
    /// The token a request presents: the first `token` argument of its query ("" for `?token` without a value).
    static func playbackToken(_ request: HTTPRequestHead) -> String? {
        guard let argument = request.query.first(where: { $0.name == ChannelState.playbackTokenName }) else {
            return nil
        }
        return argument.value ?? ""
    }

    /// nil when `request` may have what it asks of `channel` (no authorization configured, or a valid token); else
    /// the 403 to answer. A refusal changes nothing but `hlsorigin_playback_refused_total`.
    func authorize(_ request: HTTPRequestHead, channel: Channel) -> HTTPResponse? {
        guard let playback = channel.configuration.playback else { return nil }
        let verdict = PlaybackToken.verify(
            Self.playbackToken(request), channel: channel.name, secret: playback.secret,
            nowSeconds: Self.floorSeconds(origin.clock.nowMilliseconds()), maxAheadSeconds: playback.maxTokenSeconds)
        guard case .failure(let error) = verdict else { return nil }
        playbackRefusals.record(channel: channel.name, reason: error.metricLabel)
        return Self.playbackRefusal(error)
    }

    /// The 403 of a refused token: the reason on one line, never cached; CORS as on every answer.
    static func playbackRefusal(_ error: PlaybackTokenError) -> HTTPResponse {
        var response = HTTPResponse.text(403, error.description + "\n")
        response.headers.append(name: "Cache-Control", value: "no-store")
        for (name, value) in standardHeaders where !response.headers.contains(name) {
            response.headers.append(name: name, value: value)
        }
        return response
    }

    /// What the playback gate decided.
    enum PlaybackGateOutcome {
        /// The route answers (no authorization configured, or a valid token).
        case pass
        /// A refused token's 403 (complete, not counted in `hlsorigin_http_responses_total`).
        case refused(HTTPResponse)
        /// The answer instead of the route's: the `import` form multivariant joined with the viewer's token.
        case answer(HTTPResponse)
    }

    /// The gate of every `/live` route but the media and I-frame playlists (`RouteNeeds.playbackGate`), before any
    /// other check of the route or cache. `viewerToken`: the route is the live multivariant, which in `import` form
    /// is answered here joined with the request's token.
    func playbackGate(_ request: HTTPRequestHead, channel: Channel, viewerToken: Bool) -> PlaybackGateOutcome {
        guard let playback = channel.configuration.playback else { return .pass }
        if let refusal = authorize(request, channel: channel) { return .refused(refusal) }
        // The DVR multivariant (`start`/`end`) is joined by `dvr()`, after its query is checked.
        guard playback.form == .importVariable, viewerToken,
            !request.query.contains(where: { $0.name == "start" || $0.name == "end" })
        else { return .pass }
        let snapshot = channel.snapshot
        guard let template = snapshot.steeredMultivariant ?? snapshot.multivariantPlaylist else {
            return .answer(.text(404, "channel '\(channel.name)' has no media yet\n"))
        }
        return .answer(viewerMultivariant(template, request: request))
    }

    /// A multivariant playlist for one viewer (`import` form): `template` with the request's (already verified) token
    /// as the value of its `token` definition; `Cache-Control: private, no-store` and no validators.
    func viewerMultivariant(_ template: SharedBytes, request: HTTPRequestHead) -> HTTPResponse {
        let joined = Self.joinedMultivariant(template, token: Self.playbackToken(request) ?? "")
        return HTTPResponse(
            status: 200, headers: ["Content-Type": Self.playlistType, "Cache-Control": "private, no-store"],
            body: .bytes(joined))
    }

    /// `template` (an `import` form multivariant whose token definition has an empty value) with `token` put between
    /// the quotes. A verified token is `[0-9A-Za-z_-]` only, so it needs no escaping.
    static func joinedMultivariant(_ template: SharedBytes, token: String) -> SharedBytes {
        template.withUnsafeBytes { bytes -> SharedBytes in
            let marker = Array(ChannelState.playbackTemplateMarker.utf8)
            guard let split = Self.offset(of: marker, in: bytes) else {
                assertionFailure("multivariant template without the token definition")
                return template
            }
            var joined: [UInt8] = []
            joined.reserveCapacity(bytes.count + token.utf8.count)
            joined.append(contentsOf: bytes[..<(split + marker.count)])
            joined.append(contentsOf: token.utf8)
            joined.append(contentsOf: bytes[(split + marker.count)...])
            return SharedBytes(joined)
        }
    }

    /// The offset of the first occurrence of `needle` in `haystack` (the DEFINE line comes within the first lines).
    private static func offset(of needle: [UInt8], in haystack: UnsafeRawBufferPointer) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var start = 0
        while start + needle.count <= haystack.count {
            var index = 0
            while index < needle.count, haystack[start + index] == needle[index] { index += 1 }
            if index == needle.count { return start }
            start += 1
        }
        return nil
    }

    /// Unix seconds of a clock reading in ms, rounded down (also before 1970).
    static func floorSeconds(_ milliseconds: Int64) -> Int64 {
        milliseconds >= 0 ? milliseconds / 1000 : -((-milliseconds + 999) / 1000)
    }

    // MARK: - Admin


    /// `POST /admin/channels/{channel}/tokens` `{"ttlSeconds": 3600}`: 201 with a token, its expiry and the
    /// multivariant URL that carries it (for tests and simple setups; backends compute tokens themselves with the
    /// recipe in docs/playback.md). Without a body the token lasts an hour (at most `maxTokenSeconds`).
    func issuePlaybackToken(_ channelName: String, _ body: SharedBytes) -> HTTPResponse {
        guard let channel = origin.channel(named: channelName) else {
            return json(404, ["error": "unknown channel '\(channelName)'"])
        }
        guard let playback = channel.configuration.playback else {
            return json(409, ["error": "channel '\(channelName)' has no playback authorization: tokens are not needed"])
        }
        var ttl = min(3600, playback.maxTokenSeconds)
        if body.count > 0 {
            // Strict like every admin body: an object whose only field is a whole number of seconds (null: left out).
            let value = try? JSONDecoder().decode(JSONValue.self, from: Data(body.array))
            guard case .object(let object)? = value, object.keys.allSatisfy({ $0 == "ttlSeconds" }) else {
                return json(400, ["error": "invalid JSON body: expected {\"ttlSeconds\": 3600} (no other field)"])
            }
            switch object["ttlSeconds"] {
            case nil, .null?: break
            case .number(let seconds)? where seconds == seconds.rounded() && abs(seconds) < 1e15: ttl = Int64(seconds)
            default: return json(400, ["error": "ttlSeconds must be a whole number of seconds", "field": "ttlSeconds"])
            }
        }
        guard ttl > 0, ttl <= playback.maxTokenSeconds else {
            return json(
                400,
                ["error": "ttlSeconds must be > 0 and <= \(playback.maxTokenSeconds) (the channel's maxTokenSeconds)"])
        }
        let expiry = Self.floorSeconds(origin.clock.nowMilliseconds()) + ttl
        let token = PlaybackToken.issue(channel: channel.name, expirySeconds: expiry, secret: playback.secret)
        struct Answer: Encodable {
            let token: String
            let expires: String
            let multivariant: String
        }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return json(
            201,
            Answer(
                token: token, expires: formatter.string(from: Date(timeIntervalSince1970: TimeInterval(expiry))),
                multivariant: "/live/\(channel.name)/index.m3u8?token=\(token)"))
    }

    /// A channel's admin status with its playback part: `{"form": "import", "refused": {"missing": 3}}`.
    func adminStatus(_ channel: Channel) -> ChannelStatusAnswer {
        ChannelStatusAnswer(
            status: channel.status(),
            peers: peerRepairer.map { $0.agreements(channel: channel.configuration.name) },
            srtCallers: srt.map { listener in listener.callers.filter { $0.channel == channel.name } },
            srtStreams: srtStreams?.sessions(channel: channel.name),
            steering: channel.configuration.steering.flatMap { configuration in
                steering.monitor?.status(configuration, channel: channel, name: channel.name)
            },
            playback: channel.configuration.playback.map { playback in
                PlaybackStatus(
                    form: playback.form.rawValue, refused: playbackRefusals.counts(channel: channel.name))
            })
    }
}

/// The playback part of a channel's admin status.
struct PlaybackStatus: Encodable {
    /// `import` or `queryparam`.
    let form: String
    /// Refused requests since the start, by reason (`missing`, `malformed`, `signature`, `expired`, `too_far_ahead`).
    let refused: [String: UInt64]
}

/// A channel's status as the admin API answers it: the core's status with `peers` (redundancy group) and `playback`
/// added when they are configured.
struct ChannelStatusAnswer: Encodable {
    let status: ChannelStatus
    /// With peers configured: the last agreement check with each peer of the redundancy group.
    let peers: [PeerAgreement]?
    /// With an SRT listener (`ingest.srt`): the channel's connected callers and their SRT statistics.
    let srtCallers: [SRTCallerStatus]?
    /// With an SRT listener: the segmenter's session per rendition fed by a caller (segments accepted and refused,
    /// the demuxer's counters, the keyframe-interval warning with the `-g` to use).
    let srtStreams: [String: ContinuousTSSession.Status]?
    /// A steered channel's pathways as its steering manifest ranks them and why, and the origin's heartbeat.
    let steering: SteeringStatus?
    let playback: PlaybackStatus?

    private enum Keys: String, CodingKey { case playback, peers, srtCallers, srtStreams, steering }

    func encode(to encoder: any Encoder) throws {
        try status.encode(to: encoder)
        if let srtCallers {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(srtCallers, forKey: .srtCallers)
            try container.encode(srtStreams ?? [:], forKey: .srtStreams)
        }
        if let peers {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(peers, forKey: .peers)
        }
        if let playback {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(playback, forKey: .playback)
        }
        if let steering {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(steering, forKey: .steering)
        }
    }
}

/// Refused playback requests by channel and reason, for `/metrics` and the admin status. Counting is the only thing a
/// refused request changes.
final class PlaybackRefusals: Sendable {
    private let counts = Mutex<[String: [String: UInt64]]>([:])

    func record(channel: String, reason: String) {
        counts.withLock { $0[channel, default: [:]][reason, default: 0] += 1 }
    }

    /// One channel's counts by reason.
    func counts(channel: String) -> [String: UInt64] {
        counts.withLock { $0[channel] ?? [:] }
    }

    /// Every count, by channel then reason.
    var all: [(channel: String, reason: String, count: UInt64)] {
        counts.withLock { counts in
            counts.sorted { $0.key < $1.key }.flatMap { channel, reasons in
                reasons.sorted { $0.key < $1.key }.map { (channel, $0.key, $0.value) }
            }
        }
    }
}
