import HLSPlaylist
public import LiveTimeline

/// The arguments a player adds to a steering manifest request (HLS Content Steering, "Steering Manifest Reload"):
/// `_HLS_pathway` (the pathway it uses now) and `_HLS_throughput` (its measured throughput, bits per second); and
/// the one the previous answer put in its RELOAD-URI, which the player sends back: `steered`, the pathway that
/// answer sent the player to.
public struct SteeringQuery: Sendable, Hashable {
    /// `_HLS_pathway`; nil when absent.
    public var pathway: String?
    /// `_HLS_throughput`; nil when absent.
    public var throughput: UInt64?
    /// `steered`: the first of the previous answer's PATHWAY-PRIORITY (`SteeringManifest.steeredArgument`); nil
    /// when absent or not a single Pathway ID.
    public var steered: String?

    public init(pathway: String? = nil, throughput: UInt64? = nil, steered: String? = nil) {
        self.pathway = pathway
        self.throughput = throughput
        self.steered = steered
    }

    /// The pathway the previous answer sent the player to, when it streams from another one now: it left that one
    /// by its own doing (hls.js moves at once when a request on its pathway fails, without waiting for a reload).
    var fledPathway: String? {
        guard let steered, let pathway, pathway != steered else { return nil }
        return steered
    }

    /// The largest `_HLS_throughput` taken: 10 Tbit/s.
    public static let maximumThroughput: UInt64 = 10_000_000_000_000

    /// Reads the query; other arguments (a CDN's, CMCD) are ignored. Throws the 400 reason for a malformed
    /// `_HLS_pathway`: given twice or without a value, or not a legal Pathway ID (`.` included: hls.js sends it
    /// before it knows a pathway). `_HLS_throughput` is advisory and never refused: one that is not a single decimal
    /// integer up to 10 Tbit/s is ignored (hls.js sends `estimate|0`, negative above 2.147 Gbit/s, and a 400 would
    /// end its steering for good).
    ///
    /// `steered` is the origin's own state coming back: one that is not a single Pathway ID is ignored, never
    /// refused (a refusal would end the player's steering as surely as a dead RELOAD-URI).
    public init(query: [(name: String, value: String?)]) throws(SteeringQueryError) {
        var pathwaySeen = false
        var throughputs: [String?] = []
        var steereds: [String?] = []
        for (name, value) in query
        where name == "_HLS_pathway" || name == "_HLS_throughput" || name == SteeringManifest.steeredArgument {
            if name == "_HLS_throughput" {
                throughputs.append(value)
                continue
            }
            if name == SteeringManifest.steeredArgument {
                steereds.append(value)
                continue
            }
            guard !pathwaySeen else { throw SteeringQueryError("_HLS_pathway is given twice") }
            pathwaySeen = true
            guard let value, !value.isEmpty else { throw SteeringQueryError("_HLS_pathway has no value") }
            guard value.utf8.count <= 64, MultivariantPlaylist.isLegalPathwayID(value) else {
                throw SteeringQueryError("_HLS_pathway must be a Pathway ID: 1 to 64 of A-Z a-z 0-9 . - _")
            }
            pathway = value
        }
        if throughputs.count == 1, let value = throughputs[0], !value.isEmpty, value.utf8.count <= 20,
            value.utf8.allSatisfy({ (48...57).contains($0) }), let number = UInt64(value),
            number <= Self.maximumThroughput
        {
            throughput = number
        }
        if steereds.count == 1, let value = steereds[0], !value.isEmpty, value.utf8.count <= 64,
            MultivariantPlaylist.isLegalPathwayID(value)
        {
            steered = value
        }
    }
}

/// Why a steering manifest request was refused (400): the text is the answer's body.
public struct SteeringQueryError: Error, Sendable, Hashable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A steering manifest (HLS Content Steering, VERSION 1): how long it holds, where to reload it, and the pathways
/// in the order a player should prefer them.
public struct SteeringManifest: Sendable, Hashable {
    /// TTL, seconds.
    public var ttlSeconds: Int
    /// RELOAD-URI, absolute.
    public var reloadURI: String
    /// PATHWAY-PRIORITY.
    public var pathwayPriority: [String]

    public init(ttlSeconds: Int, reloadURI: String, pathwayPriority: [String]) {
        self.ttlSeconds = ttlSeconds
        self.reloadURI = reloadURI
        self.pathwayPriority = pathwayPriority
    }

    /// The answer every origin of the group gives for the same health and the same query (a pure function of them).
    ///
    /// PATHWAY-PRIORITY: the healthy pathways first, then the stale, the failing and the down ones (so a pathway
    /// whose origins are all unhealthy moves last but stays listed); within each, the configured order, except
    /// that the player's own pathway (`_HLS_pathway`) leads the healthy ones, so that a player is never moved off a
    /// healthy pathway (a pathway that comes back does not pull every player over at once).
    ///
    /// RELOAD-URI (a player keeps reloading it, and hls.js keeps the last one even after a reload failed, so it must
    /// outlive the pathway in use): on `reloadBaseURI` when configured (a URI every origin answers the same);
    /// otherwise on the first healthy pathway other than the one the player is sent to stream from (the first of
    /// PATHWAY-PRIORITY), so that the failure of the pathway it plays from does not take its steering server with
    /// it; a pathway in `unconfirmed` is skipped (its reports still count, but this origin's last read of it failed:
    /// a player that has just fled it must not be sent back to it for its reloads, which hls.js would retry there
    /// for good), and so is the one the player has fled since the previous answer (`steered` names another pathway
    /// than `_HLS_pathway`: its own error handling left it, before this origin may have read the failure); only with
    /// no other such pathway, on the one it streams from. That RELOAD-URI carries `steered={first of
    /// PATHWAY-PRIORITY}`, which the player sends back with its next reload.
    /// - Parameters:
    ///   - health: each pathway's health by ID; a pathway missing from it counts as healthy.
    ///   - unconfirmed: pathways healthy by their last reports whose every origin failed this origin's last read.
    public static func answer(
        _ steering: ContentSteeringConfiguration, channel: String, health: [String: PathwayHealth],
        query: SteeringQuery, unconfirmed: Set<String> = []
    ) -> SteeringManifest {
        var unconfirmed = unconfirmed
        if let fled = query.fledPathway, steering.pathways.contains(where: { $0.id == query.pathway }) {
            unconfirmed.insert(fled)
        }
        let ranked = steering.pathways.enumerated().map { index, pathway in
            let severity = health[pathway.id]?.severity ?? 0
            let leads = severity == 0 && pathway.id == query.pathway ? 0 : 1
            return (key: [severity, leads, index], pathway: pathway)
        }
        .sorted { $0.key.lexicographicallyPrecedes($1.key) }
        let ordered = ranked.map(\.pathway)
        let healthy = steering.pathways.filter { (health[$0.id]?.severity ?? 0) == 0 }
        let reloadURI: String
        if let base = steering.reloadBaseURI {
            reloadURI = base + "/live/" + channel + "/" + ContentSteeringConfiguration.manifestFile
        } else {
            let reload =
                healthy.first { $0.id != ordered.first?.id && !unconfirmed.contains($0.id) } ?? ordered.first
            let state = ordered.first.map { first in "?" + steeredArgument + "=" + first.id } ?? ""
            reloadURI =
                reload.map {
                    steering.uriPrefix($0, channel: channel) + ContentSteeringConfiguration.manifestFile + state
                } ?? ""
        }
        return SteeringManifest(
            ttlSeconds: steering.ttlSeconds, reloadURI: reloadURI, pathwayPriority: ordered.map(\.id))
    }

    /// The argument of a RELOAD-URI (without `reloadBaseURI`) naming the pathway its answer sent the player to, which
    /// the player sends back (`SteeringQuery.steered`). Not `_HLS_`-prefixed: that prefix is the client's.
    public static let steeredArgument = "steered"

    /// The JSON document, its keys in a fixed order (`VERSION`, `TTL`, `RELOAD-URI`, `PATHWAY-PRIORITY`), no
    /// spaces, ending in a line feed: the same bytes on every origin for the same manifest.
    public func render() -> String {
        var text = "{\"VERSION\":1,\"TTL\":\(ttlSeconds),\"RELOAD-URI\":" + Self.quoted(reloadURI)
        text += ",\"PATHWAY-PRIORITY\":[" + pathwayPriority.map(Self.quoted).joined(separator: ",") + "]}\n"
        return text
    }

    /// A JSON string: `"` and `\` escaped, control characters as `\u00XX`.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
