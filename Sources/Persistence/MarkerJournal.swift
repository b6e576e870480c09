import Foundation
public import Markers

/// The on-disk copy of one channel's marker book: `{dataDirectory}/markers/{channel}.json`, rewritten atomically and
/// durably on every change (`DurableFile`), so after a crash the file holds either the old or the new book.
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
        try DurableFile.replace(path, with: data)
    }
}

/// A marker journal that cannot be read.
public struct MarkerJournalError: Error, Sendable, CustomStringConvertible {
    /// What failed.
    public let message: String

    init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
