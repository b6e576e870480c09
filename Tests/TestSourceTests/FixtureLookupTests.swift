import Foundation
import TestSupport
import Testing

@testable import TestSource

/// Where the test source finds its fixtures: the bundle `hlsorigin_TestSource.resources` beside the executable's real
/// path, without `Bundle.module` (which ends the process when the bundle is missing).
@Suite("Fixture bundle lookup", .offThePool)
struct FixtureLookupTests {
    @Test func aMissingBundleIsAnErrorNamingThePathAndTheBundle() throws {
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("no-bundle-\(UUID().uuidString)")
        let error = #expect(throws: TestSourceError.self) {
            _ = try FixtureLibrary.fixtureDirectory(besideExecutableIn: empty, fallback: nil)
        }
        #expect(error?.kind == .fixtureUnavailable)
        let expected = empty.appendingPathComponent("hlsorigin_TestSource.resources/Fixtures").path
        #expect(error?.message.contains(expected) == true, "\(String(describing: error))")
        #expect(error?.message.contains("install the resource bundle hlsorigin_TestSource.resources") == true)
    }

    @Test func theTestProcessFindsTheBundleBesideItsExecutable() throws {
        // `swift test` runs hlsoriginPackageTests.xctest from the build directory, where SwiftPM copies the bundle.
        let executable = try #require(Bundle.main.executableURL).resolvingSymlinksInPath().deletingLastPathComponent()
        let found = try FixtureLibrary.fixtureDirectory(besideExecutableIn: executable, fallback: nil)
        #expect(found.path.hasSuffix("hlsorigin_TestSource.resources/Fixtures"))
        #expect(FileManager.default.fileExists(atPath: found.appendingPathComponent("audio-loop.aac").path))
        #expect(try FixtureLibrary.fixtureDirectory() == found)
    }

    @Test func theFallbackDirectoryIsUsedWhenNothingIsBesideTheExecutable() throws {
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("no-bundle-\(UUID().uuidString)")
        let buildDirectory = try FixtureLibrary.fixtureDirectory().deletingLastPathComponent()
            .deletingLastPathComponent()
        let found = try FixtureLibrary.fixtureDirectory(besideExecutableIn: empty, fallback: buildDirectory)
        #expect(found == buildDirectory.appendingPathComponent("hlsorigin_TestSource.resources/Fixtures"))
    }
}
