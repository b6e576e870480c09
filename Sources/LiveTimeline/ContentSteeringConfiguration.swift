/// A channel's Content Steering settings (`steering:` in the configuration, docs/content-steering.md): the pathways
/// a player may fetch the channel from, in their configured order, and how often it reloads the steering manifest.
public struct ContentSteeringConfiguration: Sendable, Hashable {
    /// One way to the channel: an origin of the redundancy group, or a CDN hostname in front of it.
    public struct Pathway: Sendable, Hashable {
        /// The PATHWAY-ID (`[A-Za-z0-9._-]+`).
        public var id: String
        /// The absolute base URI the pathway serves `/live/...` under, without a trailing `/`
        /// (`http://10.0.0.1:8080`, `https://cdn-a.example.com/hls`).
        public var baseURI: String
        /// The origins whose health the pathway follows, as base URLs (this origin's own `steering.self`, or one
        /// of `redundancy.peers`): the pathway is healthy while one of them is. Empty: not checked, always healthy.
        public var origins: [String]

        public init(id: String, baseURI: String, origins: [String] = []) {
            self.id = id
            self.baseURI = baseURI
            self.origins = origins
        }
    }

    /// The pathways in their configured order (at least one); the first is the one a player starts on.
    public var pathways: [Pathway]
    /// The steering manifest's TTL: seconds a player waits before reloading it. Default: 10.
    public var ttlSeconds: Int
    /// This origin's own base URL, as its peers name it in `redundancy.peers`; nil when no pathway names origins.
    public var selfURL: String?
    /// `steering.reloadBase`: a base URI every origin of the group answers the same (the nginx tier, a CDN in front
    /// of all of them), without a trailing `/`; when set, every RELOAD-URI is on it. nil: the RELOAD-URI names a
    /// pathway (`SteeringManifest.answer`).
    public var reloadBaseURI: String?

    public init(pathways: [Pathway], ttlSeconds: Int = 10, selfURL: String? = nil, reloadBaseURI: String? = nil) {
        self.pathways = pathways
        self.ttlSeconds = ttlSeconds
        self.selfURL = selfURL
        self.reloadBaseURI = reloadBaseURI
    }

    /// The steering manifest's path under a pathway's base URI, and the SERVER-URI relative to the multivariant
    /// playlist (`/live/{channel}/index.m3u8`).
    public static let manifestFile = "steering.json"

    /// `{baseURI}/live/{channel}/`: what a pathway's copies of the multivariant playlist's relative URIs start with.
    public func uriPrefix(_ pathway: Pathway, channel: String) -> String {
        pathway.baseURI + "/live/" + channel + "/"
    }
}
