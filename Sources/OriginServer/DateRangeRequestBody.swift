import Foundation
import HLSPlaylist
import OriginCore

/// Reads the JSON bodies of the date range admin routes into ``MarkerRequest`` / ``MarkerPatch``.
///
/// Strict: the body must be a JSON object; unknown fields, wrong types, malformed dates and hex are refused with a
/// ``MarkerError`` (400) naming the field. `null` is the same as leaving a field out.
enum DateRangeRequestBody {
    static let postFields: Set<String> = [
        "id", "class", "startDate", "cue", "endDate", "duration", "plannedDuration", "endOnNext", "scte35",
        "clientAttributes",
    ]
    static let patchFields: Set<String> = ["endDate", "duration", "scte35"]

    /// The body of `POST /admin/channels/{channel}/dateranges`.
    static func marker(_ body: [UInt8]) throws(MarkerError) -> MarkerRequest {
        let object = try self.object(body, allowed: postFields)
        guard case .string(let id)? = object["id"] else {
            throw invalid("id", object["id"] == nil ? "required (a client-chosen, unique string)" : "must be a string")
        }
        var request = MarkerRequest(id: id)
        request.classAttribute = try string(object, "class")
        request.startDate = try date(object, "startDate")
        request.endDate = try date(object, "endDate")
        request.duration = try seconds(object, "duration")
        request.plannedDuration = try seconds(object, "plannedDuration")
        switch object["endOnNext"] {
        case nil: break
        case .bool(let value): request.endOnNext = value
        case let other?: throw invalid("endOnNext", "must be true or false, not \(other.typeName)")
        }
        switch object["cue"] {
        case nil: break
        case .string(let value): request.cue = value.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        case .array(let values):
            request.cue = try values.map { value throws(MarkerError) -> String in
                guard case .string(let text) = value else { throw invalid("cue", "must be strings (PRE, POST, ONCE)") }
                return text
            }
        case let other?: throw invalid("cue", "must be an array of strings, not \(other.typeName)")
        }
        request.scte35 = try scte35(object["scte35"], forPatch: false)
        switch object["clientAttributes"] {
        case nil: break
        case .object(let attributes):
            var list: [MarkerAttribute] = []
            for (name, value) in attributes {
                let field = "clientAttributes.\(name)"
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
            throw invalid("clientAttributes", "must be an object {\"X-NAME\": value}, not \(other.typeName)")
        }
        return request
    }

    /// The body of `PATCH /admin/channels/{channel}/dateranges/{id}`.
    static func patch(_ body: [UInt8]) throws(MarkerError) -> MarkerPatch {
        let object = try self.object(body, allowed: patchFields, unknownHint: " (a cue-in adds endDate, duration, scte35)")
        return MarkerPatch(
            endDate: try date(object, "endDate"), duration: try seconds(object, "duration"),
            scte35: try scte35(object["scte35"], forPatch: true))
    }

    // MARK: - Fields

    private static func object(_ body: [UInt8], allowed: Set<String>, unknownHint: String = "")
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

    private static func invalid(_ field: String, _ message: String) -> MarkerError {
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
        guard let date = ProgramDateTime(iso8601: text) else {
            throw invalid(field, "'\(text)' is not an ISO 8601 date-time with a time zone (2026-01-01T00:00:00.000Z)")
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

    private static func scte35(_ value: JSONValue?, forPatch: Bool) throws(MarkerError) -> MarkerSCTE35Request? {
        switch value {
        case nil: return nil
        case .string("out"):
            if forPatch { throw invalid("scte35", "a cue-in PATCH can only add \"in\"") }
            return .out
        case .string("in"): return .in
        case .object(let sections):
            let allowed: Set<String> = forPatch ? ["in"] : ["cmd", "out", "in"]
            if let unknown = sections.keys.sorted().first(where: { !allowed.contains($0) }) {
                throw invalid("scte35.\(unknown)", "unknown; use \(allowed.sorted().joined(separator: ", "))")
            }
            guard !sections.isEmpty else { throw invalid("scte35", "give at least one of cmd, out, in") }
            func bytes(_ key: String) throws(MarkerError) -> [UInt8]? {
                guard let value = sections[key] else { return nil }
                guard case .string(let text) = value, let bytes = AttributeList.hexadecimalBytes(text) else {
                    throw invalid("scte35.\(key)", "must be a hexadecimal string \"0x...\" (a splice_info_section)")
                }
                return bytes
            }
            return .raw(command: try bytes("cmd"), out: try bytes("out"), in: try bytes("in"))
        case let other?:
            throw invalid("scte35", "must be \"out\", \"in\" or {\"cmd\"|\"out\"|\"in\": \"0x...\"}, not \(other)")
        }
    }
}
