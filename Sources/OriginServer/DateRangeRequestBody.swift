import Foundation
import HLSPlaylist
import Markers
import OriginCore

/// Reads the JSON bodies of the date range admin routes into ``MarkerRequest`` / ``MarkerPatch``.
///
/// Strict: the body must be a JSON object; unknown fields, wrong types, malformed dates and hex are refused with a
/// ``MarkerError`` (400) naming the field. `null` is the same as leaving a field out.
enum DateRangeRequestBody {
    static let clientAttributesField = "clientAttributes"
    /// The fields of a POST: every date range attribute's, and the client attributes.
    static let postFields = Set(DateRangeAttribute.allCases.map(\.topLevelField)).union([
        clientAttributesField, interstitialField,
    ])
    /// The fields of a PATCH, in the order its error messages list them: the attributes a cue-in adds.
    static let patchFieldList = MarkerPatch.attributes.map(\.topLevelField)
    static let patchFields = Set(patchFieldList)

    /// The body of `POST /admin/channels/{channel}/dateranges`.
    static func marker(_ body: [UInt8]) throws(MarkerError) -> MarkerRequest {
        let object = try self.object(body, allowed: postFields)
        let idField = DateRangeAttribute.id.field
        guard case .string(let id)? = object[idField] else {
            throw invalid(
                idField, object[idField] == nil ? "required (a client-chosen, unique string)" : "must be a string")
        }
        var request = MarkerRequest(id: id)
        request.classAttribute = try string(object, DateRangeAttribute.classAttribute.field)
        request.startDate = try date(object, DateRangeAttribute.startDate.field)
        request.endDate = try date(object, DateRangeAttribute.endDate.field)
        request.duration = try seconds(object, DateRangeAttribute.duration.field)
        request.plannedDuration = try seconds(object, DateRangeAttribute.plannedDuration.field)
        let endOnNextField = DateRangeAttribute.endOnNext.field
        switch object[endOnNextField] {
        case nil: break
        case .bool(let value): request.endOnNext = value
        case let other?: throw invalid(endOnNextField, "must be true or false, not \(other.typeName)")
        }
        let cueField = DateRangeAttribute.cue.field
        switch object[cueField] {
        case nil: break
        case .string(let value):
            request.cue = value.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        case .array(let values):
            request.cue = try values.map { value throws(MarkerError) -> String in
                guard case .string(let text) = value else {
                    throw invalid(cueField, "must be strings (PRE, POST, ONCE)")
                }
                return text
            }
        case let other?: throw invalid(cueField, "must be an array of strings, not \(other.typeName)")
        }
        request.scte35 = try scte35(object[scte35Field], forPatch: false)
        switch object[clientAttributesField] {
        case nil: break
        case .object(let attributes):
            var list: [MarkerAttribute] = []
            for (name, value) in attributes {
                let field = "\(clientAttributesField).\(name)"
                switch value {
                case .string(let text): list.append(MarkerAttribute(name: name, value: .string(text)))
                case .number(let number):
                    guard number.isFinite, number >= 0 else {
                        throw invalid(field, "decimal values are non-negative numbers (decimal-floating-point)")
                    }
                    list.append(MarkerAttribute(name: name, value: .number(number)))
                case .object(let wrapped) where wrapped.count == 1:
                    guard case .string(let text)? = wrapped["hex"], let bytes = AttributeList.hexadecimalBytes(text)
                    else {
                        throw invalid(field, "a hexadecimal value is written {\"hex\": \"0x...\"}")
                    }
                    list.append(MarkerAttribute(name: name, value: .hexadecimal(bytes)))
                default:
                    throw invalid(field, "must be a string, a number or {\"hex\": \"0x...\"}, not \(value.typeName)")
                }
            }
            request.clientAttributes = list.sorted { $0.name < $1.name }
        case let other?:
            throw invalid(clientAttributesField, "must be an object {\"X-NAME\": value}, not \(other.typeName)")
        }
        try applyInterstitial(object[interstitialField], to: &request)
        return request
    }

    /// The body of `PATCH /admin/channels/{channel}/dateranges/{id}`.
    static func patch(_ body: [UInt8]) throws(MarkerError) -> MarkerPatch {
        let object = try self.object(
            body, allowed: patchFields, unknownHint: " (a cue-in adds \(patchFieldList.joined(separator: ", ")))")
        return MarkerPatch(
            endDate: try date(object, DateRangeAttribute.endDate.field),
            duration: try seconds(object, DateRangeAttribute.duration.field),
            scte35: try scte35(object[scte35Field], forPatch: true))
    }

    // MARK: - Fields

    private static func object(
        _ body: [UInt8], allowed: Set<String>, unknownHint: String = ""
    )
        throws(MarkerError) -> [String: JSONValue]
    {
        let value: JSONValue
        do {
            value = try JSONDecoder().decode(JSONValue.self, from: Data(body))
        } catch {
            throw MarkerError(.invalid, field: nil, "invalid JSON body")
        }
        guard case .object(let object) = value else {
            throw MarkerError(.invalid, field: nil, "the body must be a JSON object, not \(value.typeName)")
        }
        let unknown = object.keys.filter { !allowed.contains($0) }.sorted()
        guard unknown.isEmpty else {
            throw MarkerError(
                .invalid, field: unknown[0],
                "unknown field\(unknown.count > 1 ? "s" : "") \(unknown.map { "'\($0)'" }.joined(separator: ", "))"
                    + unknownHint)
        }
        return object.filter { $0.value != .null }
    }

    static func invalid(_ field: String, _ message: String) -> MarkerError {
        MarkerError(.invalid, field: field, "\(field): \(message)")
    }

    private static func string(_ object: [String: JSONValue], _ field: String) throws(MarkerError) -> String? {
        switch object[field] {
        case nil: return nil
        case .string(let text): return text
        case let other?: throw invalid(field, "must be a string, not \(other.typeName)")
        }
    }

    private static func date(_ object: [String: JSONValue], _ field: String) throws(MarkerError) -> ProgramDateTime? {
        guard let text = try string(object, field) else { return nil }
        // RFC 3339 (the description's `format: date-time`): the offset is Z or ±hh:mm, not ISO 8601's basic ±hhmm
        // that playlists' PROGRAM-DATE-TIME parsing also takes.
        let zone = text.utf8.suffix(6)
        let offsetHasColon =
            zone.count == 6 && (zone.first == UInt8(ascii: "+") || zone.first == UInt8(ascii: "-"))
            && zone.dropFirst(3).first == UInt8(ascii: ":")
        guard text.hasSuffix("Z") || text.hasSuffix("z") || offsetHasColon, let date = ProgramDateTime(iso8601: text)
        else {
            throw invalid(
                field,
                "'\(text)' is not an ISO 8601 (RFC 3339) date-time with a time zone, Z or ±hh:mm "
                    + "(2026-01-01T00:00:00.000Z)")
        }
        return date
    }

    private static func seconds(_ object: [String: JSONValue], _ field: String) throws(MarkerError) -> Double? {
        switch object[field] {
        case nil: return nil
        case .number(let number):
            guard number.isFinite, number >= 0 else { throw invalid(field, "must not be negative") }
            return number
        case let other?: throw invalid(field, "must be a number of seconds, not \(other.typeName)")
        }
    }

    /// The field of the SCTE-35 sections: one object for SCTE35-CMD, SCTE35-OUT and SCTE35-IN.
    static let scte35Field = DateRangeAttribute.scte35Command.topLevelField

    private static func scte35(_ value: JSONValue?, forPatch: Bool) throws(MarkerError) -> MarkerSCTE35Request? {
        switch value {
        case nil: return nil
        case .string("out"):
            if forPatch { throw invalid(scte35Field, "a cue-in PATCH can only add \"in\"") }
            return .out
        case .string("in"): return .in
        case .object(let sections):
            let attributes = forPatch ? MarkerPatch.attributes : DateRangeAttribute.allCases
            let allowed = Set(attributes.filter { $0.topLevelField == scte35Field }.compactMap(\.nestedKey))
            if let unknown = sections.keys.sorted().first(where: { !allowed.contains($0) }) {
                throw invalid("\(scte35Field).\(unknown)", "unknown; use \(allowed.sorted().joined(separator: ", "))")
            }
            guard !sections.isEmpty else { throw invalid(scte35Field, "give at least one of cmd, out, in") }
            func bytes(_ attribute: DateRangeAttribute) throws(MarkerError) -> [UInt8]? {
                guard let key = attribute.nestedKey, let value = sections[key] else { return nil }
                guard case .string(let text) = value, let bytes = AttributeList.hexadecimalBytes(text) else {
                    throw invalid(attribute.field, "must be a hexadecimal string \"0x...\" (a splice_info_section)")
                }
                return bytes
            }
            return .raw(command: try bytes(.scte35Command), out: try bytes(.scte35Out), in: try bytes(.scte35In))
        case let other?:
            throw invalid(scte35Field, "must be \"out\", \"in\" or {\"cmd\"|\"out\"|\"in\": \"0x...\"}, not \(other)")
        }
    }
}
