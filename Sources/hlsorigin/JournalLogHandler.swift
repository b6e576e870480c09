import Foundation
import Glibc
import Logging

/// Log lines for journald: no timestamp (the journal stamps each line) and the level as a syslog priority prefix
/// (`<3>` error ... `<7>` debug), which journald's stream reader turns into the entry's PRIORITY, so
/// `journalctl -p warning -u hlsorigin` works. Used when stderr is the journal (`JOURNAL_STREAM`, see
/// ``JournalLogHandler/stderrIsJournal(environment:)``); otherwise the origin logs with swift-log's stream handler.
struct JournalLogHandler: LogHandler {
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    let label: String

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        let details =
            merged.isEmpty ? "" : " " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        // One record per line: a newline inside a message would start a new journal entry without the prefix.
        let text = "\(event.message)\(details)".replacingOccurrences(of: "\n", with: " ")
        let line = "<\(Self.priority(event.level))>\(label): \(text)\n"
        FileHandle.standardError.write(Data(line.utf8))
    }

    /// syslog(3) priorities.
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// Whether stderr is the journal's stream: `JOURNAL_STREAM` (`device:inode`, set by systemd for a unit whose
    /// output goes to the journal) names stderr's file (a child whose stderr was redirected keeps the variable but
    /// not the stream, hence the comparison).
    static func stderrIsJournal(environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        guard let value = environment["JOURNAL_STREAM"] else { return false }
        let parts = value.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var status = stat()
        guard fstat(STDERR_FILENO, &status) == 0 else { return false }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
    }
}
