import LiveTimeline
public import HLSPlaylist

/// A time named by a DVR query argument (`start` or `end`).
public enum DVRTime: Sendable, Hashable {
    /// A point on the PDT timeline, ms since the epoch: an ISO 8601 date or epoch seconds.
    case absolute(milliseconds: Int64)
    /// A point this many ms before now: a negative number of seconds (`-3600`).
    case beforeNow(milliseconds: Int64)

    /// The point on the PDT timeline, ms since the epoch.
    public func milliseconds(nowMilliseconds now: Int64) -> Int64 {
        switch self {
        case .absolute(let milliseconds): milliseconds
        case .beforeNow(let milliseconds): now - milliseconds
        }
    }
}

/// Why a DVR query cannot be answered, with a message a response body can show as it is.
public struct DVRQueryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of refusal (the HTTP layer maps it to a status).
    public enum Kind: Sendable, Hashable {
        /// A value that is not a time, `end` without `start`, `end <= start`: 400.
        case malformed
        /// A start outside the DVR window, or no window at all: 404.
        case outsideWindow
    }

    public var kind: Kind
    public var message: String

    public init(kind: Kind, message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}

/// What the store holds of a channel, on the PDT timeline, for resolving a query.
public struct DVRWindow: Sendable, Hashable {
    /// PDT of the oldest slot kept (the horizon), ms since the epoch.
    public var horizonMilliseconds: Int64
    /// End of the newest closed slot (the live edge), ms since the epoch.
    public var liveEdgeMilliseconds: Int64

    public init(horizonMilliseconds: Int64, liveEdgeMilliseconds: Int64) {
        self.horizonMilliseconds = horizonMilliseconds
        self.liveEdgeMilliseconds = liveEdgeMilliseconds
    }

    /// `<horizon> to <live edge>` as dates, for messages.
    public var described: String {
        ProgramDateTime(millisecondsSince1970: horizonMilliseconds).formatted + " to "
            + ProgramDateTime(millisecondsSince1970: liveEdgeMilliseconds).formatted
    }
}

/// A DVR query resolved against a window at one moment: which playlist to answer.
public struct DVRInterval: Sendable, Hashable {
    /// The kind of playlist.
    public enum Kind: Sendable, Hashable {
        /// `start=T` (absolute): EVENT from the slot containing T, growing to the live edge, with EXT-X-START at T.
        case startOver
        /// `start=-S`: a sliding window of the last S seconds (no PLAYLIST-TYPE; its head moves), EXT-X-START at T.
        case sliding
        /// `start=T&end=E`, E at or before the live edge (by the event grace): VOD + ENDLIST of the slots
        /// overlapping [T, E).
        case catchUp
        /// `start=T&end=E`, E after the live edge (or passed within the event grace): EVENT that gets ENDLIST once
        /// the slot containing E is closed.
        case event
    }

    public var kind: Kind
    /// T, ms since the epoch.
    public var startMilliseconds: Int64
    /// E, ms since the epoch (`catchUp` and `event`).
    public var endMilliseconds: Int64?

    public init(kind: Kind, startMilliseconds: Int64, endMilliseconds: Int64? = nil) {
        self.kind = kind
        self.startMilliseconds = startMilliseconds
        self.endMilliseconds = endMilliseconds
    }

    /// EXT-X-PLAYLIST-TYPE of the answer.
    public var playlistType: PlaylistType? {
        switch kind {
        case .startOver, .event: .event
        case .catchUp: .vod
        case .sliding: nil
        }
    }

    /// The query that asks for this interval in absolute times, `start=<epoch s.mmm>[&end=<epoch s.mmm>]`: what a
    /// multivariant playlist passes on to its variant URIs, so that every variant starts (and ends) at the same
    /// point however late each is requested.
    public var absoluteQuery: String {
        var query = "start=" + Self.epochSeconds(startMilliseconds)
        if let endMilliseconds { query += "&end=" + Self.epochSeconds(endMilliseconds) }
        return query
    }

    /// Milliseconds since the epoch as seconds with three decimals (`1795416545.123`).
    static func epochSeconds(_ milliseconds: Int64) -> String {
        let magnitude = milliseconds.magnitude
        let fraction = String(magnitude % 1000)
        return (milliseconds < 0 ? "-" : "") + String(magnitude / 1000) + "."
            + String(repeating: "0", count: 3 - fraction.count) + fraction
    }
}

/// The `start` and `end` arguments of a playlist URL (issue: DVR start-over and catch-up).
///
/// Each is an ISO 8601 date-time (`2026-11-23T06:49:05Z`, with or without fraction, with `Z`, `±hh:mm`, `±hhmm` or
/// no zone, which means UTC), epoch seconds with an optional fraction (`1795416545.5`), or a negative number of
/// seconds before now (`-3600`). Every other query argument is ignored.
public struct DVRQuery: Sendable, Hashable {
    public var start: DVRTime
    public var end: DVRTime?

    public init(start: DVRTime, end: DVRTime? = nil) {
        self.start = start
        self.end = end
    }

    /// Reads `start` and `end` from decoded query arguments (the first of each name counts; a `+` decoded as a
    /// space is read as `+`, as in a zone offset). Returns nil when neither is there: the live playlist.
    /// - Throws: a `.malformed` ``DVRQueryError`` for a value that is no time, or `end` without `start`.
    public static func parse(
        _ arguments: [(name: String, value: String?)]
    ) throws(DVRQueryError) -> DVRQuery? {
        let startArgument = arguments.first { $0.name == "start" }
        let endArgument = arguments.first { $0.name == "end" }
        guard startArgument != nil || endArgument != nil else { return nil }
        guard let startArgument else {
            throw DVRQueryError(kind: .malformed, message: "end: needs a start (start=T&end=E)")
        }
        let start = try time(startArgument.value ?? "", argument: "start")
        let end = try endArgument.map { argument throws(DVRQueryError) in
            try time(argument.value ?? "", argument: "end")
        }
        return DVRQuery(start: start, end: end)
    }

    /// Reads one time value.
    /// - Parameters:
    ///   - text: the decoded value.
    ///   - argument: its name, for the message.
    /// - Throws: a `.malformed` ``DVRQueryError``.
    public static func time(_ text: String, argument: String) throws(DVRQueryError) -> DVRTime {
        let value = text.replacing(" ", with: "+")
        if value.hasPrefix("-"), let milliseconds = decimalMilliseconds(value.dropFirst()) {
            return .beforeNow(milliseconds: milliseconds)
        }
        if let milliseconds = decimalMilliseconds(value[...]) {
            return .absolute(milliseconds: milliseconds)
        }
        if let date = ProgramDateTime(iso8601: value) ?? ProgramDateTime(iso8601: value + "Z") {
            return .absolute(milliseconds: date.millisecondsSince1970)
        }
        let shown = value.count > 64 ? String(value.prefix(64)) + "..." : value
        let printable = String(
            shown.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?" })
        throw DVRQueryError(
            kind: .malformed,
            message: "\(argument): '\(printable)' is not an ISO 8601 date, epoch seconds or negative seconds")
    }

    /// `[0-9]+(\.[0-9]*)?` as milliseconds (rounded half up), at most 12 integer digits; nil otherwise.
    static func decimalMilliseconds(_ text: Substring) -> Int64? {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let digits = Set("0123456789")
        guard let whole = parts.first, !whole.isEmpty, whole.count <= 12, whole.allSatisfy(digits.contains),
            let seconds = Int64(whole)
        else { return nil }
        var fraction: Int64 = 0
        if parts.count == 2 {
            let decimals = parts[1]
            guard decimals.count <= 9, decimals.allSatisfy(digits.contains) else { return nil }
            let padded = decimals + String(repeating: "0", count: 9 - decimals.count)
            fraction = ((Int64(padded) ?? 0) + 500_000) / 1_000_000
        }
        return seconds * 1000 + fraction
    }

    /// Which playlist answers the query now.
    /// - Parameters:
    ///   - window: what the store holds; nil when it holds no closed slot yet.
    ///   - now: the shared clock, ms since the epoch.
    ///   - eventGrace: how long after the live edge passed E the answer stays an EVENT (that now ends with
    ///     ENDLIST) before it becomes VOD: a player that loaded the EVENT while E was ahead reloads within it and sees
    ///     the playlist type it started with (RFC 8216 section 6.2.1 lets an EVENT playlist only grow).
    /// - Throws: `.malformed` when `end <= start`; `.outsideWindow` when T is before the horizon or after now, or
    ///   there is no window.
    public func resolve(
        in window: DVRWindow?, nowMilliseconds now: Int64, eventGraceMilliseconds eventGrace: Int64 = 0
    ) throws(DVRQueryError) -> DVRInterval {
        let start = start.milliseconds(nowMilliseconds: now)
        let end = end?.milliseconds(nowMilliseconds: now)
        if let end, end <= start {
            throw DVRQueryError(
                kind: .malformed,
                message: "end: \(Self.date(end)) is not after start \(Self.date(start))")
        }
        guard let window else {
            throw DVRQueryError(kind: .outsideWindow, message: "start: the channel has no DVR window yet")
        }
        if start < window.horizonMilliseconds {
            throw DVRQueryError(
                kind: .outsideWindow,
                message: "start: \(Self.date(start)) is before the DVR window (\(window.described))")
        }
        if start > now {
            throw DVRQueryError(
                kind: .outsideWindow,
                message: "start: \(Self.date(start)) is after now (\(Self.date(now))); the DVR window is "
                    + window.described)
        }
        guard let end else {
            if case .beforeNow = self.start {
                return DVRInterval(kind: .sliding, startMilliseconds: start)
            }
            return DVRInterval(kind: .startOver, startMilliseconds: start)
        }
        return DVRInterval(
            kind: end + eventGrace <= window.liveEdgeMilliseconds ? .catchUp : .event, startMilliseconds: start,
            endMilliseconds: end)
    }

    private static func date(_ milliseconds: Int64) -> String {
        ProgramDateTime(millisecondsSince1970: milliseconds).formatted
    }
}

extension DVRInterval {
    /// A multivariant playlist's text with this interval's ``absoluteQuery`` on every URI: each variant's URI line
    /// and each `URI="..."` of an EXT-X-MEDIA tag (`?` added, or `&` after a query). Resolved once, so every variant
    /// the player loads, however late, starts (and ends) at the same point. EXT-X-I-FRAME-STREAM-INF lines are
    /// dropped: I-frame playlists are live only (there is no DVR I-frame playlist to point at).
    public func passThrough(multivariant text: String) -> String {
        var output = ""
        output.reserveCapacity(text.utf8.count + 64)
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("#EXT-X-I-FRAME-STREAM-INF:") {
                continue
            } else if line.isEmpty {
                output += line
            } else if !line.hasPrefix("#") {
                output += Self.appending(absoluteQuery, to: line)
            } else if line.hasPrefix("#EXT-X-MEDIA:"), let colon = line.firstIndex(of: ":"),
                let attributes = try? AttributeList.parse(String(line[line.index(after: colon)...])),
                attributes.contains(where: { $0.name == "URI" })
            {
                output += line[...colon]
                output += attributes.map { attribute in
                    guard attribute.name == "URI", let uri = AttributeList.unquoted(attribute.value) else {
                        return attribute.name + "=" + attribute.value
                    }
                    return "URI=" + AttributeList.quoted(Self.appending(absoluteQuery, to: uri[...]))
                }.joined(separator: ",")
            } else {
                output += line
            }
            output += "\n"
        }
        output.removeLast()
        return output
    }

    private static func appending(_ query: String, to uri: Substring) -> String {
        uri + (uri.contains("?") ? "&" : "?") + query
    }
}
