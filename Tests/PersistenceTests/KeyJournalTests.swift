import Foundation
import Glibc
import LiveTimeline
import Persistence
import TestSupport
import Testing

@Suite("Key journal", .offThePool)
struct KeyJournalTests {
    static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "key-journal-\(UInt64.random(in: 0 ... .max))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static let secret = (0..<32).map { UInt8($0 * 7 & 0xFF) }

    static func schedule() -> KeySchedule {
        var schedule = KeySchedule()
        schedule.change(rotateEvery: 3, fromMSN: 100)
        schedule.change(rotateEvery: nil, fromMSN: 110)
        schedule.change(rotateEvery: 2, fromMSN: 120)
        return schedule
    }

    @Test("a written record reads back with the same secret and schedule")
    func roundTrip() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let journal = KeyJournal(directory: directory + "/keys")
        #expect(try journal.load(channel: "news").get() == nil)
        let record = KeyJournalRecord(secret: Self.secret, schedule: Self.schedule())
        try journal.write(record, channel: "news")
        let loaded = try #require(try journal.load(channel: "news").get())
        #expect(loaded == record)
        #expect(loaded.schedule.period(of: 121) == 4, "periods 0 to 3 were used by MSNs 100 to 109")
        #expect(loaded.schedule.period(of: 112) == nil)
        // Another channel's file is separate.
        #expect(try journal.load(channel: "sport").get() == nil)
    }

    @Test("the file is the documented JSON, readable by the owner only")
    func formatAndMode() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let journal = KeyJournal(directory: directory + "/keys")
        try journal.write(KeyJournalRecord(secret: Self.secret, schedule: Self.schedule()), channel: "news")
        let path = directory + "/keys/news.json"
        var info = stat()
        #expect(stat(path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        #expect(object["version"] as? Int == 1)
        #expect((object["secret"] as? String).flatMap { Data(base64Encoded: $0) } == Data(Self.secret))
        let spans = try #require((object["schedule"] as? [String: Any])?["spans"] as? [[String: Any]])
        #expect(spans.map { $0["fromMSN"] as? Int } == [100, 110, 120])
        #expect(spans.map { $0["rotateEvery"] as? Int } == [3, nil, 2])
        // A rewrite keeps the mode, also over a temporary file left behind with a wider one.
        _ = FileManager.default.createFile(
            atPath: path + ".tmp", contents: Data(), attributes: [.posixPermissions: 0o644])
        try journal.write(KeyJournalRecord(secret: Self.secret, schedule: KeySchedule()), channel: "news")
        #expect(stat(path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
    }

    @Test(
        "a torn, corrupt or foreign file is reported, never trusted",
        arguments: [
            "{\"version\":1,\"secret\":\"AAEC",
            "",
            "not json",
            "{\"version\":2,\"secret\":\"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\",\"schedule\":{\"spans\":[]}}",
            "{\"version\":1,\"secret\":\"AAEC\",\"schedule\":{\"spans\":[]}}",
            "{\"version\":1,\"secret\":\"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\",\"schedule\":{\"spans\":"
                + "[{\"fromMSN\":9,\"rotateEvery\":2,\"firstPeriod\":0},{\"fromMSN\":3,\"firstPeriod\":4}]}}",
        ])
    func unusableFile(contents: String) throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory + "/keys", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: directory + "/keys/news.json", contents: Data(contents.utf8))
        let journal = KeyJournal(directory: directory + "/keys")
        guard case .failure(let error) = journal.load(channel: "news") else {
            Issue.record("an unusable key file was accepted")
            return
        }
        #expect(error.message.contains("news.json"))
    }

    @Test("a file that cannot be read is reported unreadable, a corrupt one is not; a corrupt one is moved aside")
    func unreadableIsNotCorrupt() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let journal = KeyJournal(directory: directory + "/keys")
        try FileManager.default.createDirectory(atPath: journal.path(channel: "news"), withIntermediateDirectories: true)
        guard case .failure(let unreadable) = journal.load(channel: "news") else {
            Issue.record("a file that cannot be read was accepted")
            return
        }
        #expect(unreadable.unreadable)
        _ = FileManager.default.createFile(atPath: journal.path(channel: "sport"), contents: Data("not json".utf8))
        guard case .failure(let corrupt) = journal.load(channel: "sport") else {
            Issue.record("a corrupt file was accepted")
            return
        }
        #expect(!corrupt.unreadable)
        let aside = try journal.moveAside(channel: "sport")
        #expect(FileManager.default.contents(atPath: aside) == Data("not json".utf8))
        #expect(try journal.load(channel: "sport").get() == nil)
    }

    @Test("the key journal lives beside the state journal's directory")
    func besideStateJournal() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let state = try StateJournal(directory: directory + "/channels")
        #expect(KeyJournal.beside(state).path(channel: "news") == directory + "/keys/news.json")
    }
}
