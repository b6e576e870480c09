import Foundation
import Logging
import Synchronization
import TestSupport
import Testing

@testable import OriginServer

/// `--log-format json`: one JSON object per line, keys time, level, label, message, metadata; whatever the message
/// or the metadata hold, the line stays one parseable line.
@Suite("JSON log lines for log shippers", .offThePool)
struct JSONLogHandlerTests {
    final class Lines: Sendable {
        let all = Mutex<[String]>([])
    }

    static func logger(_ lines: Lines, level: Logger.Level = .info) -> Logger {
        Logger(label: "hlsorigin.test") { label in
            var handler = JSONLogHandler(label: label) { line in lines.all.withLock { $0.append(line) } }
            handler.logLevel = level
            return handler
        }
    }

    @Test func eachEventIsOneJSONObjectOnOneLine() throws {
        let lines = Lines()
        var logger = Self.logger(lines)
        logger[metadataKey: "hls.channel"] = "news"
        logger.info(
            "marker \"ad-1\" added\nsecond line\t\u{1}",
            metadata: ["hls.marker": "ad-1", "nested": ["a": ["1", "2"], "b": "\u{2028}"], "count": "\(3)"])
        logger.debug("below the level")
        let written = lines.all.withLock { $0 }
        try #require(written.count == 1)
        let line = written[0]
        #expect(line.hasSuffix("}\n"))
        #expect(line.dropLast().contains("\n") == false)
        #expect(line.hasPrefix("{\"time\":\""))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["level"] as? String == "info")
        #expect(object["label"] as? String == "hlsorigin.test")
        #expect(object["message"] as? String == "marker \"ad-1\" added\nsecond line\t\u{1}")
        let metadata = try #require(object["metadata"] as? [String: Any])
        #expect(metadata["hls.channel"] as? String == "news")
        #expect(metadata["hls.marker"] as? String == "ad-1")
        #expect(metadata["count"] as? String == "3")
        let nested = try #require(metadata["nested"] as? [String: Any])
        #expect(nested["a"] as? [String] == ["1", "2"])
        #expect(nested["b"] as? String == "\u{2028}")
        let time = try #require(object["time"] as? String)
        #expect(time.count == 24 && time.hasSuffix("Z"), "\(time)")
        let keys = ["\"time\":", "\"level\":", "\"label\":", "\"message\":", "\"metadata\":"].map {
            line.range(of: $0)?.lowerBound
        }
        #expect(keys.allSatisfy { $0 != nil } && keys.map { $0! } == keys.map { $0! }.sorted())
    }

    @Test func noMetadataLeavesTheKeyOut() throws {
        let lines = Lines()
        Self.logger(lines).warning("plain")
        let line = try #require(lines.all.withLock { $0.first })
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["metadata"] == nil)
        #expect(object["level"] as? String == "warning")
    }

    /// The whole line, byte for byte but the time (the clock's; its form is pinned below): keys in order, metadata
    /// merged (the call's over the provider's over the logger's), members sorted by key, strings escaped as the status
    /// timeline escapes them (`<` too), other characters as they are.
    @Test func aLineIsWrittenByteForByte() throws {
        let lines = Lines()
        var logger = Logger(label: "hlsorigin.test") { label in
            var handler = JSONLogHandler(label: label) { line in lines.all.withLock { $0.append(line) } }
            handler.metadataProvider = Logger.MetadataProvider { ["request": "provider", "trace": "provider"] }
            return handler
        }
        logger[metadataKey: "hls.channel"] = "news"
        logger[metadataKey: "request"] = "logger"
        logger[metadataKey: "trace"] = "logger"
        logger.notice(
            "quote \" backslash \\ <b> tab\t\u{1} \u{7F} é\u{2028}",
            metadata: ["trace": "call", "list": ["b", .stringConvertible(42)], "map": ["z": "1", "a": ["x": "<"]]])
        let line = try #require(lines.all.withLock { $0 }.first)
        let time = line.dropFirst(#"{"time":""#.count).prefix(24)
        let expected =
            #"{"time":"\#(time)","level":"notice","label":"hlsorigin.test","#
            + #""message":"quote \" backslash \\ \u003cb> tab\t\u0001 \#u{7F} é\#u{2028}","#
            + #""metadata":{"hls.channel":"news","list":["b","42"],"map":{"a":{"x":"\u003c"},"z":"1"},"#
            + #""request":"provider","trace":"call"}}"# + "\n"
        #expect(line == expected)
    }

    @Test func timestampsAreUTCWithMilliseconds() {
        #expect(JSONLogHandler.timestamp(Date(timeIntervalSince1970: 1_767_225_600.0429)) == "2026-01-01T00:00:00.042Z")
        #expect(JSONLogHandler.timestamp(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
    }
}
