import Foundation
public import Logging
import Synchronization

/// `hlsorigin --log-format json`: a swift-log handler that writes one JSON object per line for log shippers
/// (journald, Vector, Fluent Bit, Loki's promtail): `{"time": "2026-01-01T00:00:00.000Z", "level": "info",
/// "label": "hlsorigin", "message": "...", "metadata": {"hls.channel": "demo"}}`. Keys in that order, metadata
/// (merged: the handler's, the logger's, the call's) as JSON strings, objects and arrays; a message with newlines
/// stays on one line (JSON escapes them).
public struct JSONLogHandler: LineLogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let output: @Sendable (String) -> Void

    /// Writes to standard error (where journald and container runtimes collect it).
    public static func standardError(label: String) -> JSONLogHandler {
        JSONLogHandler(label: label, output: writeStandardError)
    }

    /// Writes `line` to standard error whole (one write at a time: lines of two threads never mix).
    @Sendable static func writeStandardError(_ line: String) {
        standardErrorLock.withLock { _ in FileHandle.standardError.write(Data(line.utf8)) }
    }

    private static let standardErrorLock = Mutex(())

    /// A handler that hands every line (with its newline) to `output`.
    public init(label: String, output: @escaping @Sendable (String) -> Void) {
        self.label = label
        self.output = output
    }

    /// Writes the event's JSON object: time, level, label, message and, unless there are none, the metadata.
    public func write(_ event: LogEvent, metadata merged: Logger.Metadata) {
        var line = "{\"time\":" + Self.quoted(Self.timestamp(Date()))
        line += ",\"level\":" + Self.quoted(event.level.rawValue)
        line += ",\"label\":" + Self.quoted(label)
        line += ",\"message\":" + Self.quoted(event.message.description)
        if !merged.isEmpty { line += ",\"metadata\":" + Self.json(.dictionary(merged)) }
        output(line + "}\n")
    }

    /// UTC with milliseconds, as the playlists write PDT.
    static func timestamp(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(milliseconds % 1000))
    }

    static func json(_ value: Logger.MetadataValue) -> String {
        switch value {
        case .string(let text): quoted(text)
        case .stringConvertible(let convertible): quoted(convertible.description)
        case .array(let values): "[" + values.map(json).joined(separator: ",") + "]"
        case .dictionary(let members):
            "{" + members.sorted { $0.key < $1.key }.map { quoted($0.key) + ":" + json($0.value) }.joined(separator: ",")
                + "}"
        }
    }

    /// `text` as a JSON string (the status timeline's escaping: quotes, backslashes, control characters).
    static func quoted(_ text: String) -> String {
        var out = ""
        StatusTimeline.appendString(text, to: &out)
        return out
    }
}
