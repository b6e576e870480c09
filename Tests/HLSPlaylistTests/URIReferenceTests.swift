import Foundation
import HLSPlaylist
import TestSupport
import Testing

/// `URIReference` against the validator the admin API is fuzzed with: Fixtures/uri-references.json holds 2,804
/// strings (RFC 3986 edge cases and random mutations of them) with the verdicts of jsonschema_rs 0.60.3 (what
/// schemathesis checks `format: uri-reference` and `format: uri` with), made by
/// `jsonschema_rs.validator_for({"type": "string", "format": F}, validate_formats=True).is_valid(text)`.
@Suite(.offThePool) struct URIReferenceTests {
    struct Case: Decodable {
        let text: String
        let reference: Bool
        let absolute: Bool
    }

    static func cases() throws -> [Case] {
        let url = try #require(
            Bundle.module.url(forResource: "uri-references", withExtension: "json", subdirectory: "Fixtures"))
        return try JSONDecoder().decode([Case].self, from: Data(contentsOf: url))
    }

    @Test func everyStringIsJudgedAsJSONSchemasURIReferenceFormatJudgesIt() throws {
        let cases = try Self.cases()
        #expect(cases.count > 2000)
        let wrong = cases.filter { URIReference.isValid($0.text) != $0.reference }
        #expect(wrong.isEmpty, "\(wrong.count) differ: \(wrong.prefix(20).map { "\($0.text.debugDescription) \($0.reference)" })")
        // Both verdicts occur in numbers: the fixture is no list of one kind.
        #expect(cases.filter(\.reference).count > 500 && cases.filter { !$0.reference }.count > 500)
    }

    @Test func everyStringIsJudgedAsJSONSchemasURIFormatJudgesIt() throws {
        let cases = try Self.cases()
        let wrong = cases.filter { URIReference.isAbsolute($0.text) != $0.absolute }
        #expect(wrong.isEmpty, "\(wrong.count) differ: \(wrong.prefix(20).map { "\($0.text.debugDescription) \($0.absolute)" })")
        #expect(cases.filter(\.absolute).count > 200)
    }

    @Test func theAssetURIsOfTheDocsAreURIsAndTheFuzzersFindingIsNot() {
        #expect(URIReference.isAbsolute("https://ads.example/promo.m3u8"))
        #expect(URIReference.isValid("/slate/promo.m3u8"))
        #expect(!URIReference.isValid("Û\u{45825}Ñ1Ú"))
        #expect(!URIReference.isValid("https://ads.example/list?break={id}"))
    }
}
