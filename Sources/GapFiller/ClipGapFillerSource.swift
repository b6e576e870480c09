import MediaProbe

/// The filler of a rendition from an operator's slate clip: the clip's pictures in a loop (from its first frame at
/// every filler segment) and AAC silence, in the rendition's PIDs and timeline.
///
/// The clip is MPEG-TS whose video matches the rendition (codec, profile, resolution, frame rate; H.264 or HEVC)
/// without B-frames (`-bf 0`: its frames are shown in decoding order), starting with an IDR or IRAP picture with its
/// parameter sets. Its audio is not used.
public struct ClipGapFillerSource: GapFillerSource {
    /// The clip's access units in decoding order.
    public let accessUnits: [[UInt8]]
    /// One frame of the clip lasts this many 90 kHz ticks.
    public let frameDurationTicks: Int64

    /// Reads the clip.
    /// - Throws: `GapFillerError` when it is not MPEG-TS with one H.264 or HEVC stream, does not start with a
    ///   keyframe, has B-frames, or has fewer than one frame with a timestamp.
    public init(clip: [UInt8]) throws(GapFillerError) {
        let contents: TransportStreamContents
        do {
            contents = try TransportStreamContents(clip)
        } catch {
            throw GapFillerError("the slate clip is not MPEG-TS: \(error.message)")
        }
        let video = contents.streams.filter { $0.streamType == 0x1B || $0.streamType == 0x24 }
        guard video.count == 1, let stream = video.first else {
            throw GapFillerError("the slate clip needs one H.264 or HEVC stream; it has \(video.count)")
        }
        let packets = (contents.pesPackets[stream.pid] ?? []).filter { !$0.payload.isEmpty }
        let times = packets.compactMap(\.pts)
        guard packets.count >= 1, times.count == packets.count else {
            throw GapFillerError("the slate clip's video has no frames with timestamps")
        }
        let hevc = stream.streamType == 0x24
        let first = packets[0].payload
        guard hevc ? HEVCKeyframe.isIRAP(first) : TransportStreamGapFiller.isIDR(first) else {
            throw GapFillerError("the slate clip does not start with a keyframe")
        }
        guard zip(times, times.dropFirst()).allSatisfy({ $0 < $1 }) else {
            throw GapFillerError("the slate clip has B-frames (timestamps out of decoding order): encode it with -bf 0")
        }
        accessUnits = packets.map(\.payload)
        // The most common timestamp step (a clip's last frame or a muxer's rounding may differ).
        var steps: [Int64: Int] = [:]
        for (a, b) in zip(times, times.dropFirst()) { steps[b - a, default: 0] += 1 }
        frameDurationTicks = steps.max { ($0.value, $1.key) < ($1.value, $0.key) }?.key ?? 3600
    }

    public func makeFiller(
        after lastSegment: UnsafeRawBufferPointer
    ) throws(GapFillerError) -> TransportStreamGapFiller {
        try TransportStreamGapFiller(
            after: lastSegment, picture: .loop(accessUnits: accessUnits, frameDurationTicks: frameDurationTicks))
    }
}
