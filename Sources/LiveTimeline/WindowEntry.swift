public import Markers
public import MediaProbe
public import SharedBytes

/// One media sequence number of a rendition: a segment that arrived, or an EXT-X-GAP written for its slot.
public struct WindowEntry: Sendable {
    /// What fills the slot.
    public enum Content: Sendable {
        /// A pushed segment: its bytes, and whether it starts with a random access point.
        case segment(SharedBytes, startsWithKeyframe: Bool)
        /// An EXT-X-GAP entry, and the filler segment its URL answers (the playlist still says EXT-X-GAP); a nil
        /// filler answers 404.
        case gap(filler: SharedBytes?)
    }

    /// Media sequence number; the URL is `{msn}.{ext}`.
    public let msn: UInt64
    /// EXTINF in milliseconds.
    public let durationMilliseconds: Int64
    /// EXT-X-PROGRAM-DATE-TIME of the first sample, milliseconds since the epoch.
    public let programDateTimeMilliseconds: Int64
    /// EXT-X-DISCONTINUITY before this entry.
    public internal(set) var discontinuity: Bool
    /// A segment or a GAP.
    public let content: Content
    /// Container of the segment (GAP entries carry the rendition's container so their URL has the usual extension).
    public let container: MediaContainer
    /// Version of the fMP4 initialization section this entry needs (EXT-X-MAP `init-{n}.mp4`).
    public let initSectionVersion: Int?
    /// End of the segment's first keyframe (`SegmentInfo.iFrameRangeEnd`): its I-frame entry is the byte range
    /// `[0, iFrameRangeEnd)`. nil for a GAP, and for a segment without video or not starting with a keyframe (its
    /// I-frame entry is an EXT-X-GAP).
    public let iFrameRangeEnd: Int?
    /// A slate segment the origin made for an outage slot (`outage: slate`): listed as a segment, its bytes the
    /// filler; answered with `X-HLSOrigin-Slate: 1` so peers of a redundancy group never take it as media.
    public internal(set) var isSlate = false

    package init(
        msn: UInt64, durationMilliseconds: Int64, programDateTimeMilliseconds: Int64, discontinuity: Bool,
        content: Content, container: MediaContainer, initSectionVersion: Int?, iFrameRangeEnd: Int? = nil
    ) {
        self.msn = msn
        self.durationMilliseconds = durationMilliseconds
        self.programDateTimeMilliseconds = programDateTimeMilliseconds
        self.discontinuity = discontinuity
        self.content = content
        self.container = container
        self.initSectionVersion = initSectionVersion
        self.iFrameRangeEnd = iFrameRangeEnd
    }

    /// The same entry at another MSN and PDT (a held slot the redundancy group placed elsewhere).
    func moved(msn: UInt64, programDateTimeMilliseconds: Int64) -> WindowEntry {
        var entry = WindowEntry(
            msn: msn, durationMilliseconds: durationMilliseconds,
            programDateTimeMilliseconds: programDateTimeMilliseconds,
            discontinuity: discontinuity, content: content, container: container,
            initSectionVersion: initSectionVersion, iFrameRangeEnd: iFrameRangeEnd)
        entry.isSlate = isSlate
        return entry
    }

    /// True for an EXT-X-GAP entry.
    public var isGap: Bool {
        if case .gap = content { true } else { false }
    }

    /// The segment bytes; nil for a GAP entry.
    public var bytes: SharedBytes? {
        if case .segment(let bytes, _) = content { bytes } else { nil }
    }

    /// For a GAP entry: the filler segment its URL answers; nil answers 404 (and for a segment).
    public var filler: SharedBytes? {
        if case .gap(let filler) = content { filler } else { nil }
    }

    /// End of the entry on the PDT timeline.
    public var endMilliseconds: Int64 { programDateTimeMilliseconds + durationMilliseconds }

    /// Path of the entry relative to the rendition's playlist.
    public var uri: String { "\(msn).\(container.segmentFileExtension)" }
}

extension MediaContainer {
    /// File extension of segment URLs in this container.
    public var segmentFileExtension: String {
        switch self {
        case .mpegTS: "ts"
        case .fragmentedMP4Segment, .fragmentedMP4Init: "m4s"
        case .adts: "aac"
        case .webVTT: "vtt"
        }
    }

    /// The Content-Type of a segment in this container.
    public var contentType: String {
        switch self {
        case .mpegTS: "video/mp2t"
        case .fragmentedMP4Segment: "video/iso.segment"
        case .fragmentedMP4Init: "video/mp4"
        case .adts: "audio/aac"
        case .webVTT: "text/vtt; charset=utf-8"
        }
    }
}

extension WindowEntry: MarkerOverlayEntry {}
