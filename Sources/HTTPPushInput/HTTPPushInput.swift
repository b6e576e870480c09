public import LiveTimeline
public import MediaProbe
public import OriginCore
public import SharedBytes

/// The HTTP push input's naming rules: what ffmpeg's file names (`PUT /ingest/{channel}/{rendition}/{file}`) say
/// about a push. The core takes media-level pushes (`MediaPush`); this is the one place that reads file names.
public enum FFmpegPushNaming {
    /// The rendition a file belongs to: ffmpeg pushes a variant's WebVTT segments and playlist under the video
    /// rendition's path (`lo/index3.vtt`, `lo/index_vtt.m3u8`); they go to the subtitle rendition `lo-vtt`.
    public static func rendition(_ rendition: String, forFile fileName: String) -> String {
        OriginNames.rendition(rendition, forFile: fileName)
    }

    /// What a file is: `.mpd` (the manifest of ffmpeg's streaming DASH muxer) is ignored, `.m3u8` is the rendition's
    /// playlist hint, anything else media (init section or segment, told apart by the bytes).
    public static func kind(ofFile fileName: String) -> MediaPush.Kind {
        if fileName.hasSuffix(".mpd") { return .ignored(message: "\(fileName): DASH manifest ignored") }
        if fileName.hasSuffix(".m3u8") { return .playlistHint }
        return .media
    }

    /// The container a file name announces when the push's head arrives: `.ts` MPEG-TS; `.m4s`, `.mp4` fMP4.
    public static func announcedContainer(ofFile fileName: String) -> MediaContainer? {
        if fileName.hasSuffix(".ts") { return .mpegTS }
        if fileName.hasSuffix(".m4s") || fileName.hasSuffix(".mp4") { return .fragmentedMP4Segment }
        return nil
    }

    /// The container of a segment that may be cut into parts while it arrives (`.ts`, `.m4s`); nil for any other
    /// file (taken whole).
    public static func streamedContainer(ofFile fileName: String) -> MediaContainer? {
        fileName.hasSuffix(".mp4") ? nil : announcedContainer(ofFile: fileName)
    }

    /// The file number: the digits before the extension (`index7.ts` and `index7.vtt`: 7), which pairs a WebVTT
    /// segment with its parent's.
    public static func sequenceNumber(ofFile fileName: String) -> Int? {
        WebVTTSegment.fileNumber(fileName)
    }

    /// The media-level push an HTTP push of `fileName` is.
    public static func push(
        channel: String, rendition: String, fileName: String, body: SharedBytes, placement: PeerPlacement? = nil,
        requester: Requester = .process
    ) -> MediaPush {
        MediaPush(
            channel: channel, rendition: self.rendition(rendition, forFile: fileName), kind: kind(ofFile: fileName),
            body: body, sequenceNumber: sequenceNumber(ofFile: fileName), label: fileName, placement: placement,
            requester: requester)
    }
}

extension Origin {
    /// Takes an HTTP push of `fileName` (ffmpeg's naming, `FFmpegPushNaming`) through `ingest(_:)`.
    public func ingest(
        channel: String, rendition: String, fileName: String, body: SharedBytes, placement: PeerPlacement? = nil,
        requester: Requester = .process
    ) throws(IngestError) -> IngestReceipt {
        try ingest(
            FFmpegPushNaming.push(
                channel: channel, rendition: rendition, fileName: fileName, body: body, placement: placement,
                requester: requester))
    }

    /// Starts cutting an HTTP push of `fileName` into parts as it arrives (`beginStreamingPush(channel:rendition:
    /// container:requester:)`); nil for a file that is not a `.ts` or `.m4s` segment, or when the push is taken whole.
    public func beginStreamingPush(
        channel: String, rendition: String, fileName: String, requester: Requester = .process
    ) throws(IngestError) -> StreamingPush? {
        guard let container = FFmpegPushNaming.streamedContainer(ofFile: fileName) else { return nil }
        return try beginStreamingPush(
            channel: channel, rendition: FFmpegPushNaming.rendition(rendition, forFile: fileName),
            container: container, requester: requester)
    }

    /// Notes the container an HTTP push's file name announces when its head arrives (`announce`).
    public func announcePush(channel: String, rendition: String, fileName: String) {
        guard let container = FFmpegPushNaming.announcedContainer(ofFile: fileName) else { return }
        announce(channel: channel, rendition: rendition, container: container)
    }
}
