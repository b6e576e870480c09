import Foundation
import Glibc
public import Logging

/// Log lines for journald: no timestamp (the journal stamps each line) and the level as a syslog priority prefix
/// (`<3>` error ... `<7>` debug), which journald's stream reader turns into the entry's PRIORITY, so
/// `journalctl -p warning -u hlsorigin` works. Used when stderr is the journal (`JOURNAL_STREAM`, see
/// ``JournalLogHandler/stderrIsJournal()``); otherwise the origin logs with swift-log's stream handler.
///
/// The stream protocol makes one entry per line, its MESSAGE the line's text: the metadata follow the message as
/// logfmt pairs (`key=value`, sorted by key), a value with a space, `=`, `"`, `\` or a control character (or empty)
/// in double quotes with `\"`, `\\`, `\n`, `\r`, `\t` and `\u00XX` escapes (a JSON string's), so that a shipper reading
/// the pairs back sees each value whole and a newline never starts an entry without its priority.
public struct JournalLogHandler: LineLogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    private let label: String
    private let output: @Sendable (String) -> Void

    /// Writes to standard error (the journal's stream under systemd).
    public static func standardError(label: String, logLevel: Logger.Level) -> JournalLogHandler {
        JournalLogHandler(label: label, logLevel: logLevel, output: JSONLogHandler.writeStandardError)
    }

    /// A handler that hands every line (with its newline) to `output`.
    public init(label: String, logLevel: Logger.Level = .info, output: @escaping @Sendable (String) -> Void) {
        self.label = label
        self.logLevel = logLevel
        self.output = output
    }

    /// Writes `<priority>label: message` and the metadata as pairs sorted by key (the handler has no metadata provider:
    /// swift-log's default, none).
    public func write(_ event: LogEvent, metadata merged: Logger.Metadata) {
        var text = Self.oneLine(event.message.description)
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) {
            text += " \(key)=" + Self.logfmtValue("\(value)")
        }
        output("<\(Self.priority(event.level))>\(label): \(text)\n")
    }

    /// `message` with every control character (below U+0020, and DEL) replaced by a space: one record per line. A
    /// newline, carriage return or NUL inside a message (client-built text among it) would otherwise start a new
    /// journal entry without the prefix, or cut the line short.
    static func oneLine(_ message: String) -> String {
        guard message.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else { return message }
        var scalars = String.UnicodeScalarView()
        for scalar in message.unicodeScalars {
            scalars.append(scalar.value < 0x20 || scalar.value == 0x7F ? " " : scalar)
        }
        return String(scalars)
    }

    /// `value` as a logfmt value: bare when it holds no space, `=`, `"`, `\` or control character and is not empty;
    /// else quoted, with those characters escaped as in a JSON string (which logfmt readers unquote).
    static func logfmtValue(_ value: String) -> String {
        let needsQuotes =
            value.isEmpty
            || value.unicodeScalars.contains { scalar in
                scalar == " " || scalar == "=" || scalar == "\"" || scalar == "\\" || scalar.value < 0x20
            }
        return needsQuotes ? JSONLogHandler.quoted(value) : value
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
    public static func stderrIsJournal() -> Bool {
        stderrIsJournal(environment: ProcessInfo.processInfo.environment)
    }

    static func stderrIsJournal(environment: [String: String]) -> Bool {
        guard let value = environment["JOURNAL_STREAM"] else { return false }
        let parts = value.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var status = stat()
        guard fstat(STDERR_FILENO, &status) == 0 else { return false }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
    }
}
