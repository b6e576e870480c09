import ArgumentParser
import Foundation
import StreamValidator

/// `hlsorigin validate URL [--seconds N] [--json]`: watches a live HLS stream from outside and checks it against the
/// rules of docs/validate.md. Exit status 0 when no check failed, 1 when one did, 2 for a usage error or a URL that
/// does not answer with a playlist.
struct ValidateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Watch a live HLS stream (multivariant or media playlist URL) and check it against the HLS rules.",
        discussion: """
            Reloads every media playlist twice a second, downloads each new segment and fetches removed segments \
            again, then prints one line per rule checked (PASS, FAIL with the evidence, or SKIP with why) and a \
            summary. http:// only. Exit status: 0 no failure, 1 a check failed, 2 usage error or unreachable URL.
            """)

    /// The exit status of a usage error or an unreachable URL.
    static let usageStatus: Int32 = 2

    @Argument(help: "The stream's multivariant or media playlist URL (http://).")
    var url: String

    @Option(name: .long, help: "How long to watch the stream, in seconds (default 30).")
    var seconds: Double = 30

    @Flag(name: .long, help: "Print the report as a JSON document instead of text lines.")
    var json = false

    func validate() throws {
        guard seconds > 0, seconds <= 86_400 else { throw ValidationError("--seconds must be between 0 and 86400") }
        guard url.lowercased().hasPrefix("http://") else {
            throw ValidationError("the URL must start with http:// (https is not supported)")
        }
    }

    func run() throws {
        let watcher = StreamWatcher(url: url, duration: .milliseconds(Int64(seconds * 1000)))
        let report: ValidationReport
        do {
            report = try watcher.run()
        } catch {
            FileHandle.standardError.write(Data("hlsorigin validate: \(error)\n".utf8))
            throw ExitCode(Self.usageStatus)
        }
        print(json ? report.json : report.text, terminator: "")
        if report.exitStatus != 0 { throw ExitCode(report.exitStatus) }
    }
}
