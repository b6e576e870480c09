import MicroHTTPD

/// A path pattern compiled once: `/live/:channel/:rendition/index.m3u8`. Each piece matches one decoded path
/// segment: a literal (`index.m3u8`), a capture (`:channel`), a capture with a prefix or a suffix (`:key(key-*)`,
/// `:hint(*.m3u8)`; a shaped capture is at most 255 bytes), a file name of 1 to 255 bytes (`:file(name)`), or, last only, the rest of the path (`*rest`, zero or more segments). No regular expressions:
/// a match is a few string comparisons and allocates nothing.
struct RoutePattern: Sendable, CustomStringConvertible {
    enum Piece: Sendable, Equatable {
        case literal(String)
        case capture(String)
        case prefixed(String, prefix: String)
        case suffixed(String, suffix: String)
        /// A file name: 1 to 255 bytes (`:file(name)`).
        case fileName(String)
        case rest(String)
    }

    let pieces: [Piece]
    let description: String
    /// Every capture's name and piece position, computed once.
    let capturePositions: [(name: String, position: Int)]
    /// The positions of the captures the chain and the fast path read on every `/live` request, computed once.
    let channelPosition: Int?
    let renditionPosition: Int?
    let filePosition: Int?

    /// Compiles `text` (a path starting with `/`; `""` segments are literals, as in `/status/`).
    init(_ text: String) {
        description = text
        pieces = text.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map { piece in
            if piece.hasPrefix("*") { return .rest(String(piece.dropFirst())) }
            guard piece.hasPrefix(":") else { return .literal(String(piece)) }
            guard let open = piece.firstIndex(of: "("), piece.hasSuffix(")") else {
                return .capture(String(piece.dropFirst()))
            }
            let name = String(piece[piece.index(after: piece.startIndex)..<open])
            let shape = piece[piece.index(after: open)..<piece.index(before: piece.endIndex)]
            if shape == "name" { return .fileName(name) }
            if shape.hasPrefix("*") { return .suffixed(name, suffix: String(shape.dropFirst())) }
            precondition(shape.hasSuffix("*"), "route pattern \(text): a shape is prefix* or *suffix")
            return .prefixed(name, prefix: String(shape.dropLast()))
        }
        precondition(
            pieces.dropLast().allSatisfy { if case .rest = $0 { false } else { true } },
            "route pattern \(text): *rest comes last")
        let positions: [(name: String, position: Int)] = pieces.enumerated().compactMap { position, piece in
            switch piece {
            case .literal: nil
            case .capture(let n), .prefixed(let n, _), .suffixed(let n, _), .fileName(let n), .rest(let n):
                (n, position)
            }
        }
        capturePositions = positions
        channelPosition = positions.first { $0.name == "channel" }?.position
        renditionPosition = positions.first { $0.name == "rendition" }?.position
        filePosition = positions.first { $0.name == "file" }?.position
    }

    /// Whether `segments` (the whole decoded path) has this shape.
    func matches(_ segments: ArraySlice<String>) -> Bool {
        var index = segments.startIndex
        for piece in pieces {
            if case .rest = piece { return true }
            guard index < segments.endIndex else { return false }
            let segment = segments[index]
            switch piece {
            case .literal(let text): guard segment == text else { return false }
            case .capture: break
            case .prefixed(_, let prefix):
                guard segment.utf8.count <= 255, segment.hasPrefix(prefix) else { return false }
            case .suffixed(_, let suffix):
                guard segment.utf8.count <= 255, segment.hasSuffix(suffix) else { return false }
            case .fileName: guard !segment.isEmpty, segment.utf8.count <= 255 else { return false }
            case .rest: return true
            }
            index += 1
        }
        return index == segments.endIndex
    }

    /// The position of the capture `name` among the pieces; nil if the pattern has none.
    func position(of name: String) -> Int? {
        capturePositions.first { $0.name == name }?.position
    }
}

/// The named captures of a matched path: views into the request's decoded segments, nothing copied.
struct RouteCaptures: Sendable {
    let pattern: RoutePattern
    let segments: ArraySlice<String>

    /// The segment captured as `name` (the first of the rest for `*name`); nil if it is not in the path.
    subscript(_ name: String) -> String? { segment(at: pattern.position(of: name)) }

    /// The `:channel` capture (its position computed with the pattern).
    var channel: String? { segment(at: pattern.channelPosition) }
    /// The `:rendition` capture.
    var rendition: String? { segment(at: pattern.renditionPosition) }
    /// The `:file` capture.
    var file: String? { segment(at: pattern.filePosition) }

    private func segment(at position: Int?) -> String? {
        guard let position else { return nil }
        let index = segments.startIndex + position
        return index < segments.endIndex ? segments[index] : nil
    }

    /// The segments captured by `*name`.
    func rest(_ name: String) -> ArraySlice<String> {
        guard let position = pattern.position(of: name) else { return [] }
        return segments.dropFirst(position)
    }
}

/// What a route asks of the middleware chain (`OriginHTTPHandler.dispatch`), applied in this order before its
/// handler runs: its channel looked up (404 if unknown), the method checked (405), the playback gate (tokens), the
/// time-shift query (`?start=`), the catching-up refusal of playlists, its rendition looked up (404). Access
/// (`AccessPolicy`), CORS, request metrics and the admin audit are the group's (`RouteGroup`) and every route's.
struct RouteNeeds: OptionSet, Sendable {
    let rawValue: Int
    /// The `:channel` capture names a channel (`RouteContext.channel`); its group's 404 otherwise.
    static let channel = RouteNeeds(rawValue: 1 << 0)
    /// A `?token=` for channels with `playback` (`OriginHTTPHandler.playbackGate`).
    static let playbackGate = RouteNeeds(rawValue: 1 << 1)
    /// `?start=`/`?end=` answered from the store (`OriginHTTPHandler.dvr`) before the live answer.
    static let timeShift = RouteNeeds(rawValue: 1 << 2)
    /// A channel catching up with its peers after a restart answers its playlists 503 (`.m3u8` files).
    static let caughtUp = RouteNeeds(rawValue: 1 << 3)
    /// The `:rendition` capture names a published rendition of the channel (`RouteContext.rendition`).
    static let rendition = RouteNeeds(rawValue: 1 << 4)
    /// GET and HEAD only; OPTIONS answers a preflight (`onlyReading`), in place of the method check.
    static let reading = RouteNeeds(rawValue: 1 << 6)
    /// In the playback gate, the `import` form's multivariant is answered joined with the viewer's token.
    static let viewerToken = RouteNeeds(rawValue: 1 << 7)
    /// A body's work makes database round trips with a group database: run off the libmicrohttpd thread.
    static let database = RouteNeeds(rawValue: 1 << 5)
    /// The `:id` capture is looked up as a finished recording (`RouteContext.recording`), once for the handler and
    /// the CMSD.
    static let recording = RouteNeeds(rawValue: 1 << 8)
}

/// How a route answers a method it does not take.
enum WrongMethodAnswer: Sendable {
    /// 405 with a text body and `Allow`.
    case text
    /// 405 with `{"error": ...}` (the admin API).
    case json
}

/// How long a kept `/live` answer holds (read before the route reads the snapshot).
enum CachedAs: Sendable {
    /// While the channel's snapshot version holds.
    case channelVersion
    /// While the `:rendition`'s version holds (its media and I-frame playlists).
    case renditionVersion
    /// A segment `{msn}.{ext}` or part `{msn}.{part}.{ext}` of the `:rendition`: while its MSN is retained.
    case renditionMedia
}

/// One route: the methods it takes, its pattern, what it needs from the chain, and its handler.
final class Route: Sendable {
    /// What tests and logs call it: `live.segment`, `admin.markers`.
    let name: String
    /// The methods it answers, in the order `Allow` lists them (OPTIONS is added there); empty: every method (the
    /// handler answers 405 itself).
    let methods: [String]
    let pattern: RoutePattern
    let needs: RouteNeeds
    let wrongMethod: WrongMethodAnswer
    /// How long a `/live` answer kept by the fast path (`LiveAnswerCache`) holds.
    let cachedAs: CachedAs
    let handler: @Sendable (OriginHTTPHandler, RouteContext) -> HTTPRequestAction

    init(
        _ name: String, _ methods: [String], _ pattern: String, needs: RouteNeeds = [],
        wrongMethod: WrongMethodAnswer = .text, cachedAs: CachedAs = .channelVersion,
        _ handler: @escaping @Sendable (OriginHTTPHandler, RouteContext) -> HTTPRequestAction
    ) {
        self.name = name
        self.methods = methods
        self.pattern = RoutePattern(pattern)
        self.needs = needs
        self.wrongMethod = wrongMethod
        self.cachedAs = cachedAs
        self.handler = handler
    }

    /// Whether it answers `method`.
    func takes(_ method: String) -> Bool { methods.isEmpty || methods.contains(method) }

    /// The `Allow` list of a 405.
    var allowed: String { (methods + ["OPTIONS"]).joined(separator: ", ") }
}

/// What the chain does for every request under one first path segment (`/live`, `/admin`, ...), before any route
/// of the group is matched: the CORS preflight, access (`AccessPolicy`), read-only methods; and what it answers
/// when no route matches.
final class RouteGroup: Sendable {
    enum Access: Sendable {
        case open
        /// The admin API's tokens (`admin.token`, `admin.tokens`); loopback clients only without one.
        case admin
        /// The tokens that grant pushes into the `:channel` and `:rendition` the path names.
        case ingest
    }

    let name: String
    /// OPTIONS anywhere in the group answers a preflight with these methods; nil: only a route that reads does.
    let preflight: String?
    let access: Access
    /// Only GET and HEAD, whatever the path (checked after access, before the path).
    let readOnly: Bool
    /// Non-GET requests (also refused or unknown paths) go to the audit log once answered.
    let audited: Bool
    /// The answer when no route's pattern matches.
    let notFound: @Sendable () -> HTTPResponse
    /// The answer when a route's `:channel` names no channel (`RouteNeeds.channel`); nil: `notFound`'s.
    private let unknownChannelAnswer: (@Sendable (String) -> HTTPResponse)?
    let routes: [Route]

    init(
        name: String, preflight: String?, access: Access, readOnly: Bool, audited: Bool,
        notFound: @escaping @Sendable () -> HTTPResponse,
        unknownChannel: (@Sendable (String) -> HTTPResponse)? = nil, routes: [Route]
    ) {
        self.name = name
        self.preflight = preflight
        self.access = access
        self.readOnly = readOnly
        self.audited = audited
        self.notFound = notFound
        self.unknownChannelAnswer = unknownChannel
        self.routes = routes
    }

    /// The answer when a route's `:channel` names no channel: the group's own, else its `notFound`.
    func unknownChannel(_ name: String) -> HTTPResponse { unknownChannelAnswer?(name) ?? notFound() }
}

/// The outcome of matching a path in the table.
enum RouteResolution: Sendable {
    /// A route's pattern matched (`methodAllowed` false: the path is known, the method is not).
    case route(RouteGroup, Route, RouteCaptures, methodAllowed: Bool)
    /// The group knows no such path.
    case unknownPath(RouteGroup)
    /// No group has this first segment.
    case unknownGroup
}

/// Every route of the origin, by group; groups are found by a switch on the first path segment, routes in the order
/// they are declared (the first whose pattern matches wins).
struct RouteTable: Sendable {
    let live: RouteGroup
    let vod: RouteGroup
    let ingest: RouteGroup
    let admin: RouteGroup
    let status: RouteGroup
    let peer: RouteGroup
    let health: RouteGroup
    let metrics: RouteGroup

    /// The group of a first segment: a switch, no table lookup.
    func group(_ first: String) -> RouteGroup? {
        switch first {
        case "live": live
        case "vod": vod
        case "ingest": ingest
        case "admin": admin
        case "status": status
        case "peer": peer
        case "healthz": health
        case "metrics": metrics
        default: nil
        }
    }

    /// Matches `method` and the decoded `segments` of a path (the group's name first).
    func resolve(method: String, _ segments: [String]) -> RouteResolution {
        guard let first = segments.first, let group = group(first) else { return .unknownGroup }
        let path = segments[...]
        for route in group.routes where route.pattern.matches(path) {
            return .route(
                group, route, RouteCaptures(pattern: route.pattern, segments: path), methodAllowed: route.takes(method))
        }
        return .unknownPath(group)
    }
}
