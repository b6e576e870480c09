import HLSPlaylist
public import LiveTimeline
import PeerRepair

extension ConfigurationFile {
    /// `steering:` Content Steering across the group's pathways (docs/content-steering.md), for every channel (and
    /// auto-created ones) unless a channel says `steering: false`.
    struct SteeringModel: StrictKeys {
        /// Default true; false keeps the block (checked) but steers nothing.
        var enabled: Bool?
        /// This origin's own base URL as its peers name it in `redundancy.peers`; required when a pathway names
        /// origins.
        var selfURL: String?
        /// Seconds between a player's reloads of the steering manifest (default 10).
        var ttl: Int?
        var pathways: [PathwayModel]?
        /// A base URI every origin of the group answers the same (the nginx tier, a CDN in front of all of them):
        /// when set, every steering manifest's RELOAD-URI is on it rather than on a pathway.
        var reloadBase: String?
        enum CodingKeys: String, CodingKey, CaseIterable { case enabled, selfURL = "self", ttl, pathways, reloadBase }

        /// The TTLs taken, seconds: a reload at least every second, at most every hour.
        static let ttlRange = 1...3600
        /// At most this many pathways (each lists every variant again in the multivariant playlist).
        static let maximumPathways = 8

        /// The channels' steering settings, or nil when `enabled: false`.
        func configuration(peers: [String], source: String) throws -> ContentSteeringConfiguration? {
            func fail(_ message: String) -> ConfigurationError { ConfigurationError("\(source): steering.\(message)") }
            let ttl = ttl ?? 10
            guard Self.ttlRange.contains(ttl) else { throw fail("ttl must be 1-3600 seconds (got \(ttl))") }
            guard let pathways, !pathways.isEmpty else { throw fail("pathways: at least one is required") }
            guard pathways.count <= Self.maximumPathways else {
                throw fail("pathways: at most \(Self.maximumPathways) (got \(pathways.count))")
            }
            let own = try selfURL.map { url -> String in
                guard PeerURL(url) != nil else { throw fail("self: '\(url)' is not an http://host[:port] URL") }
                let url = Self.trimmed(url)
                guard !peers.map(Self.trimmed).contains(url) else {
                    throw fail("self: '\(url)' is one of redundancy.peers; it names this origin")
                }
                return url
            }
            var ids = Set<String>()
            var bases = Set<String>()
            var converted: [ContentSteeringConfiguration.Pathway] = []
            for (index, pathway) in pathways.enumerated() {
                let label = "pathways[\(index)]"
                guard MultivariantPlaylist.isLegalPathwayID(pathway.id), pathway.id.utf8.count <= 64 else {
                    throw fail("\(label).id '\(pathway.id)' must be 1 to 64 of A-Z a-z 0-9 . - _")
                }
                guard ids.insert(pathway.id).inserted else { throw fail("\(label).id '\(pathway.id)' is given twice") }
                let base = try Self.baseURI(pathway.uri, fail: { fail("\(label).uri '\(pathway.uri)' \($0)") })
                guard bases.insert(base).inserted else { throw fail("\(label).uri '\(base)' is another pathway's") }
                var origins: [String] = []
                for origin in pathway.origins ?? [] {
                    let url = Self.trimmed(origin)
                    guard url == own || peers.map(Self.trimmed).contains(url) else {
                        let hint = own == nil ? " (set steering.self to this origin's URL)" : ""
                        throw fail(
                            "\(label).origins: '\(origin)' is neither steering.self nor one of redundancy.peers\(hint)")
                    }
                    guard !origins.contains(url) else { throw fail("\(label).origins: '\(origin)' is given twice") }
                    origins.append(url)
                }
                converted.append(.init(id: pathway.id, baseURI: base, origins: origins))
            }
            let reloadBaseURI = try reloadBase.map { text in
                try Self.baseURI(text, fail: { fail("reloadBase '\(text)' \($0)") })
            }
            guard enabled ?? true else { return nil }
            return ContentSteeringConfiguration(
                pathways: converted, ttlSeconds: ttl, selfURL: own, reloadBaseURI: reloadBaseURI)
        }

        /// `http(s)://host[:port][/path]` without a trailing `/`, query, fragment, user info, quotes, spaces or
        /// control characters (it is written into playlists and JSON as is).
        static func baseURI(_ text: String, fail: (String) -> ConfigurationError) throws -> String {
            let base = trimmed(text)
            let scheme = base.hasPrefix("https://") ? "https://" : base.hasPrefix("http://") ? "http://" : nil
            guard let scheme else { throw fail("must start with http:// or https://") }
            let rest = base.dropFirst(scheme.count)
            let host = rest.prefix { $0 != "/" }
            guard !host.isEmpty, !host.hasPrefix(":"), !host.contains("@") else { throw fail("has no host") }
            guard
                base.unicodeScalars.allSatisfy({
                    $0.value > 0x20 && $0.value < 0x7F && !"\"\\?#<>{}|^`".unicodeScalars.contains($0)
                })
            else { throw fail("may hold no query, fragment, space, quote or control character") }
            return base
        }

        static func trimmed(_ url: String) -> String {
            var url = url
            while url.hasSuffix("/") { url.removeLast() }
            return url
        }
    }

    /// One pathway of `steering.pathways`.
    struct PathwayModel: StrictKeys {
        /// The PATHWAY-ID.
        var id: String
        /// The base URI the pathway serves `/live/...` under: this origin's or a peer's URL, or a CDN hostname.
        var uri: String
        /// The origins whose health the pathway follows (`steering.self`, `redundancy.peers`); none: unchecked.
        var origins: [String]?
        enum CodingKeys: String, CodingKey, CaseIterable { case id, uri, origins }
    }
}
