import Foundation
import Glibc
package import LiveTimeline

/// What a channel's key journal holds: the key secret every period key is derived from, and the key schedule.
package struct KeyJournalRecord: Sendable, Hashable {
    /// The channel's 32-byte key secret.
    package var secret: [UInt8]
    /// Which MSNs are encrypted under which key period.
    package var schedule: KeySchedule

    package init(secret: [UInt8], schedule: KeySchedule) {
        self.secret = secret
        self.schedule = schedule
    }
}

/// The key secret and key schedule of each encrypted channel: `{dataDir}/keys/{channel}.json` =
/// `{"schedule":{"spans":[...]},"secret":"<base64>","version":1}`, replaced atomically and durably (`DurableFile`)
/// with mode 0600. A torn or corrupt file is reported, never trusted (the channel moves it aside and re-keys,
/// loudly); a file that cannot be read is reported as `unreadable` and never replaced (the channel does not start).
///
/// Lock order: the channel writes it while holding `Channel.state` (before the publish that lists the first MSN of a
/// changed schedule); the journal takes no lock of its own.
public final class KeyJournal: Sendable {
    /// The directory holding `{channel}.json`.
    public let directory: String

    /// A journal in `directory` (created with the first write).
    public init(directory: String) {
        self.directory = directory
    }

    /// The key journal of a data directory whose state journal is `journal` (`{dataDir}/channels` ->
    /// `{dataDir}/keys`).
    public static func beside(_ journal: StateJournal) -> KeyJournal {
        KeyJournal(directory: (journal.directory as NSString).deletingLastPathComponent + "/keys")
    }

    /// The file of `channel`'s keys.
    public func path(channel: String) -> String { "\(directory)/\(channel).json" }

    private struct File: Codable {
        var version: Int
        var secret: String
        var schedule: KeySchedule
    }

    /// The channel's record: nil when there is none, an error when the file exists but cannot be used (unreadable,
    /// torn, not JSON, another version, a secret that is not 32 bytes, spans out of order).
    package func load(channel: String) -> Result<KeyJournalRecord?, JournalError> {
        let path = path(channel: channel)
        let data: Data
        switch Self.read(path) {
        case .success(nil): return .success(nil)
        case .success(let read?): data = read
        case .failure(let failure):
            return .failure(
                JournalError(
                    message: "cannot read \(path): \(String(cString: strerror(failure.code)))", unreadable: true))
        }
        let file: File
        do {
            file = try JSONDecoder().decode(File.self, from: data)
        } catch {
            return .failure(JournalError(message: "\(path) is corrupt (\(data.count) bytes): \(error)"))
        }
        guard file.version == 1 else {
            return .failure(JournalError(message: "\(path) has version \(file.version), not 1"))
        }
        guard let secret = Data(base64Encoded: file.secret), secret.count == 32 else {
            return .failure(JournalError(message: "\(path): the secret is not 32 bytes of base64"))
        }
        let spans = file.schedule.spans
        guard zip(spans, spans.dropFirst()).allSatisfy({ $0.fromMSN < $1.fromMSN }),
            spans.allSatisfy({ ($0.rotateEvery ?? 1) >= 1 })
        else {
            return .failure(JournalError(message: "\(path): the key schedule's spans are out of order"))
        }
        return .success(KeyJournalRecord(secret: Array(secret), schedule: file.schedule))
    }

    /// The whole file at `path`; nil when it does not exist; the errno of a failed open or read.
    private static func read(_ path: String) -> Result<Data?, ReadFailure> {
        var descriptor: Int32
        repeat { descriptor = open(path, O_RDONLY | O_CLOEXEC) } while descriptor < 0 && errno == EINTR
        guard descriptor >= 0 else { return errno == ENOENT ? .success(nil) : .failure(ReadFailure(code: errno)) }
        defer { close(descriptor) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(ReadFailure(code: errno))
            }
            if count == 0 { return .success(data) }
            data.append(contentsOf: buffer[..<count])
        }
    }

    private struct ReadFailure: Error {
        var code: Int32
    }

    /// Moves a corrupt file out of the way, durably (`{path}.corrupt-{random}`; never deleted: it may still be
    /// useful to an operator). Returns the new path.
    package func moveAside(channel: String) throws(DurableWriteError) -> String {
        let path = path(channel: channel)
        let aside = path + ".corrupt-" + String(UInt32.random(in: .min ... .max), radix: 36)
        guard rename(path, aside) == 0 else { throw .failed("rename \(path)") }
        try DurableFile.syncDirectory(directory)
        return aside
    }

    /// Replaces the channel's record atomically and durably, readable by the owner only (0600).
    package func write(_ record: KeyJournalRecord, channel: String) throws(DurableWriteError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let file = File(version: 1, secret: Data(record.secret).base64EncodedString(), schedule: record.schedule)
        let data: Data
        do {
            data = try encoder.encode(file)
        } catch {
            // Encoding integers and strings does not fail.
            preconditionFailure("key journal encoding failed: \(error)")
        }
        try DurableFile.replace(path(channel: channel), with: data, permissions: 0o600)
    }
}
