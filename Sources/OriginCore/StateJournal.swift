import Foundation

import Glibc

/// What the origin must remember of a channel across restarts: enough that media sequence numbers never repeat,
/// discontinuity sequences never go back and PROGRAM-DATE-TIME stays monotonic.
public struct ChannelJournalRecord: Codable, Sendable, Hashable {
    /// Format version of the file.
    public var version: Int = 1
    public var channel: String
    /// No MSN above this one was ever published: the next run starts above it. The channel reserves MSNs in blocks
    /// and writes this before publishing an MSN beyond it, so a crash at any moment cannot lead to a reused MSN.
    public var msnReservedThrough: UInt64
    public var renditions: [String: RenditionJournalRecord]
    /// When this record was written (ms since the epoch, shared clock).
    public var writtenAtMilliseconds: Int64
}

/// Per-rendition part of the journal.
public struct RenditionJournalRecord: Codable, Sendable, Hashable {
    /// MSN of the newest entry.
    public var lastMSN: UInt64?
    /// EXT-X-DISCONTINUITY-SEQUENCE of the newest entry's discontinuity domain (head DSN + discontinuities listed).
    public var edgeDiscontinuitySequence: UInt64
    /// End of the newest entry on the PDT timeline, ms since the epoch.
    public var lastProgramDateTimeEndMilliseconds: Int64?
}

/// Why a journal could not be read.
public struct JournalError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// One small JSON file per channel in the data directory, replaced atomically: written to a temporary file,
/// fsync'd, renamed over the old one, and the directory fsync'd. A torn or corrupt file is reported, never trusted.
public final class StateJournal: Sendable {
    /// The directory holding `{channel}.state.json`.
    public let directory: String

    /// Creates the directory if needed.
    public init(directory: String) throws {
        self.directory = directory
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
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

    /// Replaces the channel's record atomically and durably.
    public func write(_ record: ChannelJournalRecord) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(record)
        try Self.writeAtomically(data, to: path(channel: record.channel), directory: directory)
    }

    /// Writes `data` to `path` through a temporary file, fsync and rename, then fsyncs the directory.
    public static func writeAtomically(_ data: Data, to path: String, directory: String) throws {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw JournalError(message: "cannot create \(temporary): errno \(errno)") }
        var failure: String?
        data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = "write \(temporary): errno \(errno)"
                    return
                }
                offset += written
            }
        }
        if failure == nil, fsync(fd) != 0 { failure = "fsync \(temporary): errno \(errno)" }
        close(fd)
        if let failure { throw JournalError(message: failure) }
        guard rename(temporary, path) == 0 else { throw JournalError(message: "rename \(temporary): errno \(errno)") }
        let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            _ = fsync(directoryFD)
            close(directoryFD)
        }
    }
}
