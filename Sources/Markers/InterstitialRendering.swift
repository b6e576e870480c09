public import HLSPlaylist
import SCTE35

/// A channel's `interstitials:` settings: how its ad breaks are also rendered as HLS Interstitials (8216bis Appendix
/// D), and how many interstitials a DVR or recording playlist lists.
///
/// With an asset (`assetList` or `assetUri`), every break marker (``isBreak(_:)``) is listed twice: as the marker's
/// own EXT-X-DATERANGE and as an interstitial one with ID `{marker id}/interstitial`, the marker's START-DATE,
/// END-DATE, DURATION and PLANNED-DURATION, and the configured attributes. The asset URI is a template: `{id}` is the
/// marker's ID and `{duration}` the break's announced seconds (empty when unknown), both percent-encoded. The origin
/// never fetches it: players do, adding `_HLS_primary_id` and `_HLS_start_offset`.
public struct InterstitialSettings: Sendable, Hashable {
    /// The asset of the rendered interstitials, a template with `{id}` and `{duration}`.
    public enum Asset: Sendable, Hashable {
        /// X-ASSET-URI: one asset (a playlist).
        case uri(String)
        /// X-ASSET-LIST: a JSON asset list, typically an ad-decision service.
        case list(String)
    }

    /// The asset; nil: breaks are not rendered as interstitials (posted interstitials are still listed).
    public var asset: Asset?
    /// X-RESUME-OFFSET, seconds.
    public var resumeOffset: Double?
    /// X-PLAYOUT-LIMIT, seconds.
    public var playoutLimit: Double?
    /// X-SNAP: OUT, IN.
    public var snap: [String] = []
    /// X-RESTRICT: SKIP, JUMP.
    public var restrict: [String] = []
    /// CUE: PRE, POST, ONCE.
    public var cue: [String] = []
    /// X-CONTENT-MAY-VARY.
    public var contentMayVary: Bool?
    /// X-TIMELINE-OCCUPIES: POINT, RANGE.
    public var timelineOccupies: String?
    /// X-TIMELINE-STYLE: HIGHLIGHT, PRIMARY.
    public var timelineStyle: String?
    /// DVR and recording playlists list at most this many interstitials, the newest. Default 20.
    public var maxListed: Int = 20
    /// DVR and recording playlists list only interstitials starting this long before the playlist's end. Default 2 h.
    public var listedMilliseconds: Int64 = 7_200_000

    /// The placeholders an asset template may hold.
    public static let placeholders = ["{id}", "{duration}"]

    /// Default settings: no asset, the default bounds.
    public init() {}

    /// Whether `marker` is an ad break that gets an interstitial: not an interstitial itself, and
    /// - an in-band cue: a splice_insert cue-out (SCTE35-OUT), or a time_signal whose segmentation type starts a
    ///   break, an advertisement or a placement opportunity;
    /// - an API marker: one with SCTE35-OUT, or with no CLASS that is not a lone cue-in (SCTE35-IN).
    public static func isBreak(_ marker: Marker) -> Bool {
        guard !marker.dateRange.isInterstitial else { return false }
        switch marker.source {
        case .inband:
            guard let type = marker.segmentationTypeId else { return marker.scte35Out != nil }
            return SpliceCue.breakStartTypes.contains(type)
        case .api:
            return marker.scte35Out != nil || (marker.classAttribute == nil && marker.scte35In == nil)
        }
    }

    /// The interstitial date range of a break marker; nil without an asset or for a marker that is not a break.
    public func interstitial(for marker: Marker) -> DateRange? {
        guard let asset, Self.isBreak(marker) else { return nil }
        let start = marker.startDate.millisecondsSince1970
        // Only the duration the break was opened with (as cue tags announce it): a cue-in that sets DURATION later
        // never fills an empty {duration}, so the URI, once shown, never changes under the same ID.
        let request = marker.request
        let announced =
            request.duration ?? request.endDate.map { Double($0.millisecondsSince1970 - start) / 1000 }
            ?? request.plannedDuration
        var dateRange = DateRange(
            id: marker.id + "/interstitial", classAttribute: DateRange.interstitialClass,
            startDate: marker.startDate, cue: cue, endDate: marker.endDate, duration: marker.duration,
            plannedDuration: marker.plannedDuration)
        dateRange.clientAttributes = attributes(asset: asset, id: marker.id, duration: announced)
        return dateRange
    }

    /// The interstitial's `X-` attributes in 8216bis order.
    func attributes(asset: Asset, id: String, duration: Double?) -> [ClientAttribute] {
        var attributes: [ClientAttribute] = []
        for attribute in DateRange.InterstitialAttribute.allCases {
            let value: AttributeValue? =
                switch attribute {
                case .assetURI:
                    if case .uri(let template) = asset { .quotedString(Self.fill(template, id: id, duration: duration)) }
                    else { nil }
                case .assetList:
                    if case .list(let template) = asset {
                        .quotedString(Self.fill(template, id: id, duration: duration))
                    } else {
                        nil
                    }
                case .resumeOffset: resumeOffset.map(AttributeValue.decimal)
                case .playoutLimit: playoutLimit.map(AttributeValue.decimal)
                case .snap: snap.isEmpty ? nil : .quotedString(snap.joined(separator: ","))
                case .restrict: restrict.isEmpty ? nil : .quotedString(restrict.joined(separator: ","))
                case .contentMayVary: contentMayVary.map { .quotedString($0 ? "YES" : "NO") }
                case .timelineOccupies: timelineOccupies.map(AttributeValue.quotedString)
                case .timelineStyle: timelineStyle.map(AttributeValue.quotedString)
                }
            if let value { attributes.append(ClientAttribute(name: attribute.rawValue, value: value)) }
        }
        return attributes
    }

    /// `template` with `{id}` and `{duration}` replaced by their percent-encoded values.
    static func fill(_ template: String, id: String, duration: Double?) -> String {
        let seconds = duration.map { AttributeList.render(.decimal($0)) } ?? ""
        return template.replacingAll("{id}", with: percentEncoded(id))
            .replacingAll("{duration}", with: percentEncoded(seconds))
    }

    /// RFC 3986 percent-encoding of everything but the unreserved characters.
    static func percentEncoded(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                result += "%" + String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]], as: UTF8.self)
            }
        }
        return result
    }

    /// Why the settings cannot render a legal interstitial, or nil: the template's placeholders and characters, and
    /// 8216bis's rules on a sample break (``DateRange/validate()``).
    public func problem() -> String? {
        if maxListed < 0 { return "maxListed must not be negative" }
        if listedMilliseconds < 0 { return "listedMinutes must not be negative" }
        guard let asset else {
            let given =
                resumeOffset != nil || playoutLimit != nil || !snap.isEmpty || !restrict.isEmpty || !cue.isEmpty
                || contentMayVary != nil || timelineOccupies != nil || timelineStyle != nil
            return given ? "assetList or assetUri is required with the other interstitial attributes" : nil
        }
        let (field, template): (String, String) =
            switch asset {
            case .uri(let template): ("assetUri", template)
            case .list(let template): ("assetList", template)
            }
        guard !template.isEmpty else { return "\(field) is empty" }
        var rest = Substring(template)
        while let open = rest.firstIndex(of: "{") {
            guard let close = rest[open...].firstIndex(of: "}") else { return "\(field): '{' without '}'" }
            let placeholder = String(rest[open...close])
            guard Self.placeholders.contains(placeholder) else {
                return "\(field): unknown placeholder '\(placeholder)' (known: \(Self.placeholders.joined(separator: ", ")))"
            }
            rest = rest[rest.index(after: close)...]
        }
        if rest.contains("}") { return "\(field): '}' without '{'" }
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=%")
        let filled = Self.fill(template, id: "break-1", duration: 30)
        if let bad = filled.first(where: { !allowed.contains($0) }) {
            return "\(field): '\(bad)' is not allowed in a URI (percent-encode it)"
        }
        if case .list = asset, !filled.hasPrefix("http://"), !filled.hasPrefix("https://"), !filled.hasPrefix("/") {
            return "\(field): must be an http(s) URL or an absolute path, not '\(template)'"
        }
        var sample = DateRange(
            id: "break-1/interstitial", classAttribute: DateRange.interstitialClass,
            startDate: ProgramDateTime(millisecondsSince1970: 0), cue: cue, duration: 30)
        sample.clientAttributes = attributes(asset: asset, id: "break-1", duration: 30)
        do {
            try sample.validate()
        } catch {
            return "\(error.attribute): \(error.message)"
        }
        return nil
    }
}

/// What one playlist lists of interstitials: the settings, whether in-band cues are rendered too, and the bound.
public struct InterstitialListing: Sendable, Hashable {
    /// The channel's settings.
    public var settings: InterstitialSettings
    /// In-band markers (SCTE-35 from the stream) get interstitials too (`inbandCues: interstitials`).
    public var includesInband: Bool
    /// Interstitials (rendered or posted) starting before this (ms) are left out; `.min`: none.
    public var listedFromMilliseconds: Int64

    /// A listing without a bound (live and Low-Latency playlists list every interstitial in their window).
    public init(settings: InterstitialSettings, includesInband: Bool, listedFromMilliseconds: Int64 = .min) {
        self.settings = settings
        self.includesInband = includesInband
        self.listedFromMilliseconds = listedFromMilliseconds
    }

    /// The date ranges listed for `marker`: its own (when `keepsOwn`: the cue tag mode may show a break by cue tags
    /// instead), unless it is an interstitial left out by the bound, then its interstitial when it is a break that
    /// gets one.
    public func dateRanges(for marker: Marker, keepsOwn: Bool = true) -> [DateRange] {
        let start = marker.startDate.millisecondsSince1970
        let own = keepsOwn ? [marker.dateRange] : []
        if marker.dateRange.isInterstitial { return start < listedFromMilliseconds ? [] : own }
        guard start >= listedFromMilliseconds, let interstitial = interstitial(for: marker) else { return own }
        return own + [interstitial]
    }

    /// The interstitial rendered for `marker`, bound aside: nil when it is not a break, has no asset, or is an
    /// in-band cue without `includesInband`.
    func interstitial(for marker: Marker) -> DateRange? {
        guard includesInband || marker.source != .inband else { return nil }
        return settings.interstitial(for: marker)
    }
}

extension MarkerBook {
    /// The listing of a DVR or recording playlist ending at `edgeMilliseconds`: the interstitials (posted, or rendered
    /// for breaks) starting within `settings.listedMilliseconds` before the edge, at most `settings.maxListed` of
    /// them, the newest. The bound is the START-DATE of the oldest one kept, so it moves only when a break enters or
    /// leaves the set (cached DVR blocks stay valid meanwhile); none kept: everything is left out.
    public func interstitialListing(
        settings: InterstitialSettings, includesInband: Bool, edgeMilliseconds edge: Int64
    ) -> InterstitialListing {
        let unbounded = InterstitialListing(settings: settings, includesInband: includesInband)
        let earliest = edge &- settings.listedMilliseconds
        var starts: [Int64] = []
        for marker in markers.values {
            let start = marker.startDate.millisecondsSince1970
            guard start <= edge, start >= earliest else { continue }
            if marker.dateRange.isInterstitial || unbounded.interstitial(for: marker) != nil { starts.append(start) }
        }
        starts.sort(by: >)
        let kept = starts.prefix(settings.maxListed)
        return InterstitialListing(
            settings: settings, includesInband: includesInband, listedFromMilliseconds: kept.last ?? .max)
    }
}

extension String {
    /// Every occurrence of `target` replaced by `replacement` (no Foundation).
    fileprivate func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var result = ""
        var rest = Substring(self)
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound]
            result += replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}
