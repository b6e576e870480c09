import ArgumentParser
import Foundation
import OriginServer

/// `hlsorigin check-config [FILE]`: loads the configuration as the origin would (strict keys and types, the
/// environment's tokens and database URL over the file, named tokens resolved, TLS certificate and key read, slate
/// clips read) and runs the checks of start (`ConfigurationCheck`), without listening or touching the data directory.
/// Exit status 0 and a summary when the origin would start with it, 1 and the reason otherwise.
struct CheckConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Check a configuration file without starting the origin.",
        discussion: """
            Reads the file as the origin does at start and on reload (unknown keys, wrong types, missing token \
            files, unreadable certificates, keys or slate clips are errors; HLSORIGIN_ADMIN_TOKEN, \
            HLSORIGIN_INGEST_TOKEN and HLSORIGIN_DATABASE_URL apply), then prints what the origin would run. Exit \
            status: 0 the origin would start with it, 1 it would not (the reason on standard error).
            """)

    @Argument(help: "The configuration file (default: config/default.yaml).")
    var file: String = "config/default.yaml"

    func run() throws {
        let lines: [String]
        do {
            let settings = try HLSOriginCommand.Overrides(path: file).load()
            lines = try ConfigurationCheck.run(settings)
        } catch {
            FileHandle.standardError.write(Data("hlsorigin check-config: \(file): \(error)\n".utf8))
            throw ExitCode.failure
        }
        print("\(file): OK")
        for line in lines { print("  \(line)") }
    }
}
