import Logging
import Synchronization
import TestSupport
import Testing

@testable import OriginServer

/// Under systemd the journal's stream reader makes one entry per line, `<priority>label: message key=value ...`:
/// whatever a metadata value holds, a shipper splitting the pairs reads it back whole (logfmt quoting).
@Suite("Journal log lines: one entry each, metadata as logfmt pairs", .offThePool)
struct JournalLogHandlerTests {
    final class Lines: Sendable {
        let all = Mutex<[String]>([])
    }

    static func logger(_ lines: Lines) -> Logger {
        Logger(label: "hlsorigin.test") { label in
            JournalLogHandler(label: label, logLevel: .info) { line in lines.all.withLock { $0.append(line) } }
        }
    }

    /// Splits the pairs after the message the way logfmt readers do: `key=bare` or `key="quoted with \" escapes"`.
    static func pairs(_ text: Substring) -> [String: String] {
        var pairs: [String: String] = [:]
        var rest = text[...]
        while let equals = rest.firstIndex(of: "=") {
            let key = String(rest[..<equals].trimmingPrefix(" "))
            rest = rest[rest.index(after: equals)...]
            var value = ""
            if rest.first == "\"" {
                rest = rest.dropFirst()
                while let character = rest.popFirst(), character != "\"" {
                    guard character == "\\", let escaped = rest.popFirst() else {
                        value.append(character)
                        continue
                    }
                    switch escaped {
                    case "n": value.append("\n")
                    case "r": value.append("\r")
                    case "t": value.append("\t")
                    case "u":
                        let hex = rest.prefix(4)
                        rest = rest.dropFirst(4)
                        value.unicodeScalars.append(Unicode.Scalar(UInt32(hex, radix: 16) ?? 0x3F) ?? "?")
                    default: value.append(escaped)
                    }
                }
            } else {
                let end = rest.firstIndex(of: " ") ?? rest.endIndex
                value = String(rest[..<end])
                rest = rest[end...]
            }
            pairs[key] = value
        }
        return pairs
    }

    @Test func metadataValuesWithSpacesEqualsQuotesOrNewlinesAreQuotedAndReadBackWhole() throws {
        let lines = Lines()
        let logger = Self.logger(lines)
        let values: [String: String] = [
            "error": "marker database unavailable: connection refused",
            "query": "start=-600&end=-60",
            "reason": "first line\nsecond \"line\"\tend \\ \u{1}",
            "empty": "",
            "hls.channel": "news",
        ]
        logger.warning("SCTE-35 cue waits", metadata: values.mapValues { .string($0) })
        let written = lines.all.withLock { $0 }
        try #require(written.count == 1)
        let line = written[0]
        #expect(line.hasPrefix("<4>hlsorigin.test: SCTE-35 cue waits "))
        #expect(line.hasSuffix("\n"))
        #expect(!line.dropLast().contains("\n"), "one journal entry")
        let text = line.dropFirst("<4>hlsorigin.test: SCTE-35 cue waits".count).dropLast()
        #expect(Self.pairs(text) == values)
        #expect(text.contains(" hls.channel=news "), "a plain value stays bare")
        #expect(text.contains(#" empty="" "#))
    }

    /// The whole line, byte for byte: priority, label, message, then the pairs sorted by key, the call's metadata over
    /// the logger's; a value bare unless empty or holding a space, `=`, `"`, `\` or a control character, quoted ones
    /// escaped as a JSON string (`<` too).
    @Test func aLineIsWrittenByteForByte() throws {
        let lines = Lines()
        var logger = Self.logger(lines)
        logger[metadataKey: "hls.channel"] = "news"
        logger[metadataKey: "reason"] = "logger"
        logger.notice(
            "cue\tin",
            metadata: [
                "reason": "say \"hi\"\\ = ok\n", "z.unicode": "é", "b.tag": "<x>", "c.html": "a <b>", "a.empty": "",
            ])
        let expected =
            #"<5>hlsorigin.test: cue in a.empty="" b.tag=<x> c.html="a \u003cb>" hls.channel=news "#
            + #"reason="say \"hi\"\\ = ok\n" z.unicode=é"# + "\n"
        #expect(lines.all.withLock { $0 } == [expected])
    }

    @Test func aMessageWithANewlineStaysOneEntryWithItsPriority() throws {
        let lines = Lines()
        Self.logger(lines).error("first\nsecond")
        #expect(lines.all.withLock { $0 } == ["<3>hlsorigin.test: first second\n"])
    }

    @Test func controlCharactersInAMessageBecomeSpacesSoItStaysOneEntry() throws {
        let lines = Lines()
        Self.logger(lines).warning("a\rb\u{0}c\td\u{1B}e\u{7F}f\r\ng é")
        #expect(lines.all.withLock { $0 } == ["<4>hlsorigin.test: a b c d e f  g é\n"])
    }
}
