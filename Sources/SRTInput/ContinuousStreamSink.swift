/// The seam between the SRT listener (this target) and whoever turns a continuous MPEG-TS into segments (the
/// segmenter of issue 31, part 2).
///
/// The listener accepts a caller, decides access, then calls `open(channel:rendition:peer:)` once per caller; it
/// hands every received payload to the session's `receive(_:)` in order, on the listener's own receive thread (never
/// an HTTP thread, never the Swift concurrency pool), and ends the session with `close(reason:)` exactly once. A
/// sink that throws from `open` refuses the caller: the listener closes the connection and counts it.
public protocol ContinuousStreamSink: Sendable {
    /// A caller was accepted for `channel`/`rendition` (the channel exists or was auto-created, access granted).
    /// - Parameter peer: the caller's address, `host:port`, for logs and status.
    func open(channel: String, rendition: String, peer: String) throws -> any ContinuousStreamSession
}

/// One caller's continuous stream: the TS bytes as they arrive and how the connection ended.
public protocol ContinuousStreamSession: AnyObject, Sendable {
    /// The next bytes of the caller's MPEG-TS (SRT live mode: usually 7 packets, 1316 bytes, per call), in arrival
    /// order. The buffer is valid only during the call.
    func receive(_ bytes: UnsafeRawBufferPointer)
    /// How long the stream has carried no media (no access unit of its media stream, whatever else arrives: a CBR
    /// encoder whose source died keeps sending null packets and tables). The listener drops the caller once this
    /// passes `idleTimeoutMilliseconds`.
    var silentMilliseconds: Int64 { get }
    /// The feed ended: the caller disconnected, was silent longer than `ingest.srt.idleTimeout`, or the origin is
    /// shutting down. A feed drop is immediate: the next slot is a GAP unless a new caller resumes it (with a
    /// discontinuity). Called once; no `receive` follows.
    func close(reason: ContinuousStreamEnd)
}

/// Why an SRT caller's stream ended.
public enum ContinuousStreamEnd: Sendable, Equatable, CustomStringConvertible {
    /// The caller closed the connection or SRT lost it (peer timeout, broken connection).
    case disconnected
    /// Nothing arrived for longer than the idle timeout; the listener closed the connection.
    case silent(milliseconds: Int)
    /// The origin is shutting down (graceful shutdown): not an encoder failure.
    case shutdown

    public var description: String {
        switch self {
        case .disconnected: "disconnected"
        case .silent(let milliseconds): "silent for \(milliseconds) ms"
        case .shutdown: "shutdown"
        }
    }
}
