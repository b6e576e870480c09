import Foundation
import Glibc
import TestSupport
import Testing

extension EndToEnd {
    /// Readiness for systemd's `Type=notify` (docs/install.md "Readiness"): the real binary started with
    /// `NOTIFY_SOCKET` naming a unix datagram socket of the test's, as systemd starts it. It sends `READY=1` once it
    /// listens, `RELOADING=1` (with `MONOTONIC_USEC`) then `READY=1` around a SIGHUP reload, and `STOPPING=1` on
    /// SIGTERM.
    @Suite("End to end: systemd readiness (NOTIFY_SOCKET)", .tags(.endToEnd))
    struct SystemdNotifyTests {
        /// A bound unix datagram socket: what systemd listens on for a `Type=notify` service.
        final class NotifySocket: Sendable {
            let descriptor: Int32
            let address: String
            let pathToRemove: String?

            /// `name` starting with `@`: an abstract socket; otherwise a file system path.
            init(name: String) throws {
                let descriptor = socket(AF_UNIX, datagramSocketType, 0)
                guard descriptor >= 0 else { throw EndToEndError("socket(AF_UNIX) failed: errno \(errno)") }
                var address = sockaddr_un()
                address.sun_family = sa_family_t(AF_UNIX)
                var bytes = Array(name.utf8)
                if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
                withUnsafeMutableBytes(of: &address.sun_path) { path in
                    for (index, byte) in bytes.enumerated() { path[index] = byte }
                }
                let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count)
                let bound = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
                }
                guard bound == 0 else {
                    close(descriptor)
                    throw EndToEndError("bind(\(name)) failed: errno \(errno)")
                }
                _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
                self.descriptor = descriptor
                self.address = name
                pathToRemove = name.hasPrefix("@") ? nil : name
            }

            deinit {
                close(descriptor)
                if let pathToRemove { unlink(pathToRemove) }
            }

            /// The next datagram, or nil when none came within `timeout`.
            func receive(timeout: Duration) async throws -> String? {
                let deadline = ContinuousClock.now + timeout
                var buffer = [UInt8](repeating: 0, count: 4096)
                while ContinuousClock.now < deadline {
                    let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                    if count >= 0 { return String(decoding: buffer[..<count], as: UTF8.self) }
                    try await Task.sleep(for: .milliseconds(20))
                }
                return nil
            }

            /// The next datagram, waited for in `poll(2)` (no polling interval): for a test that must act the moment
            /// one arrives. Blocks its thread for up to `timeout`.
            func receiveAtOnce(timeout: Duration) -> String? {
                var descriptors = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                let milliseconds = Int32(timeout.components.seconds * 1000)
                guard poll(&descriptors, 1, milliseconds) == 1 else { return nil }
                var buffer = [UInt8](repeating: 0, count: 4096)
                let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                return count >= 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
            }
        }

        @Test("READY=1 once listening; RELOADING=1 with MONOTONIC_USEC, then READY=1 around SIGHUP; STOPPING=1 on SIGTERM")
        func notifiesReadinessReloadAndStop() async throws {
            // An abstract socket, as systemd's own NOTIFY_SOCKET is in a container or user manager ("@..." form).
            let notify = try NotifySocket(name: "@hlsorigin-test-notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
            let configuration = """
                channels:
                  - name: demo
                    source: test-source
                    segmentDuration: 2
                    window: { segments: 4 }
                    renditions: [{name: 360p, profile: 360p}]

                """
            let origin = try await OriginProcess(
                configuration: configuration, label: "notify", environment: ["NOTIFY_SOCKET": notify.address])
            defer { origin.kill() }
            let ready = try #require(try await notify.receive(timeout: .seconds(10)), "no datagram after startup")
            let readyLines = ready.split(separator: "\n")
            #expect(readyLines.first == "READY=1")
            #expect(readyLines.contains("STATUS=listening on port \(origin.port)"))
            // Ready means the port answers.
            let metrics = try await HTTPClient(port: origin.port).get("/metrics")
            #expect(metrics.status == 200)

            origin.child.signal(SIGHUP)
            let reloading = try #require(try await notify.receive(timeout: .seconds(10)), "no datagram after SIGHUP")
            let reloadingLines = reloading.split(separator: "\n")
            #expect(reloadingLines.first == "RELOADING=1")
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            let nowMicroseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
            let stamp = reloadingLines.first { $0.hasPrefix("MONOTONIC_USEC=") }.flatMap {
                UInt64($0.dropFirst("MONOTONIC_USEC=".count))
            }
            let monotonic = try #require(stamp, "RELOADING=1 without MONOTONIC_USEC: \(reloading)")
            #expect(monotonic <= nowMicroseconds && nowMicroseconds - monotonic < 10_000_000)
            let reloaded = try await notify.receive(timeout: .seconds(10))
            #expect(reloaded?.split(separator: "\n").first == "READY=1")

            origin.child.signal(SIGTERM)
            let stopping = try await notify.receive(timeout: .seconds(10))
            #expect(stopping == "STOPPING=1")
            #expect(await origin.child.wait(timeout: .seconds(10)) == 0)
        }

        @Test("a SIGHUP the moment READY=1 arrives reloads (RELOADING=1, READY=1): the process does not die of it")
        func reloadsOnSIGHUPRightAfterReady() async throws {
            // `systemctl reload` right after `systemctl start` returns: the SIGHUP must find its handler installed.
            // The child is started here, not through OriginProcess (which waits for the listening line on stdout),
            // so that the signal follows the datagram at once.
            let notify = try NotifySocket(name: "@hlsorigin-test-notify-hup-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
            let directory = try TemporaryDirectory.make("hlsorigin-e2e-notify-hup")
            let configURL = directory.appendingPathComponent("config.yaml")
            try Data("channels: []\n".utf8).write(to: configURL)
            let child = try ChildProcess(
                executable: try OriginProcess.binary(),
                arguments: ["--config", configURL.path, "--port", "0", "--data-dir", directory.appendingPathComponent("data").path],
                directory: directory, label: "hlsorigin", environment: ["NOTIFY_SOCKET": notify.address])
            defer { if child.isRunning { child.signal(SIGKILL) } }
            let ready = try #require(notify.receiveAtOnce(timeout: .seconds(15)), "no datagram after startup")
            child.signal(SIGHUP)
            #expect(ready.split(separator: "\n").first == "READY=1")
            let reloading = notify.receiveAtOnce(timeout: .seconds(10))
            #expect(
                reloading?.split(separator: "\n").first == "RELOADING=1",
                "running: \(child.isRunning); stderr:\n\(child.standardError)")
            let reloaded = notify.receiveAtOnce(timeout: .seconds(10))
            #expect(reloaded?.split(separator: "\n").first == "READY=1")
            #expect(child.isRunning)
            child.signal(SIGTERM)
            #expect(notify.receiveAtOnce(timeout: .seconds(10)) == "STOPPING=1")
            #expect(await child.wait(timeout: .seconds(10)) == 0)
        }
    }
}
