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

    /// A service on a free loopback port keeping its data in `directory`.
    static func service(dataDirectory directory: URL) throws -> OriginService {
        var configuration = ServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.threads = 1
        configuration.dataDirectory = directory.path
        return try OriginService(configuration: configuration, logger: logger)
    }

    @Test(.timeLimit(.minutes(1)))
    func aGracefulShutdownEndsRunAndClosesThePort() async throws {
        let directory = try TemporaryDirectory.make("lifecycle")
        defer { try? FileManager.default.removeItem(at: directory) }
        let service = try Self.service(dataDirectory: directory)
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
        let directory = try TemporaryDirectory.make("lifecycle")
        defer { try? FileManager.default.removeItem(at: directory) }
        let service = try Self.service(dataDirectory: directory)
        let group = ServiceGroup(services: [service], logger: Self.logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            try await waitUntil("the service to listen", timeout: .seconds(20)) { service.port > 0 }
            #expect(try RawHTTPConnection(port: service.port).request("GET", "/healthz").status == 200)
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        #expect(service.port == 0)
    }
}
