/// A Content Steering pathway as the multivariant playlist lists it: its ID and the absolute URI prefix the
/// playlist's relative URIs are resolved against on that pathway.
public struct SteeringPathway: Sendable, Hashable {
    /// The PATHWAY-ID (`[A-Za-z0-9._-]+`, ``MultivariantPlaylist/isLegalPathwayID(_:)``).
    public var id: String
    /// Absolute and ending in `/`: `http://origin-a:8080/live/news/`.
    public var uriPrefix: String

    public init(id: String, uriPrefix: String) {
        self.id = id
        self.uriPrefix = uriPrefix
    }
}

extension MultivariantPlaylist {
    /// True for a legal Pathway ID: one or more of `A-Z a-z 0-9 . - _` (HLS Content Steering, "Steering Manifest").
    public static func isLegalPathwayID(_ id: String) -> Bool {
        !id.isEmpty
            && id.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "_"):
                    true
                default: false
                }
            }
    }

    /// Whether `uri` starts with a scheme (RFC 3986: a letter, then letters, digits, `+ - .`, then `:`): absolute.
    static func hasScheme(_ uri: String) -> Bool {
        guard let colon = uri.utf8.firstIndex(of: UInt8(ascii: ":")) else { return false }
        let scheme = uri.utf8[..<colon]
        guard let head = scheme.first, (65...90).contains(head) || (97...122).contains(head) else {
            return false
        }
        return scheme.allSatisfy { byte in
            (65...90).contains(byte) || (97...122).contains(byte) || (48...57).contains(byte) || byte == 43
                || byte == 45 || byte == 46
        }
    }

    /// The playlist with every variant, I-frame stream and rendition listed once per pathway, in `pathways`' order:
    /// each copy's PATHWAY-ID is the pathway's, its relative URIs are prefixed with the pathway's `uriPrefix`, and
    /// its rendition groups are renamed `{group}~{pathway}` (`~` is in no Pathway ID, so two renamed groups never
    /// collide; GROUP-ID is a quoted-string, which takes it) so that no group is referenced from two pathways
    /// (RFC 8216bis 4.4.6.6 and the players: media3 refuses a group shared by pathways). Adds
    /// `EXT-X-CONTENT-STEERING` with `serverURI` and the first pathway as PATHWAY-ID. Definitions and session keys
    /// are kept once. Unchanged when `pathways` is empty.
    public func steered(pathways: [SteeringPathway], serverURI: String) -> MultivariantPlaylist {
        guard let first = pathways.first else { return self }
        var result = self
        result.renditions = []
        result.variants = []
        result.iFrameStreams = []
        for pathway in pathways {
            func group(_ id: String) -> String { id + "~" + pathway.id }
            func uri(_ uri: String) -> String { Self.hasScheme(uri) ? uri : pathway.uriPrefix + uri }
            for var rendition in renditions {
                rendition.groupID = group(rendition.groupID)
                rendition.uri = rendition.uri.map(uri)
                result.renditions.append(rendition)
            }
            for var variant in variants {
                variant.uri = uri(variant.uri)
                variant.audioGroup = variant.audioGroup.map(group)
                variant.subtitlesGroup = variant.subtitlesGroup.map(group)
                if case .group(let id) = variant.closedCaptions { variant.closedCaptions = .group(group(id)) }
                variant.pathwayID = pathway.id
                result.variants.append(variant)
            }
            for var stream in iFrameStreams {
                stream.uri = uri(stream.uri)
                stream.pathwayID = pathway.id
                result.iFrameStreams.append(stream)
            }
        }
        result.contentSteering = ContentSteeringTag(serverURI: serverURI, pathwayID: first.id)
        return result
    }

    /// The Content Steering rules a server must keep, each broken one described: legal PATHWAY-IDs; the tag's
    /// SERVER-URI not empty and its PATHWAY-ID one the playlist has; no rendition group referenced from two
    /// pathways; every pathway offering the same variants (bit rates, codecs, resolution, frame rate) and I-frame
    /// streams; PATHWAY-ID on every variant or none. Empty for a playlist without pathways.
    public func steeringViolations() -> [String] {
        var violations: [String] = []
        let pathways = variants.compactMap(\.pathwayID) + iFrameStreams.compactMap(\.pathwayID)
        for id in Set(pathways).sorted() where !Self.isLegalPathwayID(id) {
            violations.append("PATHWAY-ID '\(id)' has characters other than A-Z a-z 0-9 . - _")
        }
        if let tag = contentSteering {
            if tag.serverURI.isEmpty { violations.append("EXT-X-CONTENT-STEERING has an empty SERVER-URI") }
            if let id = tag.pathwayID, !variants.contains(where: { $0.pathwayID == id }) {
                violations.append("EXT-X-CONTENT-STEERING names PATHWAY-ID '\(id)', which no variant has")
            }
        }
        guard !pathways.isEmpty else { return violations }
        if variants.contains(where: { $0.pathwayID == nil }) || iFrameStreams.contains(where: { $0.pathwayID == nil }) {
            violations.append("some variants have a PATHWAY-ID and others none")
        }
        var groupPathway: [String: String] = [:]
        for variant in variants {
            var groups = [variant.audioGroup, variant.subtitlesGroup].compactMap { $0 }
            if case .group(let id) = variant.closedCaptions { groups.append(id) }
            for id in groups {
                let pathway = variant.pathwayID ?? ""
                if let other = groupPathway[id], other != pathway {
                    violations.append("rendition group '\(id)' is referenced from pathways '\(other)' and '\(pathway)'")
                }
                groupPathway[id] = groupPathway[id] ?? pathway
            }
        }
        struct Offer: Hashable {
            var bandwidth: Int
            var averageBandwidth: Int?
            var codecs: [String]
            var resolution: Resolution?
            var frameRate: Double?
        }
        var offers: [String: [Offer]] = [:]
        for variant in variants {
            offers[variant.pathwayID ?? "", default: []].append(
                Offer(
                    bandwidth: variant.bandwidth, averageBandwidth: variant.averageBandwidth, codecs: variant.codecs,
                    resolution: variant.resolution, frameRate: variant.frameRate))
        }
        for stream in iFrameStreams {
            offers[stream.pathwayID ?? "", default: []].append(
                Offer(
                    bandwidth: stream.bandwidth, averageBandwidth: stream.averageBandwidth, codecs: stream.codecs,
                    resolution: stream.resolution, frameRate: -1))
        }
        let ordered = offers.keys.sorted()
        if let reference = ordered.first {
            for id in ordered.dropFirst() where offers[id] != offers[reference] {
                violations.append("pathway '\(id)' offers other variants than pathway '\(reference)'")
            }
        }
        return violations
    }
}
