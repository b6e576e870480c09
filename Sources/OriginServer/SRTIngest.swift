import ContinuousTSInput
import Logging
import OriginCore
import SRTInput

/// The SRT input's callers go to the continuous-TS segmenter (`ContinuousTSIngest`): the seam between the two inputs.
struct SegmenterSink: ContinuousStreamSink {
    let ingest: ContinuousTSIngest

    func open(channel: String, rendition: String, peer: String) throws -> any ContinuousStreamSession {
        SegmenterSession(sessions: try ingest.openAll(channel: channel, rendition: rendition, peer: peer))
    }
}

/// One SRT caller's stream into the segmenter: one session per rendition cut from it (`srt: { from: ... }`).
final class SegmenterSession: ContinuousStreamSession {
    let sessions: [ContinuousTSSession]

    init(sessions: [ContinuousTSSession]) { self.sessions = sessions }

    func receive(_ bytes: UnsafeRawBufferPointer) {
        for session in sessions { session.receive(bytes) }
    }

    /// The least silent rendition's: the caller is silent when none of its renditions carries media.
    var silentMilliseconds: Int64 { sessions.map(\.silentMilliseconds).min() ?? 0 }

    func close(reason: ContinuousStreamEnd) {
        for session in sessions { session.close(reason: reason.description, feedDrop: reason != .shutdown) }
    }
}

extension SRTListener {
    /// The listener of `configuration.srt` feeding `origin` through the segmenter (returned beside it: its sessions
    /// are in the channel status), its access following `access` (reloads included); nil without `ingest.srt`.
    static func make(
        _ configuration: ServerConfiguration, origin: Origin, access: AccessControl, logger: Logger
    ) throws -> (listener: SRTListener, segmenter: ContinuousTSIngest)? {
        guard let settings = configuration.srt else { return nil }
        let segmenter = ContinuousTSIngest(origin: origin, logger: logger)
        let listener = try SRTListener(
            configuration: settings, rules: SRTAccessRules(configuration), origin: origin,
            sink: SegmenterSink(ingest: segmenter), logger: logger)
        access.follow { [weak listener] configuration in listener?.update(rules: SRTAccessRules(configuration)) }
        return (listener, segmenter)
    }
}
