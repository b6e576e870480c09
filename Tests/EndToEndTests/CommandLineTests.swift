import Foundation
import Glibc
import TestSupport
import Testing

extension EndToEnd {
    /// The command line's comforts as an operator uses them, on the built binary: `check-config` (exit status and
    /// the reason), shell completion scripts, `--log-format json` (every stderr line one JSON object).
    @Suite("End to end: check-config, completion, JSON logs", .tags(.endToEnd))
    struct CommandLineTests {
        /// Runs the binary to completion in `directory` (10 s at most).
        static func run(_ arguments: [String], in directory: URL) async throws -> ToolOutput {
            try await ChildProcess.run(try OriginProcess.binary().path, arguments, in: directory, timeout: .seconds(10))
        }

        static func directory() throws -> URL {
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            return url
        }

        @Test func checkConfigPassesTheShippedConfigurations() async throws {
            let directory = try Self.directory()
            defer { try? FileManager.default.removeItem(at: directory) }
            for name in ["default.yaml", "low-latency.yaml"] {
                let path = OriginProcess.packageRoot.appendingPathComponent("config/\(name)").path
                let output = try await Self.run(["check-config", path], in: directory)
                #expect(output.status == 0, "\(name): \(output.standardError)")
                #expect(output.standardOutput.hasPrefix("\(path): OK\n"), "\(output.standardOutput)")
                #expect(output.standardOutput.contains("channel demo: test source, renditions 360p, 180p"))
            }
        }

        @Test(arguments: [
            ("server:\n  prot: 8080\n", "prot"),
            ("tokens:\n  - name: ops\n    secretFile: /nonexistent/ops.token\n", "/nonexistent/ops.token"),
            ("channels:\n  - name: x\n    source: test-source\n    renditions: [{ name: a, profile: 4k }]\n", "4k"),
            ("server:\n  tls: { certificate: /nonexistent/c.pem, key: /nonexistent/k.pem }\n", "/nonexistent/c.pem"),
        ])
        func checkConfigRefusesWithTheReason(yaml: String, named: String) async throws {
            let directory = try Self.directory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let file = directory.appendingPathComponent("origin.yaml")
            try Data(yaml.utf8).write(to: file)
            let output = try await Self.run(["check-config", file.path], in: directory)
            #expect(output.status == 1, "\(output.standardOutput)")
            #expect(output.standardError.hasPrefix("hlsorigin check-config: \(file.path): "), "\(output.standardError)")
            #expect(output.standardError.contains(named), "\(output.standardError)")
            #expect(!output.standardOutput.contains("OK"))
        }

        @Test func completionScriptsNameTheSubcommandsAndOptions() async throws {
            let directory = try Self.directory()
            defer { try? FileManager.default.removeItem(at: directory) }
            for shell in ["bash", "zsh", "fish"] {
                let output = try await Self.run(["--generate-completion-script", shell], in: directory)
                #expect(output.status == 0, "\(shell): \(output.standardError)")
                for word in ["check-config", "validate", "log-format", "data-dir", "json"] {
                    #expect(output.standardOutput.contains(word), "\(shell) completion lacks \(word)")
                }
            }
        }

        /// docs/man/hlsorigin.1 (scripts/man-page) names every option and subcommand the binary's help names.
        @Test func manPageNamesEveryOptionOfTheHelp() async throws {
            let directory = try Self.directory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let page = try String(
                contentsOf: OriginProcess.packageRoot.appendingPathComponent("docs/man/hlsorigin.1"), encoding: .utf8)
            for arguments in [["--help"], ["check-config", "--help"], ["validate", "--help"]] {
                let help = try await Self.run(arguments, in: directory)
                #expect(help.status == 0)
                let words = help.standardOutput.split(whereSeparator: { " ,\n[]<>".contains($0) })
                    .filter { $0.hasPrefix("--") && $0.count > 2 }.map { String($0.dropFirst(2)) }
                #expect(!words.isEmpty)
                for word in words where !page.contains("Fl -\(word)") {
                    Issue.record("docs/man/hlsorigin.1 lacks --\(word) (\(arguments)): run scripts/man-page")
                }
            }
            #expect(page.contains("check-config") && page.contains("validate"))
        }

        @Test func jsonLogFormatWritesOneObjectPerLine() async throws {
            let directory = try Self.directory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let config = OriginProcess.packageRoot.appendingPathComponent("config/default.yaml").path
            let child = try ChildProcess(
                executable: try OriginProcess.binary(),
                arguments: [
                    "--config", config, "--host", "127.0.0.1", "--port", "0", "--data-dir",
                    directory.appendingPathComponent("data").path, "--log-format", "json",
                ],
                directory: directory, label: "json-logs")
            try await waitUntil("the origin listens", timeout: .seconds(15)) {
                child.standardOutput.contains("listening on")
            }
            try await Task.sleep(for: .seconds(3))  // the test source's first segments are logged
            child.signal(SIGTERM)
            #expect(await child.wait(timeout: .seconds(15)) == 0)
            let lines = child.standardError.split(separator: "\n")
            #expect(lines.count >= 2, "\(child.standardError)")
            for line in lines {
                let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                #expect(object?["level"] is String && object?["message"] is String, "\(line)")
                #expect(object?["label"] as? String != nil, "\(line)")
                #expect((object?["time"] as? String)?.hasSuffix("Z") == true, "\(line)")
                #expect(line.hasPrefix("{\"time\":"), "\(line)")
            }
        }
    }
}
