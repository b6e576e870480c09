import Foundation
import SCTE35
import TestSupport
import Testing

/// Decodes our splice_info_sections with threefive, an independent SCTE-35 implementation in Python (PyPI).
///
/// threefive is installed into `.build/threefive-venv` if it is missing (scripts/test does the same); if it cannot be
/// installed the test fails rather than passing silently. `THREEFIVE_PYTHON` may name an interpreter that has it.
@Suite("SCTE-35 decoded by threefive", .serialized, .tags(.endToEnd), .offThePool)
struct ThreefiveTests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Runs a program to completion (pip may take a while: at most 5 minutes).
    static func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let directory = try TemporaryDirectory.make("ThreefiveTests")
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try ChildProcess.runBlocking(executable, arguments, in: directory, timeout: .seconds(300))
        // Standard error first: the last line is the program's last line of output.
        return (result.status, result.standardError + result.standardOutput)
    }

    /// An interpreter that can `import threefive`, installing it when needed.
    static func python() throws -> String {
        if let given = ProcessInfo.processInfo.environment["THREEFIVE_PYTHON"], !given.isEmpty { return given }
        let venv = packageRoot.appendingPathComponent(".build/threefive-venv").path
        let python = venv + "/bin/python"
        if FileManager.default.isExecutableFile(atPath: python),
            try run(python, ["-c", "import threefive"]).status == 0
        {
            return python
        }
        let created = try run("/usr/bin/env", ["python3", "-m", "venv", venv])
        try #require(created.status == 0, "python3 -m venv failed: \(created.output)")
        let installed = try run(python, ["-m", "pip", "install", "--quiet", "threefive"])
        try #require(installed.status == 0, "pip install threefive failed: \(installed.output)")
        return python
    }

    /// threefive's reading of a section, as JSON.
    static func decode(_ bytes: [UInt8]) throws -> [String: Any] {
        let script = """
            import json, sys, threefive
            cue = threefive.Cue(sys.argv[1])
            cue.decode()
            print(json.dumps(cue.get(), default=str))
            """
        let result = try run(try python(), ["-c", script, hexString(bytes)])
        try #require(result.status == 0, "threefive failed: \(result.output)")
        let line = try #require(result.output.split(separator: "\n").last.map(String.init))
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    @Test("cue-out: event id, break duration, out-of-network flag, CRC")
    func cueOut() throws {
        let bytes = SpliceInfoSection(
            spliceInsert: SpliceInsert(
                eventId: 0x1234_ABCD, outOfNetwork: true, breakDuration: SpliceInsert.ticks(seconds: 30.5))
        ).bytes
        let decoded = try Self.decode(bytes)
        let info = try #require(decoded["info_section"] as? [String: Any])
        let command = try #require(decoded["command"] as? [String: Any])
        #expect(info["table_id"] as? String == "0xfc")
        #expect(info["section_length"] as? Int == bytes.count - 3)
        #expect(info["sap_type"] as? String == "0x03")
        #expect(info["tier"] as? String == "0x0fff")
        #expect(info["splice_command_type"] as? Int == 5)
        #expect(info["descriptor_loop_length"] as? Int == 0)
        let crc = bytes.suffix(4).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        #expect(info["crc"] as? String == "0x" + crc)
        #expect(command["name"] as? String == "Splice Insert")
        #expect(command["splice_event_id"] as? Int == 0x1234_ABCD)
        #expect(command["out_of_network_indicator"] as? Bool == true)
        #expect(command["splice_event_cancel_indicator"] as? Bool == false)
        #expect(command["program_splice_flag"] as? Bool == true)
        #expect(command["splice_immediate_flag"] as? Bool == true)
        #expect(command["duration_flag"] as? Bool == true)
        #expect(command["break_auto_return"] as? Bool == true)
        #expect(command["break_duration"] as? Double == 30.5)
    }

    @Test("cue-in: same event id, not out of network, no duration")
    func cueIn() throws {
        let bytes = SpliceInfoSection(spliceInsert: SpliceInsert(eventId: 4_000_000_000, outOfNetwork: false)).bytes
        let command = try #require(try Self.decode(bytes)["command"] as? [String: Any])
        #expect(command["splice_event_id"] as? Int == 4_000_000_000)
        #expect(command["out_of_network_indicator"] as? Bool == false)
        #expect(command["duration_flag"] as? Bool == false)
        #expect(command["break_duration"] == nil)
    }

    @Test("a splice time is read back in seconds")
    func spliceTime() throws {
        let bytes = SpliceInfoSection(
            spliceInsert: SpliceInsert(eventId: 5, outOfNetwork: true, breakDuration: 900_000, spliceTime: 8_100_000)
        ).bytes
        let command = try #require(try Self.decode(bytes)["command"] as? [String: Any])
        #expect(command["time_specified_flag"] as? Bool == true)
        #expect(command["pts_time"] as? Double == 90.0)
        #expect(command["break_duration"] as? Double == 10.0)
    }
}
