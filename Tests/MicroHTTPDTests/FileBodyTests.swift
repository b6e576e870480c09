import Dispatch
import Foundation
import Glibc
import MicroHTTPD
import SharedBytes
import Synchronization
import TestSupport
import Testing

/// A file of `count` bytes in a fresh temporary directory; the bytes repeat only every 1,048,573 bytes, so a response
/// from the wrong offset shows.
struct TestFile {
    let path: String
    let bytes: [UInt8]

    init(count: Int) throws {
        let directory = try TemporaryDirectory.make("filebody")
        path = directory.appendingPathComponent("chunk.ts").path
        // A block of a prime length, repeated (copying is fast in debug builds, computing every byte is not).
        let period = 1_048_573
        let block = (0..<min(count, period)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 8 &+ $0 >> 16) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        while bytes.count < count { bytes += block.prefix(count - bytes.count) }
        self.bytes = bytes
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    /// The descriptors of this process open on the file (readlink of every /proc/self/fd entry): counting only
    /// these keeps the figure exact while other tests open and close files in parallel.
    var openDescriptorCount: Int {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.count { entry in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(entry)")) == path
        }
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent)
    }
}

@Suite("File bodies: a region of a file sent by libmicrohttpd, through StaticRepresentation", .offThePool)
struct FileBodyTests {
    static func representation(_ region: FileRegion, etag: String = "\"f1\"") -> StaticRepresentation {
        StaticRepresentation(
            body: .file(region), contentType: "video/mp2t", cacheControl: "public, max-age=31536000", etag: etag,
            lastModifiedSeconds: 784_111_777, delivery: .byteRanges)
    }

    /// A server answering every request with `representation`'s answer.
    static func withFileServer<R>(
        _ representation: StaticRepresentation, _ body: (Int) throws -> R
    ) throws -> R {
        try withTestServer({ head in .respond(representation.response(to: head)) }) { _, port in try body(port) }
    }

    @Test func wholeRegionIsSentExactly() throws {
        let file = try TestFile(count: 10_000)
        defer { file.remove() }
        let region = try FileRegion(path: file.path)
        try Self.withFileServer(Self.representation(region)) { port in
            let response = try RawHTTPConnection(port: port).request("GET", "/chunk.ts")
            #expect(response.status == 200)
            #expect(response.header("Content-Length") == "10000")
            #expect(response.header("ETag") == "\"f1\"")
            #expect(response.header("Accept-Ranges") == "bytes")
            #expect(response.body == file.bytes)
        }
    }

    @Test func regionInTheMiddleOfALargerFileSendsExactlyItsBytes() throws {
        let file = try TestFile(count: 1 << 20)
        defer { file.remove() }
        let region = try FileRegion(path: file.path, range: 300_001..<500_000)
        try Self.withFileServer(Self.representation(region)) { port in
            let client = try RawHTTPConnection(port: port)
            let whole = try client.request("GET", "/s.ts")
            #expect(whole.status == 200)
            #expect(whole.body == Array(file.bytes[300_001..<500_000]))
            let part = try client.request("GET", "/s.ts", headers: [("Range", "bytes=1000-1999")])
            #expect(part.status == 206)
            #expect(part.header("Content-Range") == "bytes 1000-1999/199999")
            #expect(part.body == Array(file.bytes[301_001..<302_001]))
        }
    }

    @Test func singleAndSuffixRangesAnswer206WithTheirBytes() throws {
        let file = try TestFile(count: 50_000)
        defer { file.remove() }
        let region = try FileRegion(path: file.path, range: 10_000..<50_000)
        try Self.withFileServer(Self.representation(region)) { port in
            let client = try RawHTTPConnection(port: port)
            let single = try client.request("GET", "/s.ts", headers: [("Range", "bytes=5-24")])
            #expect(single.status == 206)
            #expect(single.header("Content-Length") == "20")
            #expect(single.header("Content-Range") == "bytes 5-24/40000")
            #expect(single.body == Array(file.bytes[10_005..<10_025]))
            let suffix = try client.request("GET", "/s.ts", headers: [("Range", "bytes=-100")])
            #expect(suffix.status == 206)
            #expect(suffix.header("Content-Range") == "bytes 39900-39999/40000")
            #expect(suffix.body == Array(file.bytes[49_900..<50_000]))
            let open = try client.request("GET", "/s.ts", headers: [("Range", "bytes=39990-")])
            #expect(open.body == Array(file.bytes[49_990..<50_000]))
            let otherValidator = try client.request(
                "GET", "/s.ts", headers: [("Range", "bytes=5-24"), ("If-Range", "\"old\"")])
            #expect(otherValidator.status == 200)
            #expect(otherValidator.body == Array(file.bytes[10_000..<50_000]))
        }
    }

    @Test func rangeBeyondTheRegionAnswers416() throws {
        let file = try TestFile(count: 4096)
        defer { file.remove() }
        // The file goes on after the region: a range past the region's end must not reach into it.
        let region = try FileRegion(path: file.path, range: 0..<1000)
        try Self.withFileServer(Self.representation(region)) { port in
            let response = try RawHTTPConnection(port: port).request(
                "GET", "/s.ts", headers: [("Range", "bytes=1000-1999")])
            #expect(response.status == 416)
            #expect(response.header("Content-Range") == "bytes */1000")
        }
    }

    @Test func headAnnouncesTheLengthAndSendsNoBody() throws {
        let file = try TestFile(count: 70_000)
        defer { file.remove() }
        let region = try FileRegion(path: file.path, range: 1..<70_000)
        try Self.withFileServer(Self.representation(region)) { port in
            let client = try RawHTTPConnection(port: port)
            let head = try client.request("HEAD", "/s.ts")
            #expect(head.status == 200)
            #expect(head.header("Content-Length") == "69999")
            // A body after the HEAD answer would be read as the start of the next response.
            let get = try client.request("GET", "/s.ts", headers: [("Range", "bytes=0-2")])
            #expect(get.statusLine == "HTTP/1.1 206 Partial Content")
            #expect(get.body == Array(file.bytes[1..<4]))
            #expect(client.unconsumedByteCount == 0)
        }
    }

    @Test func matchingValidatorsAnswer304WithoutBody() throws {
        let file = try TestFile(count: 5000)
        defer { file.remove() }
        let region = try FileRegion(path: file.path)
        try Self.withFileServer(Self.representation(region)) { port in
            let client = try RawHTTPConnection(port: port)
            let etagMatch = try client.request("GET", "/s.ts", headers: [("If-None-Match", "\"f1\"")])
            #expect(etagMatch.status == 304)
            #expect(etagMatch.header("ETag") == "\"f1\"")
            let unmodified = try client.request(
                "GET", "/s.ts", headers: [("If-Modified-Since", "Sun, 06 Nov 1994 08:49:37 GMT")])
            #expect(unmodified.status == 304)
            let next = try client.request("GET", "/s.ts", headers: [("If-None-Match", "\"other\"")])
            #expect(next.status == 200)
            #expect(next.body == file.bytes)
            #expect(client.unconsumedByteCount == 0)
        }
    }

    @Test func largeRegionReachesASlowReaderIntactWhileOthersAreServed() throws {
        let size = 32 << 20
        let file = try TestFile(count: size + 3)
        defer { file.remove() }
        let representation = Self.representation(try FileRegion(path: file.path, range: 3..<(size + 3)))
        let small = StaticRepresentation(
            bytes: SharedBytes(string: "ok"), contentType: "text/plain", cacheControl: "no-cache", etag: "\"s\"",
            lastModifiedSeconds: nil, delivery: .byteRanges)
        try withTestServer({ head in
            .respond(head.path == "/small" ? small.response(to: head) : representation.response(to: head))
        }) { _, port in
            let slow = try RawHTTPConnection(port: port, receiveBufferSize: 16 * 1024)
            try slow.send("GET /big.ts HTTP/1.1\r\nHost: t\r\n\r\n")
            var received: [UInt8] = []
            received.reserveCapacity(size + 1024)
            var pieces = 0
            while received.count < 512 * 1024 {
                let piece = slow.receive(upTo: 16 * 1024)
                guard !piece.isEmpty else { throw TestFailure("the connection ended early") }
                received += piece
                pieces += 1
                if pieces % 8 == 0 { usleep(2_000) }
            }
            // The slow transfer holds no thread: another client is answered meanwhile.
            let other = try RawHTTPConnection(port: port).request("GET", "/small")
            #expect(other.body == Array("ok".utf8))
            while true {
                let piece = slow.receive(upTo: 256 * 1024)
                if piece.isEmpty { break }
                received += piece
                if let end = Self.headEnd(received), received.count >= end + size { break }
            }
            let end = try #require(Self.headEnd(received))
            let head = String(decoding: received[..<end], as: UTF8.self)
            #expect(head.hasPrefix("HTTP/1.1 200 OK"))
            #expect(head.contains("Content-Length: \(size)\r\n"))
            #expect(received.count == end + size)
            #expect(sameBytes(received[end...], file.bytes[3...]))
        }
    }

    @Test func fileMayGoAwayWhileItsResponseIsSent() throws {
        let size = 8 << 20
        let file = try TestFile(count: size)
        defer { file.remove() }
        let region = Mutex<FileRegion?>(try FileRegion(path: file.path))
        try withTestServer({ head in
            guard let region = region.withLock({ $0 }) else { return .respond(.text(404, "gone")) }
            return .respond(Self.representation(region).response(to: head))
        }) { _, port in
            let client = try RawHTTPConnection(port: port, receiveBufferSize: 16 * 1024)
            try client.send("GET /s.ts HTTP/1.1\r\nHost: t\r\n\r\n")
            let first = client.receive(upTo: 4096)
            #expect(!first.isEmpty)
            // The region is dropped and the file unlinked: the response has its own descriptor.
            region.withLock { $0 = nil }
            unlink(file.path)
            var received = first
            while true {
                let piece = client.receive(upTo: 256 * 1024)
                if piece.isEmpty { break }
                received += piece
                if let end = Self.headEnd(received), received.count >= end + size { break }
            }
            let end = try #require(Self.headEnd(received))
            #expect(received.count == end + size)
            #expect(sameBytes(received[end...], file.bytes[...]))
        }
    }

    @Test func fileShorterThanTheBodyIsAnswered500() throws {
        let file = try TestFile(count: 50_000)
        defer { file.remove() }
        // The caller's promise is broken: the region claims bytes the file does not have.
        let region = FileRegion(adopting: open(file.path, O_RDONLY | O_CLOEXEC), range: 0..<100_000)
        try Self.withFileServer(Self.representation(region)) { port in
            let client = try RawHTTPConnection(port: port, timeout: .seconds(5))
            #expect(try client.request("GET", "/s.ts").status == 500)
            // A range inside the file is still served.
            let inside = try client.request("GET", "/s.ts", headers: [("Range", "bytes=49990-49999")])
            #expect(inside.status == 206)
            #expect(inside.body == Array(file.bytes[49_990..<50_000]))
            #expect(try client.request("GET", "/s.ts", headers: [("Range", "bytes=49990-50000")]).status == 500)
        }
    }

    @Test func oneRegionServesManyConnectionsAtOnceFromTheirOwnOffsets() throws {
        let file = try TestFile(count: 4 << 20)
        defer { file.remove() }
        let region = try FileRegion(path: file.path, range: 1..<(4 << 20))
        let prepared = PreparedResponse(
            Self.representation(region).response(to: HTTPRequestHead(method: "GET", path: "/")))
        let representation = Self.representation(region)
        try withTestServer(
            threadCount: 4,
            { head in
                head.headers["Range"] == nil ? .respondPrepared(prepared) : .respond(representation.response(to: head))
            }
        ) { _, port in
            let failures = Atomic<Int>(0)
            DispatchQueue.concurrentPerform(iterations: 8) { index in
                do {
                    let client = try RawHTTPConnection(port: port)
                    for round in 0..<3 {
                        let start = (index * 397_000 + round * 91_000) % 3_000_000
                        let ranged = try client.request(
                            "GET", "/s.ts", headers: [("Range", "bytes=\(start)-\(start + 999_999)")])
                        let whole = try client.request("GET", "/s.ts")
                        if ranged.status != 206
                            || !sameBytes(ranged.body[...], file.bytes[(start + 1)..<(start + 1_000_001)])
                            || !sameBytes(whole.body[...], file.bytes[1...])
                        {
                            failures.add(1, ordering: .relaxed)
                        }
                    }
                } catch {
                    failures.add(1, ordering: .relaxed)
                }
            }
            #expect(failures.load(ordering: .relaxed) == 0)
        }
    }

    @Test func descriptorsDoNotLeakOver10000Requests() throws {
        let file = try TestFile(count: 64 * 1024)
        defer { file.remove() }
        try Self.serveTenThousandRequests(file)
        // The region, the representation and the prepared response are gone: so are their descriptors.
        #expect(file.openDescriptorCount == 0)
    }

    /// 10,000 requests of every kind on one keep-alive connection: 200, 206, HEAD, 304, and a prepared response.
    private static func serveTenThousandRequests(_ file: TestFile) throws {
        let region = try FileRegion(path: file.path, range: 100..<60_100)
        let representation = Self.representation(region)
        let prepared = PreparedResponse(representation.response(to: HTTPRequestHead(method: "GET", path: "/")))
        #expect(file.openDescriptorCount == 2)  // the region's and the prepared response's
        try withTestServer({ head in
            head.path == "/prepared" ? .respondPrepared(prepared) : .respond(representation.response(to: head))
        }) { _, port in
            let client = try RawHTTPConnection(port: port)
            var answered = 0
            for index in 0..<10_000 {
                let response: RawHTTPResponse
                switch index % 5 {
                case 0: response = try client.request("GET", "/s.ts")
                case 1:
                    response = try client.request("GET", "/s.ts", headers: [("Range", "bytes=\(index)-\(index + 9)")])
                case 2: response = try client.request("HEAD", "/s.ts")
                case 3: response = try client.request("GET", "/s.ts", headers: [("If-None-Match", "\"f1\"")])
                default: response = try client.request("GET", "/prepared")
                }
                let expected = [200, 206, 200, 304, 200][index % 5]
                if response.status == expected { answered += 1 }
            }
            #expect(answered == 10_000)
            // Each response's descriptor closes when libmicrohttpd has finished with the response.
            try waitUntil("the responses' descriptors to close") { file.openDescriptorCount == 2 }
        }
        #expect(file.openDescriptorCount == 2)
    }

    static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index + 4
        }
        return nil
    }
}

/// Whether two byte sequences are equal (memcmp: element-wise comparison of megabytes is slow in debug builds).
func sameBytes(_ first: ArraySlice<UInt8>, _ second: ArraySlice<UInt8>) -> Bool {
    guard first.count == second.count else { return false }
    guard !first.isEmpty else { return true }
    return first.withUnsafeBytes { a in
        second.withUnsafeBytes { b in memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0 }
    }
}

@Suite("File bodies: regions, sub-ranges and answers without a server", .offThePool)
struct FileRegionTests {
    @Test func regionOfAMissingFileOrBeyondTheFileIsRefused() throws {
        #expect(throws: FileRegionError.self) { try FileRegion(path: "/nonexistent/chunk.ts") }
        let file = try TestFile(count: 100)
        defer { file.remove() }
        #expect(throws: FileRegionError.self) { try FileRegion(path: file.path, range: 50..<101) }
        #expect(try FileRegion(path: file.path, range: 50..<100).count == 50)
        #expect(try FileRegion(path: file.path).range == 0..<100)
    }

    @Test func subrangeOfAFileBodyIsCountedFromTheRegionsStartAndClamped() throws {
        let file = try TestFile(count: 100)
        defer { file.remove() }
        let region = try FileRegion(path: file.path, range: 10..<90)
        let body = HTTPBody.file(region)
        #expect(body.count == 80)
        guard case .file(_, let inner) = body.subrange(5..<15),
            case .file(_, let nested) = body.subrange(5..<15)
                .subrange(2..<4)
        else {
            Issue.record("a sub-range of a file body is a file body")
            return
        }
        #expect(inner == 5..<15)
        #expect(nested == 7..<9)
        #expect(body.subrange(70..<200).count == 10)
        #expect(HTTPBody.file(region, 75..<200).count == 5)
    }

    @Test func fileBodyIsNeverGzipped() throws {
        let file = try TestFile(count: 100)
        defer { file.remove() }
        let document = StaticRepresentation(
            body: .file(try FileRegion(path: file.path)), contentType: "text/plain", cacheControl: "no-cache",
            etag: "\"d\"", lastModifiedSeconds: nil, delivery: .compressible)
        let asked = Atomic<Int>(0)
        let response = document.response(
            to: HTTPRequestHead(method: "GET", path: "/", headers: ["Accept-Encoding": "gzip"])
        ) {
            asked.add(1, ordering: .relaxed)
            return SharedBytes(string: "gz")
        }
        #expect(response.status == 200)
        #expect(response.headers["Content-Encoding"] == nil)
        #expect(response.body.isFile)
        #expect(response.body.count == 100)
        #expect(asked.load(ordering: .relaxed) == 0)
    }

    @Test func libmicrohttpdSendsFilesWithSendfileAndSharedDescriptors() {
        // What Debian 12's libmicrohttpd 0.9.75 reports; the server logs both at start.
        #expect(FileRegion.sendsWithSendfile)
        #expect(FileRegion.readsAtExplicitOffsets)
    }

    @Test func serverLogsFileSendingFeaturesAtStart() throws {
        let log = CapturedLog()
        try withTestServer(log: log, { _ in .respond(.text(200, "x")) }) { _, _ in }
        #expect(
            log.messages.contains { $0.contains("sendfile: true") && $0.contains("shared descriptors safe): true") })
    }
}
