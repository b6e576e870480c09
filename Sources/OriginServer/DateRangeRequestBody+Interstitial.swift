import HLSPlaylist
import Markers

extension DateRangeRequestBody {
    /// The field of a POST that makes the marker an HLS Interstitial.
    static let interstitialField = "interstitial"

    /// The keys of `interstitial` and the attribute each sets (8216bis Appendix D).
    static let interstitialKeys: [(key: String, attribute: DateRange.InterstitialAttribute)] = [
        ("assetUri", .assetURI), ("assetList", .assetList), ("resumeOffset", .resumeOffset),
        ("playoutLimit", .playoutLimit), ("snap", .snap), ("restrict", .restrict), ("contentMayVary", .contentMayVary),
        ("timelineOccupies", .timelineOccupies), ("timelineStyle", .timelineStyle),
    ]

    /// Applies `interstitial: {assetUri | assetList, resumeOffset, playoutLimit, snap, restrict, contentMayVary,
    /// timelineOccupies, timelineStyle}` to `request`: CLASS becomes `com.apple.hls.interstitial` and each key its
    /// `X-` attribute. The marker book then checks the 8216bis rules (one asset, value formats) like any marker's.
    static func applyInterstitial(_ value: JSONValue?, to request: inout MarkerRequest) throws(MarkerError) {
        guard let value, value != .null else { return }
        guard case .object(let object) = value else {
            throw invalid(interstitialField, "must be an object {\"assetUri\" or \"assetList\": \"https://...\", ...}")
        }
        let known = interstitialKeys.map(\.key)
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
            throw invalid("\(interstitialField).\(unknown)", "unknown; use \(known.joined(separator: ", "))")
        }
        if let classAttribute = request.classAttribute, classAttribute != DateRange.interstitialClass {
            throw invalid(
                DateRangeAttribute.classAttribute.field,
                "an interstitial's class is \(DateRange.interstitialClass) (leave class out)")
        }
        guard (object["assetUri"] ?? .null) != .null || (object["assetList"] ?? .null) != .null else {
            throw invalid(interstitialField, "needs assetUri or assetList")
        }
        request.classAttribute = DateRange.interstitialClass
        var attributes = request.clientAttributes
        for (key, attribute) in interstitialKeys {
            guard let value = object[key], value != .null else { continue }
            let field = "\(interstitialField).\(key)"
            guard !attributes.contains(where: { $0.name == attribute.rawValue }) else {
                throw invalid(field, "\(attribute.rawValue) is also given in clientAttributes")
            }
            let attributeValue: MarkerAttributeValue
            switch (attribute, value) {
            case (.resumeOffset, .number(let number)), (.playoutLimit, .number(let number)):
                guard number.isFinite, number >= 0 else { throw invalid(field, "must be a number of seconds >= 0") }
                attributeValue = .number(number)
            case (.resumeOffset, _), (.playoutLimit, _):
                throw invalid(field, "must be a number of seconds, not \(value.typeName)")
            case (.contentMayVary, .bool(let flag)):
                attributeValue = .string(flag ? "YES" : "NO")
            case (.snap, .array(let items)), (.restrict, .array(let items)):
                var texts: [String] = []
                for item in items {
                    guard case .string(let text) = item else {
                        throw invalid(field, "must be strings (\((attribute.allowedValues ?? []).joined(separator: ", ")))")
                    }
                    texts.append(text)
                }
                attributeValue = .string(texts.joined(separator: ","))
            case (.assetURI, .string(let text)), (.assetList, .string(let text)):
                // Written into the playlist as players read it: a URI, never text a player would trip over.
                guard !text.isEmpty, URIReference.isValid(text) else {
                    throw invalid(
                        field,
                        "must be a URI (RFC 3986: ASCII letters, digits and -._~:/?#[]@!$&'()*+,;= only, other "
                            + "bytes percent-encoded, e.g. https://ads.example/promo.m3u8)")
                }
                attributeValue = .string(text)
            case (_, .string(let text)):
                attributeValue = .string(text)
            default:
                throw invalid(field, "must be a string, not \(value.typeName)")
            }
            attributes.append(MarkerAttribute(name: attribute.rawValue, value: attributeValue))
        }
        request.clientAttributes = attributes.sorted { $0.name < $1.name }
    }
}
