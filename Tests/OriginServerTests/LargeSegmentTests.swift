import OriginCore
import SharedBytes
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Segments of `SegmentStorage.sharedMemoryThreshold` bytes or more live in a shared-memory file and are sent with
/// sendfile from a descriptor of their own: every kind of answer must carry the same bytes as the heap path.
@Suite("Large segments: shared memory and sendfile")
struct LargeSegmentTests {
    /// An MPEG-TS segment of the test stream padded with null packets (PID 0x1FFF, ignored by every reader) to
    /// just over 300 KiB.
    static func padded(_ segment: [UInt8]) -> [UInt8] {
        let null: [UInt8] = [0x47, 0x1F, 0xFF, 0x10] + [UInt8](repeating: 0xFF, count: 184)
        var bytes = segment
        while bytes.count < 300 * 1024 { bytes += null }
        return bytes
    }

    @Test func aLargeSegmentIsServedFromSharedMemoryWithEveryKindOfAnswer() throws {
        let stack = try OriginTestStack(renditions: ["360p"])
        let openBefore = SharedMemoryFile.openCount
        let large = Self.padded(stack.nextSegment("360p"))
        #expect(large.count >= SegmentStorage.sharedMemoryThreshold)
        stack.clock.advance(seconds: 2)
        let pushed = try stack.push("360p", large, file: "big0.ts")
        #expect(pushed.status == 201, "\(pushed.text)")
        stack.origin.tick()
        let entry = try #require(stack.origin.channel(named: OriginTestStack.channel)?.snapshot.renditions["360p"]?.entry(msn: 0))
        #expect(entry.bytes?.isInSharedMemory == true)
        #expect(SharedMemoryFile.openCount >= openBefore + 1)

        let connection = try stack.connect()
        let path = "/live/ch/360p/0.ts"
        for _ in 0..<3 {
            let whole = try connection.request("GET", path)
            #expect(whole.status == 200)
            #expect(whole.body == large)
            #expect(whole.header("Content-Length") == "\(large.count)")
            #expect(whole.header("Cache-Control") == "public, max-age=31536000, immutable")
        }
        let head = try connection.request("HEAD", path)
        #expect(head.status == 200 && head.body.isEmpty && head.header("Content-Length") == "\(large.count)")
        let range = try connection.request("GET", path, headers: [("Range", "bytes=1000-200999")])
        #expect(range.status == 206)
        #expect(range.body == Array(large[1000...200_999]))
        #expect(range.header("Content-Range") == "bytes 1000-200999/\(large.count)")
        let suffix = try connection.request("GET", path, headers: [("Range", "bytes=-188")])
        #expect(suffix.status == 206 && suffix.body == Array(large.suffix(188)))
        let etag = try #require(head.header("ETag"))
        let revalidated = try connection.request("GET", path, headers: [("If-None-Match", etag)])
        #expect(revalidated.status == 304 && revalidated.body.isEmpty)
        // The connection still works after all of these.
        let again = try connection.request("GET", path)
        #expect(again.body == large)
    }

    @Test func sharedMemoryBytesReadBackAndReleaseTheirFile() throws {
        let source = (0..<(512 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        var descriptor: Int32 = -1
        var target: String?
        do {
            let bytes = try #require(source.withUnsafeBytes { SharedBytes.inSharedMemory(copying: $0) })
            descriptor = bytes.fileDescriptor
            #expect(bytes.isInSharedMemory && descriptor >= 0)
            #expect(bytes.count == source.count)
            #expect(bytes.array == source)
            // The descriptor names an unlinked file of its own (the name carries a sequence number).
            target = Self.linkTarget(descriptor)
            #expect(target?.contains("hlsorigin-") == true && target?.hasSuffix("(deleted)") == true, "\(target ?? "-")")
            // SegmentStorage keeps small segments on the heap and moves large ones.
            #expect(!SegmentStorage.keep(SharedBytes(source.prefix(1000))).isInSharedMemory)
            #expect(SegmentStorage.keep(SharedBytes(source)).isInSharedMemory)
        }
        // Released with the last reference: the descriptor is closed (or already reused for something else).
        #expect(target != nil && Self.linkTarget(descriptor) != target)
        #expect(SharedMemoryFile.limit > 0)
    }

    static func linkTarget(_ descriptor: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: 512)
        let count = readlink("/proc/self/fd/\(descriptor)", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
