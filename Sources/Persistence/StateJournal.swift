import Foundation
public import LiveTimeline

/// Why a journal could not be read.
public struct JournalError: Error, Sendable, CustomStringConvertible {
    public let message: String
    /// The file could not be read (an I/O error, a permission): it may be intact, so it must not be replaced. False
    /// when it was read and is provably unusable (torn, corrupt, foreign).
    public var unreadable = false
    public var description: String { message }
}

/// One small JSON file per channel in the data directory, replaced atomically and durably (`DurableFile`). A torn or
/// corrupt file is reported, never trusted.
public final class StateJournal: Sendable {
    /// The directory holding `{channel}.state.json`.
    public let directory: String

    /// Creates the directory if needed.
    public init(directory: String) throws {
        self.directory = directory
        try DurableFile.makeDirectories(directory)
    }

    func path(channel: String) -> String { "\(directory)/\(channel).state.json" }

    /// The channel's record: nil if there is none, an error if the file exists but cannot be used.
    public func load(channel: String) -> Result<ChannelJournalRecord?, JournalError> {
        let path = path(channel: channel)
        guard FileManager.default.fileExists(atPath: path) else { return .success(nil) }
        guard let data = FileManager.default.contents(atPath: path) else {
            return .failure(JournalError(message: "cannot read \(path)"))
        }
        do {
            let record = try JSONDecoder().decode(ChannelJournalRecord.self, from: data)
            guard record.version == 1, record.channel == channel else {
                return .failure(JournalError(message: "\(path) is for another channel or version"))
            }
            return .success(record)
        } catch {
            return .failure(JournalError(message: "\(path) is corrupt (\(data.count) bytes): \(error)"))
        }
    }

    /// Replaces the channel's record atomically and durably (`DurableFile`).
    public func write(_ record: ChannelJournalRecord) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(record)
        try DurableFile.replace(path(channel: record.channel), with: data)
    }
}
