import HLSPlaylist

/// Which tags announce a channel's ad breaks (`cueTags:`), for the ad-insertion services that read the playlists.
public enum CueTagMode: String, Sendable, Hashable, Codable, CaseIterable {
    /// EXT-X-DATERANGE with SCTE35-OUT/IN (RFC 8216 section 4.3.2.7.1): the playlists as before this setting.
    case daterange
    /// EXT-X-CUE-OUT / EXT-X-CUE-OUT-CONT / EXT-X-CUE-IN on segment boundaries instead of the break's DATERANGE
    /// (markers that are not breaks keep their DATERANGE).
    case cue
    /// Both.
    case both
}

/// How a channel's playlists announce ad breaks: the tag mode, and EXT-OATCLS-SCTE35 lines with the sections.
public struct CueTagOptions: Sendable, Hashable {
    /// Which tags announce a break.
    public var mode: CueTagMode
    /// `#EXT-OATCLS-SCTE35:<base64 splice_info_section>` before the break's first segment (its SCTE35-OUT) and
    /// before the segment after it (its SCTE35-IN), as AWS Elemental's "SCTE-35 enhanced" manifests carry them.
    public var oatcls: Bool

    public init(mode: CueTagMode = .daterange, oatcls: Bool = false) {
        self.mode = mode
        self.oatcls = oatcls
    }

    /// Today's output: DATERANGE only.
    public static let daterange = CueTagOptions()

    /// True when the segment-boundary tags are rendered at all.
    var placesCueTags: Bool { mode != .daterange || oatcls }
}

extension Marker {
    /// A marker that opens an ad break: it carries SCTE35-OUT.
    public var opensBreak: Bool { dateRange.scte35Out != nil }

    /// A marker that only closes a break (a separate cue-in): SCTE35-IN without SCTE35-OUT.
    public var closesBreak: Bool { dateRange.scte35In != nil && dateRange.scte35Out == nil }

    /// True when `cue` mode renders this marker's DATERANGE: markers that open or close breaks are shown by the cue
    /// tags instead, except HLS Interstitials (CLASS com.apple.hls.interstitial), which players read as date ranges.
    func keepsDateRange(in mode: CueTagMode) -> Bool {
        guard mode == .cue else { return true }
        return !(opensBreak || closesBreak) || dateRange.isInterstitial
    }

    /// The break duration the cue tags announce, in ms: what the marker's request said when it was made (DURATION,
    /// END-DATE - START-DATE, else PLANNED-DURATION, which never changes), so a tag already shown never changes when
    /// a cue-in closes the break later; nil when none was known (`#EXT-X-CUE-OUT` without a duration).
    var announcedBreakMilliseconds: Int64? {
        let start = dateRange.startDate.millisecondsSince1970
        if let duration = request.duration { return NumberFormatting.milliseconds(duration) }
        if let end = request.endDate { return end.millisecondsSince1970 - start }
        if let planned = request.plannedDuration ?? dateRange.plannedDuration {
            return NumberFormatting.milliseconds(planned)
        }
        return nil
    }
}

extension MarkerBook {
    /// How far (ms) a segment may start before a splice time and still count as starting at it: the rounding of
    /// 90 kHz times to the millisecond PDTs, less than a frame at 100 fps.
    public static let cueToleranceMilliseconds: Int64 = 10

    /// The index of the entry a break's CUE-OUT goes on: the first starting at or after `splice` (within
    /// ``cueToleranceMilliseconds``); nil when none does, or when the splice is before the first entry's start
    /// (a window starting mid-break). Shared by the cue tags and the status's placement error.
    public static func cueEntryIndex(starts: [Int64], splice: Int64) -> Int? {
        guard let index = starts.firstIndex(where: { $0 >= splice - cueToleranceMilliseconds }) else { return nil }
        return index > 0 || starts[0] <= splice + cueToleranceMilliseconds ? index : nil
    }

    /// The cue tags of the breaks (markers carrying SCTE35-OUT) on a rendition's listed entries, by MSN, derived only
    /// from the book and the entries' MSN and PDT (so every rendition and every origin of a group lists the same).
    ///
    /// - `#EXT-X-CUE-OUT:<seconds>` (AWS Elemental's form, read by MediaTailor and broadpeak.io) on the first entry
    ///   that starts at or after the splice time (START-DATE): a cue never splits a segment. Without an announced
    ///   duration, `#EXT-X-CUE-OUT`. An entry that starts within ``cueToleranceMilliseconds`` before counts as at.
    /// - `#EXT-X-CUE-OUT-CONT:ElapsedTime=<s>,Duration=<s>` on every following entry that starts before the break's
    ///   end, GAP entries included; ElapsedTime counts from the splice time, three decimals. The first listed entry
    ///   of a window that starts after the splice gets it too (a player joining mid-break), unless it is known to be
    ///   the break's first entry (it starts at the splice).
    /// - `#EXT-X-CUE-IN` on the first entry after the CUE-OUT entry that starts at or after the end: END-DATE,
    ///   START-DATE + DURATION, END-ON-NEXT's next marker, else the START-DATE of the next marker that opens or closes
    ///   a break (an explicit cue-in marker). A break with no end yet continues with CUE-OUT-CONT.
    /// - With `oatcls`, `#EXT-OATCLS-SCTE35:<base64>` of SCTE35-OUT before the CUE-OUT and of SCTE35-IN before the
    ///   CUE-IN.
    /// - Parameters:
    ///   - entries: the listed entries, oldest first (an entry before them may lead, to tell where a break starts).
    ///   - options: the channel's cue tag settings.
    ///   - ends: ``endsMilliseconds()``.
    public func cueTags(
        entries: [some MarkerOverlayEntry], options: CueTagOptions, ends: [String: Int64]
    ) -> [UInt64: [String]] {
        var tags: [UInt64: [String]] = [:]
        guard options.placesCueTags, !entries.isEmpty else { return tags }
        let sorted = sortedMarkers
        let tolerance = Self.cueToleranceMilliseconds
        let starts = entries.map(\.programDateTimeMilliseconds)
        let cueTags = options.mode != .daterange
        for (index, marker) in sorted.enumerated() where marker.opensBreak {
            let splice = marker.startDate.millisecondsSince1970
            let end =
                ends[marker.id]
                ?? sorted[(index + 1)...].first {
                    ($0.opensBreak || $0.closesBreak) && $0.startDate.millisecondsSince1970 > splice
                }?.startDate.millisecondsSince1970
            guard let first = starts.firstIndex(where: { $0 >= splice - tolerance }) else { continue }
            let announced = marker.announcedBreakMilliseconds
            var next = first
            if first > 0 || starts[0] <= splice + tolerance {
                // The break's first entry.
                if options.oatcls, let out = marker.scte35Out {
                    tags[entries[first].msn, default: []].append("#EXT-OATCLS-SCTE35:" + Base64.encode(out))
                }
                if cueTags {
                    tags[entries[first].msn, default: []].append(
                        "#EXT-X-CUE-OUT" + (announced.map { ":" + Self.seconds($0) } ?? ""))
                }
                next = first + 1
            }
            for position in next..<entries.count {
                let start = starts[position]
                if let end, start >= end - tolerance {
                    // The first entry at or after the end; an entry heading the window is that only when it starts
                    // at the end.
                    guard position > 0 || start <= end + tolerance else { break }
                    // The break's own SCTE35-IN, else that of the explicit cue-in marker that ended it.
                    let section =
                        options.oatcls
                        ? marker.scte35In
                            ?? sorted[(index + 1)...].first {
                                $0.closesBreak && $0.startDate.millisecondsSince1970 == end
                            }?.scte35In : nil
                    if let section {
                        tags[entries[position].msn, default: []].append("#EXT-OATCLS-SCTE35:" + Base64.encode(section))
                    }
                    if cueTags { tags[entries[position].msn, default: []].append("#EXT-X-CUE-IN") }
                    break
                }
                guard cueTags else { continue }
                var tag = "#EXT-X-CUE-OUT-CONT:ElapsedTime=" + Self.seconds(max(start - splice, 0))
                if let announced { tag += ",Duration=" + Self.seconds(announced) }
                tags[entries[position].msn, default: []].append(tag)
            }
        }
        return tags
    }
}

/// Standard base64 with padding (RFC 4648 section 4), as EXT-OATCLS-SCTE35 carries sections.
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let b0 = UInt32(bytes[index])
            let b1 = index + 1 < bytes.count ? UInt32(bytes[index + 1]) : 0
            let b2 = index + 2 < bytes.count ? UInt32(bytes[index + 2]) : 0
            let triple = b0 << 16 | b1 << 8 | b2
            out.append(alphabet[Int(triple >> 18 & 63)])
            out.append(alphabet[Int(triple >> 12 & 63)])
            out.append(index + 1 < bytes.count ? alphabet[Int(triple >> 6 & 63)] : UInt8(ascii: "="))
            out.append(index + 2 < bytes.count ? alphabet[Int(triple & 63)] : UInt8(ascii: "="))
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
}
