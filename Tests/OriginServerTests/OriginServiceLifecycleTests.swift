import Foundation
import Logging
import OriginServer
import ServiceLifecycle
import TestSupport
import Testing

/// `OriginService` as a `Service`: it serves while its group runs and stops cleanly on a graceful shutdown.
@Suite("Origin service lifecycle: serves in a service group, stops on graceful shutdown")
struct OriginServiceLifecycleTests {
    static let logger = Logger(label: "origin-service-tests", factory: { _ in SwiftLogNoOpLogHandler() })

    static func configuration(dataDirectory: String) -> ServerConfiguration {
        var configuration = ServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.threads = 1
        configuration.dataDirectory = dataDirectory
        return configuration
    }

    @Test(.timeLimit(.minutes(1)))
    func aGracefulShutdownEndsRunAndClosesThePort() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lifecycle-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let service = try OriginService(
            configuration: Self.configuration(dataDirectory: directory), logger: Self.logger)
        try service.startListening()
        let port = service.port
        #expect(port > 0)
        let group = ServiceGroup(services: [service], logger: Self.logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            #expect(try RawHTTPConnection(port: port).request("GET", "/healthz").status == 200)
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        #expect(service.port == 0)
        #expect(throws: (any Error).self) { try RawHTTPConnection(port: port).request("GET", "/healthz") }
    }

    @Test(.timeLimit(.minutes(1)))
    func runListensByItselfWhenNotStartedBefore() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lifecycle-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let service = try OriginService(
            configuration: Self.configuration(dataDirectory: directory), logger: Self.logger)
        let group = ServiceGroup(services: [service], logger: Self.logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            var port = 0
            for _ in 0..<200 where port == 0 {
                port = service.port
                if port == 0 { try await Task.sleep(for: .milliseconds(10)) }
            }
            #expect(port > 0)
            if port > 0 { #expect(try RawHTTPConnection(port: port).request("GET", "/healthz").status == 200) }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        #expect(service.port == 0)
    }
}
