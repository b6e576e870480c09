import Foundation
import HLSPlaylist
import TestSupport
import Testing

@testable import OriginServer

/// Checks an admin answer against the OpenAPI description the origin serves (`sourcePath`): its operation is
/// found by path template and method, its status must be one the operation lists, and a JSON body must validate
/// against that response's schema. Responses and parameters may be `$ref`s to the description's components. The JSON
/// Schema subset the description uses: `$ref` (to components), `type` (one or a list),
/// `enum`, `required`, `properties`, `additionalProperties`, `propertyNames`, `minProperties`, `items`, `oneOf`,
/// `minimum`, `exclusiveMinimum`, `maximum`, `minLength`, `maxLength`, `pattern` and `format: date-time`.
struct AdminOpenAPIValidator {
    let document: JSONValue

    /// The description in the repository, the module's resource (AdminOpenAPITests checks that the origin serves it).
    static let sourcePath = "Sources/OriginServer/OpenAPI/admin.json"

    static let shared = AdminOpenAPIValidator(bytes: (try? OriginTestStack.packageFile(sourcePath)) ?? [])

    init(bytes: [UInt8]) {
        // The file is checked to be JSON by AdminOpenAPITests; a broken one fails every admin answer.
        document = (try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))) ?? .null
    }

    /// `value`, or the component it names when it is a `{"$ref": "#/components/<kind>/<name>"}`.
    func resolved(_ value: JSONValue?) -> JSONValue? {
        guard case .string(let reference)? = value?["$ref"] else { return value }
        let pieces = reference.split(separator: "/").map(String.init)
        guard pieces.count == 4, pieces[0] == "#", pieces[1] == "components" else { return nil }
        return document["components"]?[pieces[2]]?[pieces[3]]
    }

    /// Records a test issue for every way an answer to a route test's request breaks the description (requests
    /// under `/admin/` and `/status/`; the route tests' stacks call it on every answer).
    static func record(_ method: String, _ target: String, _ response: RawHTTPResponse) {
        guard target.hasPrefix("/admin/") || target.hasPrefix("/status/") else { return }
        let problems = shared.problems(
            method: method, target: target, status: response.status, contentType: response.header("Content-Type"),
            body: response.body)
        for problem in problems ?? [] { Issue.record("\(sourcePath): \(problem)") }
    }

    /// The description's paths.
    var paths: [String: JSONValue] { document["paths"]?.objectValue ?? [:] }

    /// The path template of the description that `path` (no query) matches, e.g. `/admin/channels/{channel}`.
    func template(for path: String) -> String? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        return paths.keys.sorted().first { template in
            let pieces = template.split(separator: "/", omittingEmptySubsequences: false)
            guard pieces.count == segments.count else { return false }
            return zip(pieces, segments).allSatisfy { piece, segment in
                piece.hasPrefix("{") ? !segment.isEmpty : piece == segment
            }
        }
    }

    /// What is wrong with an answer of `method` on `target`, or an empty list. Requests the description does not
    /// cover (no template matches, a method it does not list, OPTIONS) are not checked: nil.
    func problems(method: String, target: String, status: Int, contentType: String?, body: [UInt8]) -> [String]? {
        let path = String(target.prefix { $0 != "?" })
        let operationMethod = method == "HEAD" ? "get" : method.lowercased()
        guard let template = template(for: path), let operation = paths[template]?[operationMethod] else { return nil }
        let where_ = "\(method) \(target) answered \(status)"
        guard let response = resolved(operation["responses"]?["\(status)"]) else {
            return ["\(where_): the description of \(template) lists no such status"]
        }
        let content = response["content"]?.objectValue ?? [:]
        guard let schema = content["application/json"]?["schema"] else {
            if content.isEmpty {
                return body.isEmpty || method == "HEAD" ? [] : ["\(where_): the description says no body, got \(body.count) bytes"]
            }
            let type = contentType.map { String($0.prefix { $0 != ";" }) } ?? "none"
            return content[type] != nil ? [] : ["\(where_): Content-Type \(type), the description says \(content.keys.sorted())"]
        }
        guard method != "HEAD" else { return [] }
        guard contentType?.hasPrefix("application/json") == true else {
            return ["\(where_): Content-Type \(contentType ?? "none"), the description says application/json"]
        }
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(body)) else {
            return ["\(where_): the body is not JSON"]
        }
        return validate(value, schema, at: "body").map { "\(where_): \($0)" }
    }

    /// Every way `value` breaks `schema`, each with its JSON path.
    func validate(_ value: JSONValue, _ schema: JSONValue, at path: String) -> [String] {
        if case .string(let reference)? = schema["$ref"] {
            let name = reference.split(separator: "/").last.map(String.init) ?? reference
            guard let target = document["components"]?["schemas"]?[name] else { return ["\(path): no schema \(reference)"] }
            return validate(value, target, at: path)
        }
        if case .array(let choices)? = schema["oneOf"] {
            let matching = choices.filter { validate(value, $0, at: path).isEmpty }.count
            if matching != 1 { return ["\(path): matches \(matching) of the oneOf schemas, not exactly 1"] }
        }
        if case .array(let allowed)? = schema["enum"], !allowed.contains(value) {
            return ["\(path): \(value) is not one of \(allowed)"]
        }
        if case .string(let type)? = schema["type"], !Self.has(value, type: type) {
            return ["\(path): \(value.typeName), the description says \(type)"]
        }
        if case .array(let types)? = schema["type"],
            !types.contains(where: { if case .string(let type) = $0 { Self.has(value, type: type) } else { false } })
        {
            return ["\(path): \(value.typeName), the description says one of \(types)"]
        }
        var problems: [String] = []
        switch value {
        case .object(let object):
            if case .array(let required)? = schema["required"] {
                for case .string(let key) in required where object[key] == nil {
                    problems.append("\(path): required \(key) missing")
                }
            }
            if case .number(let least)? = schema["minProperties"], Double(object.count) < least {
                problems.append("\(path): fewer than \(Int(least)) properties")
            }
            let properties = schema["properties"]?.objectValue ?? [:]
            for (key, member) in object.sorted(by: { $0.key < $1.key }) {
                if let names = schema["propertyNames"] {
                    problems += validate(.string(key), names, at: "\(path) key \(key)")
                }
                if let property = properties[key] {
                    problems += validate(member, property, at: "\(path).\(key)")
                } else if schema["additionalProperties"] == .bool(false) {
                    problems.append("\(path): \(key) is not in the description")
                } else if let additional = schema["additionalProperties"], additional.objectValue != nil {
                    problems += validate(member, additional, at: "\(path).\(key)")
                }
            }
        case .array(let items):
            if let itemSchema = schema["items"] {
                for (index, item) in items.enumerated() { problems += validate(item, itemSchema, at: "\(path)[\(index)]") }
            }
        case .number(let number):
            if case .number(let minimum)? = schema["minimum"], number < minimum { problems.append("\(path): \(number) < \(minimum)") }
            if case .number(let minimum)? = schema["exclusiveMinimum"], number <= minimum {
                problems.append("\(path): \(number) <= \(minimum)")
            }
            if case .number(let maximum)? = schema["maximum"], number > maximum { problems.append("\(path): \(number) > \(maximum)") }
        case .string(let text):
            if case .number(let least)? = schema["minLength"], Double(text.count) < least {
                problems.append("\(path): shorter than \(Int(least))")
            }
            if case .number(let most)? = schema["maxLength"], Double(text.count) > most {
                problems.append("\(path): longer than \(Int(most))")
            }
            if case .string(let pattern)? = schema["pattern"], text.range(of: pattern, options: .regularExpression) == nil {
                problems.append("\(path): '\(text.prefix(80))' does not match \(pattern)")
            }
            if schema["format"] == .string("date-time"), ProgramDateTime(iso8601: text) == nil {
                problems.append("\(path): '\(text)' is not a date-time")
            }
        default: break
        }
        return problems
    }

    static func has(_ value: JSONValue, type: String) -> Bool {
        switch (type, value) {
        case ("object", .object), ("array", .array), ("string", .string), ("boolean", .bool), ("null", .null),
            ("number", .number):
            true
        case ("integer", .number(let number)): number == number.rounded(.towardZero)
        default: false
        }
    }
}

extension JSONValue {
    /// The member `key` of an object; nil for anything else.
    subscript(_ key: String) -> JSONValue? {
        if case .object(let object) = self { object[key] } else { nil }
    }

    var objectValue: [String: JSONValue]? {
        if case .object(let object) = self { object } else { nil }
    }
}
