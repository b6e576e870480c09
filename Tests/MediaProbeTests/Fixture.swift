import Foundation
import Testing

@testable import MediaProbe

/// Loads the committed fixture files (see scripts/make-probe-fixtures).
enum Fixture {
    static func url(_ name: String) throws -> URL {
        let dot = try #require(name.lastIndex(of: "."))
        let url = Bundle.module.url(
            forResource: String(name[..<dot]), withExtension: String(name[name.index(after: dot)...]),
            subdirectory: "Fixtures")
        return try #require(url, "fixture \(name) missing from the test bundle")
    }

    static func bytes(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: url(name)))
    }

    static func initSection(_ name: String) throws -> InitSectionInfo {
        try MediaProbe.probeInitSection(bytes(name))
    }
}
