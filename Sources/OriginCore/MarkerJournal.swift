import Foundation

import Glibc

/// The on-disk copy of one channel's marker book: `{dataDirectory}/markers/{channel}.json`, rewritten atomically on
/// every change (write a temporary file, fsync it, rename it over the old one, fsync the directory), so after a
/// crash (also `kill -9` or a power cut) the file holds either the old or the new book, never a torn one.
public struct MarkerJournal: Sendable {
    /// The journal file.
    public let path: String
    /// The channel it belongs to (checked on load).
    public let channel: String

    private struct FileContents: Codable {
        var format: String
        var version: Int
        var channel: String
        var book: MarkerBook
    }

    static let format = "hlsorigin-markers"

    /// The journal of `channel` under `dataDirectory`.
    public init(dataDirectory: String, channel: String) {
        self.path = dataDirectory + "/markers/" + channel + ".json"
        self.channel = channel
    }

    /// Reads the book; nil if there is no journal yet.
    /// - Throws: when the file exists but cannot be read or decoded, or belongs to another channel.
    public func load() throws -> MarkerBook? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let contents = try JSONDecoder().decode(FileContents.self, from: data)
        guard contents.format == Self.format, contents.version == 1 else {
            throw MarkerJournalError("\(path): not a version 1 marker journal")
        }
        guard contents.channel == channel else {
            throw MarkerJournalError("\(path): journal of channel '\(contents.channel)', expected '\(channel)'")
        }
        return contents.book
    }

    /// Writes the book durably; returns only once it is on disk.
    public func save(_ book: MarkerBook) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(FileContents(format: Self.format, version: 1, channel: channel, book: book))
        let directory = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let temporary = path + ".tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw MarkerJournalError.failed("open \(temporary)") }
        var written = 0
        let failure: MarkerJournalError? = data.withUnsafeBytes { raw -> MarkerJournalError? in
            while written < raw.count {
                let result = write(descriptor, raw.baseAddress! + written, raw.count - written)
                if result < 0 {
                    if errno == EINTR { continue }
                    return .failed("write \(temporary)")
                }
                written += result
            }
            return fsync(descriptor) == 0 ? nil : .failed("fsync \(temporary)")
        }
        close(descriptor)
        if let failure {
            unlink(temporary)
            throw failure
        }
        guard rename(temporary, path) == 0 else {
            let error = MarkerJournalError.failed("rename \(temporary)")
            unlink(temporary)
            throw error
        }
        let directoryDescriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directoryDescriptor >= 0 else { throw MarkerJournalError.failed("open \(directory)") }
        defer { close(directoryDescriptor) }
        guard fsync(directoryDescriptor) == 0 else { throw MarkerJournalError.failed("fsync \(directory)") }
    }
}

/// A marker journal that cannot be read or written.
public struct MarkerJournalError: Error, Sendable, CustomStringConvertible {
    /// What failed.
    public let message: String

    init(_ message: String) {
        self.message = message
    }

    static func failed(_ operation: String) -> MarkerJournalError {
        MarkerJournalError("\(operation): \(String(cString: strerror(errno)))")
    }

    public var description: String { message }
}
