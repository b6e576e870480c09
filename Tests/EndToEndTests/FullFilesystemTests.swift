import Foundation
import Glibc
import HLSPlaylist
import TestSupport
import Testing

/// A tmpfs of a few MiB the test mounts for the data directory (needs root or CAP_SYS_ADMIN, like the network
/// namespaces of `RemoteAccessTests`); unmounted when the test ends.
struct SmallFilesystem {
    let path: URL

    /// True when this process may mount a tmpfs (it tries one).
    static let permitted: Bool = {
        guard let probe = try? TemporaryDirectory.make("hlsorigin-tmpfs-probe") else { return false }
        let mounted = mount("tmpfs", probe.path, "tmpfs", 0, "size=1m") == 0
        if mounted { umount(probe.path) }
        return mounted
    }()

    init(at path: URL, bytes: Int) throws {
        try FileManager.default.createDirectory(at: path, withIntermediateDirectories: true)
        guard mount("tmpfs", path.path, "tmpfs", 0, "size=\(bytes)") == 0 else {
            throw EndToEndError("mount -t tmpfs on \(path.path) failed: errno \(errno)")
        }
        self.path = path
    }

    /// Bytes still free.
    var available: Int64 {
        var stats = statvfs()
        guard statvfs(path.path, &stats) == 0 else { return -1 }
        return Int64(stats.f_bavail) * Int64(stats.f_frsize)
    }

    /// Writes `name` until the file system refuses (ENOSPC): the disk is full.
    func fill(_ name: String) {
        let fd = open(path.appendingPathComponent(name).path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let block = [UInt8](repeating: 0x55, count: 4096)
        while block.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
    }

    /// Writes `name` until at most `bytes` are left free: the disk nearly full, its writes still succeeding.
    func fill(_ name: String, leaving bytes: Int64) {
        let fd = open(path.appendingPathComponent(name).path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let block = [UInt8](repeating: 0x55, count: 64 << 10)
        while available - Int64(block.count) >= bytes,
            block.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0
        {}
    }

    func remove(_ name: String) {
        unlink(path.appendingPathComponent(name).path)
    }

    func unmount() {
        umount2(path.path, Int32(MNT_DETACH))
    }
}

extension EndToEndRestarts {
    /// The release binary on a real file system that fills up (a 24 MiB tmpfs): pushes are refused with 507 while
    /// it is full, nothing that was not synced is listed, status and metrics say so, pushes are taken again by
    /// themselves once space returns, and after a kill -9 every segment answered 201 is listed with its bytes.
    @Suite(
        "End to end: a data directory on a file system that fills up", .tags(.endToEnd),
        .enabled(
            if: SmallFilesystem.permitted,
            "mounting a tmpfs is not permitted here: run as root or with CAP_SYS_ADMIN"))
    struct FullFilesystemTests {
        static let configuration = """
            logLevel: warning
            ingest:
              autoCreate: false
            channels:
              - name: d
                source: push
                targetDuration: 1
                segmentDuration: 1
                window: { segments: 600 }
                renditions:
                  - name: lo
            """

        @Test("disk full: 507 and nothing listed, status and metrics degraded, recovery when space returns, kill -9 keeps every 201")
        func pushesAreRefusedWhileTheDiskIsFullAndTakenAgainAfter() async throws {
            let directory = try TemporaryDirectory.make("hlsorigin-e2e-full-disk")
            let segmentDirectory = directory.appendingPathComponent("segments")
            try FileManager.default.createDirectory(at: segmentDirectory, withIntermediateDirectories: true)
            let segments = try await CrashRestartTests.makeSegments(count: 40, in: segmentDirectory)
            let disk = try SmallFilesystem(at: directory.appendingPathComponent("data"), bytes: 24 << 20)
            defer { disk.unmount() }
            var origin = try await OriginProcess(configuration: Self.configuration, label: "full", restarting: directory)
            let client = HTTPClient(port: origin.port)
            let began = ContinuousClock.now
            var acknowledged: [UInt64: [UInt8]] = [:]
            var refused: [Int] = []
            // Pushes paced to real time: segment i is due i seconds after the start.
            func push(_ index: Int) async throws -> RawHTTPResponse {
                let due = began + .milliseconds(index * 1000 - 500)
                if ContinuousClock.now < due { try await Task.sleep(until: due) }
                let answer = try await client.request("PUT", "/ingest/d/lo/s\(index).ts", body: segments[index])
                if answer.status == 201, let msn = CrashRestartTests.msn(in: answer.text) {
                    acknowledged[msn] = segments[index]
                }
                return answer
            }
            for index in 0..<6 {
                let answer = try await push(index)
                #expect(answer.status == 201, "segment \(index) before the disk fills: \(answer.status) \(answer.text)")
            }

            // The disk fills up.
            disk.fill("ballast")
            #expect(disk.available < 64 << 10, "the ballast left \(disk.available) bytes free")
            var index = 6
            while index < 12 {
                let answer = try await push(index)
                if answer.status == 201 {
                    // Space the store reserved before the disk filled may still take a segment or two.
                    #expect(refused.isEmpty, "segment \(index) taken after an earlier one was refused")
                } else {
                    #expect(answer.status == 507, "segment \(index) on a full disk: \(answer.status) \(answer.text)")
                    #expect(answer.text.lowercased().contains("space"), "the body says why: \(answer.text)")
                    refused.append(index)
                }
                index += 1
            }
            #expect(refused.count >= 4, "only \(refused.count) of 6 pushes refused on a full disk")
            let listedWhileFull = try MediaPlaylist.parse(try await client.get("/live/d/lo/index.m3u8").text)
            let newest = try #require(acknowledged.keys.max())
            for (offset, segment) in listedWhileFull.segments.enumerated() {
                let msn = listedWhileFull.mediaSequence + UInt64(offset)
                if acknowledged[msn] == nil {
                    #expect(segment.gap || msn > newest, "msn \(msn) listed as media but never acknowledged")
                }
            }
            let status = try await client.get("/admin/channels/d").text
            #expect(status.contains("\"degraded\""), "status while full: \(status.prefix(2000))")
            let metrics = try await client.get("/metrics").text
            #expect(metrics.contains("hlsorigin_storage_degraded{channel=\"d\"} 1"), "metrics while full")
            #expect(
                !metrics.contains("hlsorigin_storage_write_failures_total{channel=\"d\"} 0"),
                "write failures counted")

            // Space returns: pushes are taken again without a restart.
            disk.remove("ballast")
            var recovered = false
            while index < 22, !recovered {
                recovered = try await push(index).status == 201
                index += 1
            }
            #expect(recovered, "no push taken within 10 s after space returned")
            try await waitUntil("the status to say ok again", timeout: .seconds(5)) {
                ((try? await client.get("/metrics").text) ?? "").contains("hlsorigin_storage_degraded{channel=\"d\"} 0")
            }
            for _ in 0..<3 { _ = try await push(index); index += 1 }

            // kill -9 and a restart on the same file system: every 201 is listed with its bytes.
            origin.kill()
            _ = await origin.child.wait(timeout: .seconds(5))
            origin = try await OriginProcess(configuration: Self.configuration, label: "full-2", restarting: directory)
            defer { origin.kill() }
            let restarted = HTTPClient(port: origin.port)
            try await waitUntil("every acknowledged MSN listed after the restart", timeout: .seconds(5)) {
                guard let text = try? await restarted.get("/live/d/lo/index.m3u8").text,
                    let playlist = try? MediaPlaylist.parse(text)
                else { return false }
                return playlist.mediaSequence + UInt64(playlist.segments.count) > newest
            }
            let playlist = try MediaPlaylist.parse(try await restarted.get("/live/d/lo/index.m3u8").text)
            for (msn, bytes) in acknowledged.sorted(by: { $0.key < $1.key }) {
                let offset = Int(msn) - Int(playlist.mediaSequence)
                guard playlist.segments.indices.contains(offset) else {
                    Issue.record("msn \(msn) (201) is not listed after kill -9")
                    continue
                }
                #expect(!playlist.segments[offset].gap, "msn \(msn) (201) is a GAP after kill -9")
                let served = try await restarted.get("/live/d/lo/\(playlist.segments[offset].uri)")
                #expect(served.status == 200 && served.body == bytes, "msn \(msn): other bytes after kill -9")
            }
            print("full disk: \(acknowledged.count) segments 201, \(refused.count) refused with 507 while full")
        }
    }
}
