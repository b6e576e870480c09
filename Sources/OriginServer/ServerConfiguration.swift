public import LiveTimeline
public import OriginCore
public import SRTInput

/// Everything the server runs with: HTTP, data directory, tokens and the origin's channels.
/// The command line maps into this; `ConfigurationFile` reads it from YAML.
public struct ServerConfiguration: Sendable {
    /// Address to listen on. Default: `0.0.0.0`.
    public var host: String = "0.0.0.0"
    /// TCP port. Default: 8080 (0 picks a free port).
    public var port: Int = 8080
    /// An HTTPS listener beside the HTTP one, or instead of it (`server.tls`, docs/security.md). nil: HTTP only.
    /// Default: nil.
    public var tls: TLSSettings?
    /// Where the origin keeps its state journal. Default: `./data`.
    public var dataDirectory: String = "./data"
    /// HTTP worker threads. Default: 0 = one per core.
    public var threads: Int = 0
    /// Most connections at once. Default: 10,000.
    public var connectionLimit: Int = 10_000
    /// Most connections from one client address. Default: 0 = no limit.
    public var perClientConnectionLimit: Int = 0
    /// Most connections from one remote address (an IPv4 address or an IPv6 /64); loopback clients are not
    /// counted. A connection past it is answered 503 and closed. Default: 256; 0 = no limit.
    public var remoteClientConnectionLimit: Int = 256
    /// Idle or slow connections are closed after this many seconds. Default: 30.
    public var connectionTimeoutSeconds: Int = 30
    /// Seconds a request body may take in all, a streamed push included. Default: 300; 0 = no such limit.
    public var requestBodyTimeLimitSeconds: Int = 300
    /// Bytes a second a streamed request body must average once it is older than `connectionTimeoutSeconds`.
    /// Default: 1024; 0 = no minimum.
    public var requestBodyMinimumBytesPerSecond: Int = 1024
    /// Memory per connection for the request head and the answer's head, KiB; a request head larger than this
    /// less 2 KiB is answered 431. Default: 8 (request heads up to about 6 KiB; a CDN's or player's head is under
    /// 2 KiB). Smaller is faster with many connections: libmicrohttpd clears the whole block after every request.
    public var connectionMemoryKiB: Int = 8
    /// Bearer token that opens the admin API (`admin.token`, `HLSORIGIN_ADMIN_TOKEN`; named `admin` in the audit
    /// log). With no admin token at all (this or `access.admin`), the admin API answers loopback clients only.
    public var adminToken: String?
    /// Bearer token that may push into every channel (`ingest.token`, `HLSORIGIN_INGEST_TOKEN`; named `ingest`).
    /// With no token granting a channel (this, `access.ingest` or the channel's own), pushes into it are taken from
    /// loopback clients only.
    public var ingestToken: String?
    /// Named tokens and what each grants (`tokens:`, `admin.tokens`, `ingest.tokens`, channels' `ingest:`);
    /// changed by a reload. See docs/security.md.
    public var access = AccessConfiguration()
    /// PostgreSQL URL (`postgres://user:password@host:5432/database`) of the marker books a group of origins
    /// shares (docs/redundancy.md); nil: each channel's markers live in its journal under the data directory.
    /// `HLSORIGIN_DATABASE_URL` overrides it.
    public var databaseURL: String?
    /// Base URLs of the other origins of the redundancy group (`redundancy.peers`): slots this origin's feed missed
    /// are repaired from them (docs/redundancy.md). Default: none.
    public var peers: [String] = []
    /// Content Steering across the group (`steering:`, docs/content-steering.md); nil: none. Each steered channel
    /// carries it in its own configuration too.
    public var steering: ContentSteeringConfiguration?
    /// Cache-Control max-age of the multivariant playlist, seconds. Default: 5.
    public var multivariantMaxAge: Int = 5
    /// Added to the system wall clock for everything the origin stamps (PDT, deadlines, marker times), in ms.
    /// Default: 0.
    public var clockOffsetMilliseconds: Int64 = 0
    /// Log level name (trace, debug, info, notice, warning, error, critical). Default: info.
    public var logLevel: String = "info"
    /// The SRT listener (`ingest.srt`, docs/srt.md); nil: no SRT input.
    public var srt: SRTConfiguration?
    /// CMSD sent and CMCD read (`delivery:`, docs/cmsd-cmcd.md).
    public var delivery = DeliveryConfiguration()
    /// Channels, ingest settings.
    public var origin = OriginConfiguration()

    public init() {}

    /// The ports `port` may be (0 picks a free one): the one check of the command line and the configuration file.
    public static let validPorts = 0...65535
}
