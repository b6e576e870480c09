import ContinuousTSInput
import Logging
import OriginCore
import SRTInput

/// The SRT input's callers go to the continuous-TS segmenter (`ContinuousTSIngest`): the seam between the two inputs.
struct SegmenterSink: ContinuousStreamSink {
    let ingest: ContinuousTSIngest

    func open(channel: String, rendition: String, peer: String) throws -> any ContinuousStreamSession {
        SegmenterSession(session: try ingest.open(channel: channel, rendition: rendition, peer: peer))
    }
}

/// One SRT caller's stream into the segmenter.
final class SegmenterSession: ContinuousStreamSession {
    let session: ContinuousTSSession

    init(session: ContinuousTSSession) { self.session = session }

    func receive(_ bytes: UnsafeRawBufferPointer) { session.receive(bytes) }

    func close(reason: ContinuousStreamEnd) { session.close(reason: reason.description) }
}

extension SegmenterSink {
    init(origin: Origin, logger: Logger) { self.init(ingest: ContinuousTSIngest(origin: origin, logger: logger)) }
}

extension SRTListener {
    /// The listener of `configuration.srt` feeding `origin` through the segmenter, its access following `access`
    /// (reloads included); nil without `ingest.srt`.
    static func make(
        _ configuration: ServerConfiguration, origin: Origin, access: AccessControl, logger: Logger
    ) throws -> SRTListener? {
        guard let settings = configuration.srt else { return nil }
        let listener = try SRTListener(
            configuration: settings, rules: SRTAccessRules(configuration), origin: origin,
            sink: SegmenterSink(origin: origin, logger: logger), logger: logger)
        access.follow { [weak listener] configuration in listener?.update(rules: SRTAccessRules(configuration)) }
        return listener
    }
}
