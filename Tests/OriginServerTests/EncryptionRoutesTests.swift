import Foundation
import HLSCrypto
import HLSPackaging
import HLSPlaylist
import LiveTimeline
import MediaProbe
import OriginCore
import TestSupport
import Testing

@testable import OriginServer

/// The key route, encrypted segments, fillers and stored segments, I-frame resources, the admin key endpoint and
/// the `/vod` refusal of an encrypted channel, over HTTP.
@Suite("Encryption routes: keys, ciphertext, I-frame resources, admin keys, /vod refusal", .offThePool)
struct EncryptionRoutesTests {
    static func stack(
        rotateEvery: Int = 2, keyURITemplate: String? = nil, dataDirectory: String? = nil, window: Int = 6
    ) throws -> OriginTestStack {
        try OriginTestStack(renditions: ["360p"]) { configuration in
            configuration.origin.channels[0].window = .segments(window)
            configuration.origin.channels[0].encryption = EncryptionConfiguration(
                rotateEvery: rotateEvery, keyURITemplate: keyURITemplate)
            configuration.origin.dataDirectory = dataDirectory
            if dataDirectory != nil { configuration.origin.channels[0].dvr = DVRConfiguration(hours: 1) }
        }
    }

    func channel(_ stack: OriginTestStack) throws -> Channel { try #require(stack.origin.channel(named: "ch")) }

    /// The key of `period` as served.
    func key(_ stack: OriginTestStack, _ period: UInt64) throws -> [UInt8] {
        let response = try stack.get("/live/ch/key-\(period).key")
        try #require(response.status == 200, "key-\(period).key answered \(response.status): \(response.text)")
        return response.body
    }

    @Test("key-{period}.key: 16 bytes, octet-stream, never cached; the period's derived key")
    func keyRoute() throws {
        let stack = try Self.stack()
        try stack.slots(5)
        let response = try stack.get("/live/ch/key-1.key")
        #expect(response.status == 200)
        #expect(response.body.count == 16)
        #expect(response.header("Content-Type") == "application/octet-stream")
        #expect(response.header("Cache-Control") == "private, no-store")
        #expect(response.body == (try channel(stack).periodKey(1)))
        #expect(try key(stack, 0) != key(stack, 1), "every period has its own key")
        #expect(try stack.request("HEAD", "/live/ch/key-1.key").status == 200)
    }

    @Test("key route refusals: non-canonical names, future periods, clear channels, external key URIs")
    func keyRefusals() throws {
        let stack = try Self.stack()
        try stack.slots(5)
        for name in ["key-01.key", "key-+1.key", "key-1.bin", "key-.key", "key-18446744073709551616.key"] {
            let response = try stack.get("/live/ch/\(name)")
            #expect(response.status == 404, "\(name) answered \(response.status)")
        }
        let future = try stack.get("/live/ch/key-35.key")
        #expect(future.status == 404)
        #expect(future.text == "key period 35 is not yet in use\n")
        let clear = try OriginTestStack(renditions: ["360p"])
        try clear.slots(2)
        let none = try clear.get("/live/ch/key-0.key")
        #expect(none.status == 404)
        #expect(none.text == "channel 'ch' is not encrypted: it has no keys\n")
        #expect(try clear.get("/live/ch/360p/iframe-1.ts").status == 404, "I-frame resources: encrypted channels only")
        let external = try Self.stack(keyURITemplate: "https://keys.example.com/{channel}/{period}.key")
        try external.slots(2)
        let elsewhere = try external.get("/live/ch/key-0.key")
        #expect(elsewhere.status == 404)
        #expect(elsewhere.text.contains("served by its keyURI"))
        // The admin endpoint still gives the key, for that external key server.
        let admin = try external.get("/admin/channels/ch/keys/0")
        #expect(admin.status == 200)
        let hex = try #require(admin.json["key"] as? String)
        #expect(hex == (try channel(external).periodKey(0)!).map { String(format: "%02x", $0) }.joined())
    }

    @Test("a refused key request changes nothing")
    func refusedKeyChangesNothing() throws {
        let stack = try Self.stack()
        try stack.slots(3)
        let channel = try channel(stack)
        let version = channel.snapshot.version
        let usage = channel.ciphertextCacheUsage
        let status = channel.status()
        for name in ["key-99.key", "key-007.key"] { #expect(try stack.get("/live/ch/\(name)").status == 404) }
        #expect(channel.snapshot.version == version)
        #expect(channel.ciphertextCacheUsage == usage)
        #expect(channel.status() == status)
        #expect(stack.handler.live.prepared.segmentUsage.count == 0)
    }

    @Test("segments are served as ciphertext that decrypts, with the period's key and IV = MSN, to what was pushed")
    func segmentsAreCiphertext() throws {
        let stack = try Self.stack()
        try stack.slots(5)
        for msn in 0..<5 {
            let first = try stack.get("/live/ch/360p/\(msn).ts")
            #expect(first.status == 200)
            #expect(first.header("Content-Type") == "video/mp2t")
            let pushed = try #require(stack.pushed["360p"]?[msn])
            #expect(first.body.count == (pushed.count / 16 + 1) * 16)
            #expect(first.body != pushed)
            let key = try key(stack, UInt64(msn / 2))
            #expect(
                first.body.withUnsafeBytes { SegmentCipher.decrypt($0, key: key, msn: UInt64(msn)) } == pushed,
                "decrypts to the pushed bytes")
            // The prepared answer and a ranged one serve the same ciphertext.
            #expect(try stack.get("/live/ch/360p/\(msn).ts").body == first.body)
            let ranged = try stack.get("/live/ch/360p/\(msn).ts", headers: [("Range", "bytes=16-47")])
            #expect(ranged.status == 206)
            #expect(ranged.body == Array(first.body[16..<48]))
        }
        #expect(try stack.get("/live/ch/360p/007.ts").status == 404)
        // The status tells the schedule.
        let status = try stack.get("/admin/channels/ch").json["encryption"] as? [String: Any]
        #expect(status?["rotateEvery"] as? Int == 2)
        #expect(status?["currentPeriod"] as? Int == 2)
        #expect(status?["since"] as? Int == 0)
        #expect(status?["state"] as? String == "active")
    }

    @Test("stored segments are read and encrypted (not sent from the file), the same bytes every time")
    func storedSegmentsAreCiphertext() throws {
        let directory = try TemporaryDirectory.make("encrypted-store").path
        let stack = try Self.stack(dataDirectory: directory, window: 3)
        try stack.slots(30)
        let pushed = try #require(stack.pushed["360p"]?[1])
        let first = try stack.get("/live/ch/360p/1.ts")
        #expect(first.status == 200)
        let key = try key(stack, 0)
        #expect(
            first.body.withUnsafeBytes { SegmentCipher.decrypt($0, key: key, msn: 1) } == pushed,
            "decrypts to the pushed bytes")
        // Checked before: a clear channel would answer from the file now; this one still encrypts.
        #expect(try stack.get("/live/ch/360p/1.ts").body == first.body)
    }

    @Test("iframe-{msn}.{ext}: the first keyframe's bytes encrypted on their own with the segment's key and IV")
    func iFrameResource() throws {
        let stack = try Self.stack()
        try stack.slots(3)
        let pushed = try #require(stack.pushed["360p"]?[2])
        let end = try #require(
            try MediaProbe.probeSegment(pushed).iFrameRangeEnd, "test source segments start with an IDR")
        let response = try stack.get("/live/ch/360p/iframe-2.ts")
        #expect(response.status == 200)
        let key = try key(stack, 1)
        #expect(response.body.withUnsafeBytes { SegmentCipher.decrypt($0, key: key, msn: 2) } == Array(pushed[0..<end]))
        // Turned clear: a clear MSN's I-frame resource is its plaintext range.
        try channel(stack).changeEncryption(nil)
        try stack.slot()
        let clear = try #require(stack.pushed["360p"]?[3])
        let clearEnd = try #require(try MediaProbe.probeSegment(clear).iFrameRangeEnd)
        let plain = try stack.get("/live/ch/360p/iframe-3.ts")
        #expect(plain.status == 200)
        #expect(plain.body == Array(clear[0..<clearEnd]), "served clear")
        #expect(try stack.get("/live/ch/360p/iframe-02.ts").status == 404)
        #expect(try stack.get("/live/ch/360p/iframe-2.mp4").status == 404)
    }

    @Test("/vod of an encrypted channel's recording is refused with the reason")
    func protectedRecordingRefused() throws {
        let directory = try TemporaryDirectory.make("encrypted-vod").path
        let stack = try Self.stack(dataDirectory: directory, window: 3)
        try stack.slots(2)
        let playlist = try MediaPlaylist.parse(try stack.playlistText("360p"))
        let first = try #require(playlist.segments.first?.programDateTime).millisecondsSince1970
        let start = ProgramDateTime(millisecondsSince1970: first).formatted
        let end = ProgramDateTime(millisecondsSince1970: first + 4000).formatted
        let created = try stack.request(
            "POST", "/admin/channels/ch/recordings",
            body: Array("{\"id\":\"clip\",\"start\":\"\(start)\",\"end\":\"\(end)\"}".utf8))
        #expect(created.status == 201, "\(created.text)")
        try stack.slots(30)
        for path in ["index.m3u8", "360p/index.m3u8", "360p/1.ts"] {
            let response = try stack.get("/vod/clip/\(path)")
            #expect(response.status == 403, "\(path)")
            #expect(response.text == "recordings of protected channels are not served yet\n")
        }
    }

    @Test("an unreadable key file at start re-keys loudly: status, metric, and the same URLs under new keys")
    func rekeyIsLoud() throws {
        let directory = try TemporaryDirectory.make("encrypted-rekey").path
        var pushed: [UInt8] = []
        var oldKey: [UInt8] = []
        do {
            let stack = try Self.stack(dataDirectory: directory)
            try stack.slots(3)
            pushed = try #require(stack.pushed["360p"]?[2])
            oldKey = try key(stack, 1)
            let metrics = try stack.get("/metrics").text
            #expect(metrics.contains("hlsorigin_encryption_rekeyed_total{channel=\"ch\"} 0\n"))
        }
        #expect(FileManager.default.createFile(atPath: directory + "/keys/ch.json", contents: Data("{\"vers".utf8)))
        let restarted = try Self.stack(dataDirectory: directory)
        let status = try restarted.get("/admin/channels/ch").json["encryption"] as? [String: Any]
        #expect(status?["state"] as? String == "rekeyed")
        #expect(try restarted.get("/metrics").text.contains("hlsorigin_encryption_rekeyed_total{channel=\"ch\"} 1\n"))
        let newKey = try key(restarted, 1)
        #expect(newKey != oldKey)
        let segment = try restarted.get("/live/ch/360p/2.ts")
        #expect(segment.status == 200)
        let decrypted = segment.body.withUnsafeBytes { SegmentCipher.decrypt($0, key: newKey, msn: 2) }
        #expect(decrypted == pushed, "the stored segment is served under the new key")
    }

    /// Every segment URI of `text` has the KEY of its period (`rotateEvery` 2 from MSN 0) in force above it.
    static func expectKeysInForce(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        var inForce: String?
        for line in text.split(separator: "\n") {
            if line.hasPrefix("#EXT-X-KEY:") { inForce = String(line) }
            guard !line.hasPrefix("#"), let msn = UInt64(line.prefix { $0 != "." }) else { continue }
            #expect(
                inForce == "#EXT-X-KEY:METHOD=AES-128,URI=\"../key-\(msn / 2).key\"", "msn \(msn)",
                sourceLocation: sourceLocation)
        }
    }

    @Test(
        "DVR playlists carry the same keys as live; the DVR multivariant states no SESSION-KEY")
    func dvrPlaylistsCarryKeys() throws {
        let directory = try TemporaryDirectory.make("encrypted-dvr").path
        let stack = try Self.stack(dataDirectory: directory, window: 3)
        try stack.slots(12)
        let live = try stack.playlistText("360p")
        Self.expectKeysInForce(live)
        let first = try #require(try MediaPlaylist.parse(live).segments.first?.programDateTime)
        let start = ProgramDateTime(millisecondsSince1970: first.millisecondsSince1970 - 14_000).formatted
        let dvr = try stack.get("/live/ch/360p/index.m3u8?start=\(start)")
        #expect(dvr.status == 200)
        #expect(try MediaPlaylist.parse(dvr.text).segments.count > 8)
        Self.expectKeysInForce(dvr.text)
        #expect(try stack.get("/live/ch/index.m3u8").text.contains("#EXT-X-SESSION-KEY:"))
        let multivariant = try stack.get("/live/ch/index.m3u8?start=\(start)")
        #expect(multivariant.status == 200)
        #expect(!multivariant.text.contains("SESSION-KEY"))
    }
}
