import Foundation
import Persistence
import TestSupport
import Testing

@Suite("Durable file writes", .offThePool)
struct DurableFileTests {
    static func temporaryDirectory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("DurableFile-\(UUID().uuidString)").path
    }

    @Test func replaceCreatesTheDirectoryAndLeavesNoTemporaryFile() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/sub/state.json"
        try DurableFile.replace(path, with: Data("one".utf8))
        try DurableFile.replace(path, with: Data("two".utf8))
        #expect(FileManager.default.contents(atPath: path) == Data("two".utf8))
        #expect(!FileManager.default.fileExists(atPath: path + ".tmp"))
    }

    @Test func aFailedWriteIsReportedAndKeepsTheOldContents() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/state.json"
        try DurableFile.replace(path, with: Data("old".utf8))
        // A directory where the temporary file must go makes the write fail at its first step.
        try FileManager.default.createDirectory(atPath: path + ".tmp", withIntermediateDirectories: false)
        #expect(throws: DurableWriteError.self) { try DurableFile.replace(path, with: Data("new".utf8)) }
        #expect(FileManager.default.contents(atPath: path) == Data("old".utf8))
    }
}
