public import HLSPlaylist
public import LiveTimeline

extension LiveWindow {
    /// The playlist value for the listed entries.
    /// - Parameters:
    ///   - independentSegments: render EXT-X-INDEPENDENT-SEGMENTS.
    ///   - dateRanges: overlay of date ranges, placed by the caller per MSN.
    public func playlist(
        independentSegments: Bool, dateRanges: [UInt64: [DateRange]] = [:], extraTags: [UInt64: [String]] = [:]
    ) -> MediaPlaylist {
        playlist(
            independentSegments: independentSegments, dateRanges: dateRanges, extraTags: extraTags, decoration: .none)
    }

    /// The media playlist with playback authorization and encryption applied (`decoration`).
    package func playlist(
        independentSegments: Bool, dateRanges: [UInt64: [DateRange]] = [:], extraTags: [UInt64: [String]] = [:],
        decoration: PlaylistDecoration
    ) -> MediaPlaylist {
        let first = entries.first?.msn
        let segments = entries.map { entry in
            var segment = MediaSegment(
                uri: entry.uri,
                duration: Double(entry.durationMilliseconds) / 1000,
                discontinuity: entry.discontinuity,
                gap: entry.isGap,
                programDateTime: ProgramDateTime(millisecondsSince1970: entry.programDateTimeMilliseconds),
                map: entry.initSectionVersion.map { MediaInitializationSection(uri: "init-\($0).mp4") },
                dateRanges: dateRanges[entry.msn] ?? [],
                extraTags: extraTags[entry.msn] ?? [])
            decoration.apply(to: &segment, msn: entry.msn, isFirstListed: entry.msn == first)
            return segment
        }
        return MediaPlaylist(
            targetDuration: targetDuration, mediaSequence: mediaSequence ?? 0,
            discontinuitySequence: discontinuitySequence, independentSegments: independentSegments,
            definitions: decoration.definitions, segments: segments)
    }

    /// The I-frame playlist of the listed entries (EXT-X-I-FRAMES-ONLY): one entry per listed entry, the segment's
    /// first keyframe, with the same MSN, DSN, DISCONTINUITY, PDT, EXTINF and GAP, so both playlists describe the same
    /// timeline; no DATERANGEs (they belong to the media playlist).
    /// - Parameters:
    ///   - decoration: the same as the media playlist's (URI suffix, DEFINEs, EXT-X-KEY).
    ///   - encrypted: each I-frame is its own resource `iframe-{msn}.{ext}` (the keyframe range encrypted alone:
    ///     a byte range of a CBC-encrypted segment cannot be decrypted on its own); else
    ///     `#EXT-X-BYTERANGE:{end}@0` into the segment's URL.
    /// An entry that is a GAP, or whose segment does not start with a keyframe, is an EXT-X-GAP to the segment URL.
    package func iFramePlaylist(decoration: PlaylistDecoration, encrypted: Bool) -> MediaPlaylist {
        // The media playlist's entries (undecorated, no markers), each pointed at its keyframe, then decorated.
        var playlist = playlist(independentSegments: true)
        playlist.iFramesOnly = true
        playlist.definitions = decoration.definitions
        for (index, entry) in entries.enumerated() {
            let end = entry.isGap ? nil : entry.iFrameRangeEnd
            if let end, encrypted {
                playlist.segments[index].uri = "iframe-\(entry.msn).\(entry.container.segmentFileExtension)"
            } else {
                playlist.segments[index].byteRange = end.map { ByteRange(length: $0, offset: 0) }
            }
            playlist.segments[index].gap = end == nil
            decoration.apply(to: &playlist.segments[index], msn: entry.msn, isFirstListed: index == 0)
        }
        return playlist
    }
}
