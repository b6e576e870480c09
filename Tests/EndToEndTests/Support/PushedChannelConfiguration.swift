/// The YAML configuration of an origin taking one channel that an encoder pushes to it (no channel created by a push:
/// `ingest.autoCreate: false`), 2 s segments in a window of 6, as the redundant-pair, content steering and encoder
/// outage suites configure theirs; `redundancy` and `steering` give the sections of an origin of a group.
enum PushedChannelConfiguration {
    /// The configuration: `logLevel: info`, then `sections` (top-level keys such as `delivery`, `redundancy`,
    /// `steering`, each its own lines), then the channel `channel` with `channelKeys` (e.g. `gapResponse: filler`)
    /// and the renditions named `renditions`, in order.
    static func yaml(
        channel: String, renditions: [String], sections: [String] = [], channelKeys: [String] = []
    ) -> String {
        let channelLines =
            ["  - name: \(channel)", "    segmentDuration: 2", "    window: { segments: 6 }"]
            + channelKeys.map { "    " + $0 }
            + ["    renditions: [" + renditions.map { "{name: \($0)}" }.joined(separator: ", ") + "]"]
        return (["logLevel: info"] + sections + ["ingest:", "  autoCreate: false", "channels:"] + channelLines)
            .joined(separator: "\n")
    }

    /// The `redundancy` section of an origin of a group (docs/redundancy.md): a 0.5 s clock tolerance, and the origins
    /// on loopback `peers` as its peers (none: the section names no peer).
    static func redundancy(peers: [Int] = []) -> String {
        guard !peers.isEmpty else { return "redundancy: { clockTolerance: 0.5 }" }
        let listed = peers.map { "\"http://127.0.0.1:\($0)\"" }.joined(separator: ", ")
        return "redundancy: { clockTolerance: 0.5, peers: [\(listed)] }"
    }

    /// The `steering` section of the origin on `own` (docs/content-steering.md): `ttl` s, and `pathways` in order,
    /// each its ID, its base URI and the port of the origin whose health it follows.
    static func steering(own: Int, ttl: Int, pathways: [(id: String, uri: String, origin: Int)]) -> String {
        let listed = pathways.map {
            "    - {id: \($0.id), uri: \"\($0.uri)\", origins: [\"http://127.0.0.1:\($0.origin)\"]}"
        }
        return (["steering:", "  self: http://127.0.0.1:\(own)", "  ttl: \(ttl)", "  pathways:"] + listed)
            .joined(separator: "\n")
    }
}
