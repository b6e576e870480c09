import HLSPackaging
import MicroHTTPD
import OriginCore

/// CTA-5006 object type (`ot`): what an answer carries.
enum CMSDObjectType: String, Sendable, CaseIterable {
    case manifest = "m"
    case audio = "a"
    case video = "v"
    case muxed = "av"
    case initSection = "i"
    case caption = "c"
    case timedText = "tt"
    case key = "k"
    case other = "o"
}

/// CTA-5006 stream type (`st`): `l` live (segments become available over time), `v` every segment available (a
/// recording, a catch-up listing).
enum CMSDStreamType: String, Sendable, CaseIterable {
    case vod = "v"
    case live = "l"
}

/// The Common Media Server Data (CTA-5006) this origin sends: a `CMSD-Static` Dictionary on every answer (`n` the
/// origin's id, `ot` object type, `sf=h` and `st` on `/live` and `/vod`, `ht` on a held blocking reload) and a
/// `CMSD-Dynamic` List on a held blocking reload (`"id";rd=N`, the response delay). The values of each object and
/// stream type are serialized once here, so an answer costs one header append of a shared string, and a prepared
/// answer carries it from its preparation.
final class CMSDHeaders: Sendable {
    static let staticName = "CMSD-Static"
    static let dynamicName = "CMSD-Dynamic"

    /// The origin id as an sf-string (`"..."`).
    let serializedOriginID: String
    /// `[object type index (9 = none)][stream type index (2 = none)]`.
    private let values: [[String]]

    /// Nil when `originID` is not printable ASCII (the configuration refuses it first).
    init?(originID: String) {
        guard let serialized = StructuredField.serializeString(originID) else { return nil }
        serializedOriginID = serialized
        let objects: [CMSDObjectType?] = CMSDObjectType.allCases + [nil]
        let streams: [CMSDStreamType?] = CMSDStreamType.allCases + [nil]
        values = objects.map { object in
            streams.map { stream in Self.serialize(originID: serialized, object, stream, heldMilliseconds: nil) }
        }
    }

    /// The shared `CMSD-Static` value for an answer carrying `object` (nil: unknown, left out, as CTA-5006 asks) of
    /// a stream of type `stream` (nil: not a stream's answer: no `sf`, no `st`).
    func staticValue(_ object: CMSDObjectType?, _ stream: CMSDStreamType?) -> String {
        let objectIndex = object.flatMap { CMSDObjectType.allCases.firstIndex(of: $0) } ?? CMSDObjectType.allCases.count
        let streamIndex = stream.flatMap { CMSDStreamType.allCases.firstIndex(of: $0) } ?? CMSDStreamType.allCases.count
        return values[objectIndex][streamIndex]
    }

    /// The `CMSD-Static` value of a blocking reload held `heldMilliseconds` (`ht`, integer ms).
    func heldStaticValue(_ stream: CMSDStreamType, heldMilliseconds: Int64) -> String {
        Self.serialize(originID: serializedOriginID, .manifest, stream, heldMilliseconds: max(heldMilliseconds, 0))
    }

    /// The `CMSD-Dynamic` value of a blocking reload held `heldMilliseconds`: this origin's entry with `rd`, the
    /// time from the request to its first body byte.
    func heldDynamicValue(heldMilliseconds: Int64) -> String {
        "\(serializedOriginID);rd=\(max(heldMilliseconds, 0))"
    }

    /// Members in alphabetical order: `ht`, `n`, `ot`, `sf`, `st`.
    private static func serialize(
        originID: String, _ object: CMSDObjectType?, _ stream: CMSDStreamType?, heldMilliseconds: Int64?
    ) -> String {
        var members: [String] = []
        if let heldMilliseconds { members.append("ht=\(min(heldMilliseconds, 999_999_999_999_999))") }
        members.append("n=\(originID)")
        if let object { members.append("ot=\(object.rawValue)") }
        if let stream {
            members.append("sf=h")
            members.append("st=\(stream.rawValue)")
        }
        return members.joined(separator: ",")
    }

    /// Held times are rounded down to two significant digits: under by less than 10% (1,099 -> 1,000; 109 -> 100),
    /// and exact below 100 ms. The waiters one publish releases share answers by rounded value: a hold of under 1 s
    /// takes one of 190 values (each ms below 100, then steps of 10 ms), 1 to 10 s 90 more, 10 to 100 s 90 more
    /// (`PlaylistResponses.HeldForms`, one lock-free slot each); a hold of 100 s or more goes without `ht`. Fewer
    /// than one per waiter of thousands.
    static func roundedHeldTime(_ milliseconds: Int64) -> Int64 {
        var scale: Int64 = 1
        var value = max(milliseconds, 0)
        while value >= 100 {
            value /= 10
            scale *= 10
        }
        return value * scale
    }
}

extension OriginHTTPHandler {
    /// The `CMSD-Static` value of an answer under `group` (nil with `delivery.cmsd: false`): `/live` and `/vod`
    /// answers name their object and stream type from the path (the rendition's tracks for media), the other
    /// groups' answers only the origin (`ot=o`). `timeShift` is a time-shifted `/live` request's `start`/`end` (a
    /// catch-up listing is `st=v`), `recordingChannel` the channel of the finished recording a `/vod` path names
    /// (its rendition's tracks), each as the chain found them.
    func cmsdStatic(
        group: RouteGroup, captures: RouteCaptures?, rendition: RenditionSnapshot?, timeShift: DVRQuery?,
        recordingChannel: Channel?
    ) -> String? {
        guard let cmsd else { return nil }
        let stream: CMSDStreamType
        switch group.name {
        case "live": stream = Self.isCatchUp(timeShift, now: origin.clock.nowMilliseconds()) ? .vod : .live
        case "vod": stream = .vod
        default: return cmsd.staticValue(.other, nil)
        }
        guard let captures, let last = captures.segments.last else { return cmsd.staticValue(.other, stream) }
        if last.hasSuffix(".m3u8") { return cmsd.staticValue(.manifest, stream) }
        if group.name == "live", captures.rendition == nil {
            return cmsd.staticValue(last.hasPrefix("key-") ? .key : .other, stream)
        }
        if last.hasPrefix("init-") { return cmsd.staticValue(.initSection, stream) }
        if last.hasPrefix("iframe-") { return cmsd.staticValue(.video, stream) }
        if last.hasSuffix(".aac") { return cmsd.staticValue(.audio, stream) }
        if last.hasSuffix(".vtt") { return cmsd.staticValue(.caption, stream) }
        let tracks =
            rendition
            ?? captures.rendition.flatMap { name in
                group.name == "vod" ? recordingChannel?.snapshot.renditions[name] : nil
            }
        return cmsd.staticValue(tracks.flatMap(Self.mediaObjectType), stream)
    }

    /// What a rendition's segments carry; nil before its first probe (CTA-5006: an unknown type is left out).
    static func mediaObjectType(_ rendition: RenditionSnapshot) -> CMSDObjectType? {
        switch (rendition.carriesVideo, rendition.carriesAudio) {
        case (true, true): return .muxed
        case (true, false): return .video
        case (false, true): return .audio
        case (false, false): return rendition.carriesSubtitles ? .timedText : nil
        }
    }

    /// A time-shift query whose end has passed: the catch-up listing of a finished stretch (EXT-X-ENDLIST once its
    /// last slot closes), so `st=v`; a start-over without an end is still live.
    static func isCatchUp(_ query: DVRQuery?, now: Int64) -> Bool {
        guard let end = query?.end else { return false }
        return end.milliseconds(nowMilliseconds: now) <= now
    }

    /// `response` with `CMSD-Static: value` unless it carries one.
    static func withCMSD(_ response: HTTPResponse, _ value: String?) -> HTTPResponse {
        guard let value, !response.headers.contains(CMSDHeaders.staticName) else { return response }
        var response = response
        response.headers.append(name: CMSDHeaders.staticName, value: value)
        return response
    }
}
