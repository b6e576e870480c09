import Foundation
import Glibc
import HLSCrypto
import HLSPackaging
import HLSPlaylist
import HTTPPushInput
import LiveTimeline
import Logging
import OriginCore
import SharedBytes
import TestSource
import TestSupport
import Testing

/// AES-128 on the way out: segments stay plaintext in memory and in the store; every served MSN is encrypted under
/// its key period's key with IV = MSN, the same bytes in every snapshot and after a restart.
@Suite("AES-128 encryption with key rotation", .offThePool)
struct EncryptionTests {
    let directory: String
    let clock = ManualClock()
    var generators: [String: TestStreamGenerator] = [:]
    let renditions = ["360p", "180p"]

    init() throws {
        directory = try TemporaryDirectory.make("encryption").path
        for rendition in renditions {
            generators[rendition] = try TestStreamGenerator(
                profile: TestSourceProfile.named(rendition)!, segmentDuration: 2)
        }
    }

    /// A new origin process on the data directory (the previous one is dropped as after kill -9).
    func start(
        encryption: EncryptionConfiguration? = EncryptionConfiguration(rotateEvery: 3), dataDirectory: Bool = true
    ) throws -> Origin {
        var channel = ChannelConfiguration(name: "ch", renditions: renditions.map { .init(name: $0) })
        channel.window = .segments(4)
        channel.encryption = encryption
        return try Origin(
            configuration: OriginConfiguration(
                channels: [channel], ingest: IngestConfiguration(autoCreate: true),
                dataDirectory: dataDirectory ? directory : nil),
            clock: clock, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    /// Lets 2 s pass and pushes one segment to each rendition not in `dropping`, then ticks.
    mutating func slot(_ origin: Origin, dropping: [String] = []) throws {
        clock.advance(seconds: 2)
        for rendition in renditions {
            let bytes = SharedBytes(generators[rendition]!.nextSegment().bytes)
            guard !dropping.contains(rendition) else { continue }
            _ = try origin.ingest(channel: "ch", rendition: rendition, fileName: "s.ts", body: bytes)
        }
        origin.tick()
    }

    func channelOf(_ origin: Origin) throws -> Channel { try #require(origin.channel(named: "ch")) }

    /// The plaintext of `entry` decrypted from what the channel serves for it, under the key it serves.
    func decryptServed(_ channel: Channel, rendition: String, entry: WindowEntry) throws -> [UInt8]? {
        let plaintext = try #require(entry.bytes ?? entry.filler)
        let ciphertext = try #require(channel.ciphertext(rendition: rendition, msn: entry.msn, plaintext: plaintext))
        let period = try #require(channel.snapshot.encryption?.period(of: entry.msn))
        let key = try #require(channel.periodKey(period))
        return ciphertext.withUnsafeBytes { SegmentCipher.decrypt($0, key: key, msn: entry.msn) }
    }

    @Test("same MSN, same key, IV and ciphertext in every snapshot and after a restart; decrypts to the plaintext")
    mutating func deterministicAcrossSnapshotsAndRestarts() throws {
        var origin: Origin? = try start()
        for _ in 0..<6 { try slot(origin!) }
        var first = try channelOf(origin!)
        let entries = try #require(first.snapshot.renditions["360p"]?.entries)
        #expect(entries.count >= 4)
        var ciphertexts: [UInt64: [UInt8]] = [:]
        var keys: [UInt64: [UInt8]] = [:]
        for entry in entries {
            let plaintext = try #require(entry.bytes)
            let ciphertext = try #require(first.ciphertext(rendition: "360p", msn: entry.msn, plaintext: plaintext))
            #expect(ciphertext.count == (plaintext.count / 16 + 1) * 16, "PKCS7 pads to the next block")
            #expect(try decryptServed(first, rendition: "360p", entry: entry) == plaintext.array)
            ciphertexts[entry.msn] = ciphertext.array
            let period = try #require(first.snapshot.encryption?.period(of: entry.msn))
            #expect(period == entry.msn / 3, "rotateEvery 3 from MSN 0")
            let key = try #require(first.periodKey(period))
            keys[period] = key
            // The accepted segment was encrypted on the pushing thread: the second ask is the memoized object.
            #expect(first.ciphertext(rendition: "360p", msn: entry.msn, plaintext: plaintext) === ciphertext)
        }
        // Renditions share the period key; the same MSN of another rendition is other plaintext, other ciphertext.
        let other = try #require(first.snapshot.renditions["180p"]?.entry(msn: entries[0].msn)?.bytes)
        #expect(
            first.ciphertext(rendition: "180p", msn: entries[0].msn, plaintext: other)?.array
                != ciphertexts[entries[0].msn])
        // Later snapshots: same bytes.
        try slot(origin!)
        for entry in entries {
            guard let bytes = try channelOf(origin!).snapshot.renditions["360p"]?.entry(msn: entry.msn)?.bytes else {
                continue
            }
            #expect(
                try channelOf(origin!).ciphertext(rendition: "360p", msn: entry.msn, plaintext: bytes)?.array
                    == ciphertexts[entry.msn])
        }
        // After a restart (nothing flushed): same keys, same ciphertext for every restored MSN.
        origin = nil
        let restarted = try start()
        first = try channelOf(restarted)
        #expect(first.status().encryption?.state == "active")
        var compared = 0
        for entry in entries {
            guard let bytes = first.snapshot.renditions["360p"]?.entry(msn: entry.msn)?.bytes else { continue }
            #expect(
                first.ciphertext(rendition: "360p", msn: entry.msn, plaintext: bytes)?.array
                    == ciphertexts[entry.msn], "msn \(entry.msn) changed its ciphertext across the restart")
            compared += 1
        }
        #expect(compared >= 4)
        for (period, key) in keys { #expect(first.periodKey(period) == key, "period \(period) changed its key") }
    }

    @Test("a GAP filler is served encrypted like a segment and decrypts to the filler")
    mutating func fillerEncrypted() throws {
        let origin = try start(dataDirectory: false)
        for n in 0..<6 { try slot(origin, dropping: n >= 3 ? ["180p"] : []) }
        let channel = try channelOf(origin)
        let entries = try #require(channel.snapshot.renditions["180p"]?.entries)
        let gaps = entries.filter { $0.isGap }
        let gap = try #require(gaps.first { $0.filler != nil }, "the TS rendition repeats its keyframe in GAPs")
        #expect(try decryptServed(channel, rendition: "180p", entry: gap) == gap.filler?.array)
    }

    @Test("turned on and off mid-stream: only MSNs not yet published change; periods are never reused")
    mutating func onAndOffMidStream() throws {
        let origin = try start(encryption: nil, dataDirectory: true)
        for _ in 0..<3 { try slot(origin) }
        let channel = try channelOf(origin)
        #expect(channel.snapshot.encryption == nil)
        #expect(channel.status().encryption == nil)
        let clearEdge = try #require(channel.snapshot.renditions["360p"]?.entries.last)
        try channel.changeEncryption(EncryptionConfiguration(rotateEvery: 2))
        let on = try #require(channel.snapshot.encryption)
        #expect(on.period(of: clearEdge.msn) == nil, "a listed segment keeps its (absent) key")
        #expect(on.period(of: clearEdge.msn + 1) == 0)
        #expect(channel.periodKey(0) == nil, "no published MSN uses period 0 yet")
        #expect(channel.ciphertext(rendition: "360p", msn: clearEdge.msn, plaintext: clearEdge.bytes!) == nil)
        try slot(origin)
        try slot(origin)
        try slot(origin)
        #expect(channel.periodKey(0) != nil)
        #expect(channel.periodKey(1) != nil)
        #expect(channel.status().encryption?.state == "active")
        #expect(channel.status().encryption?.rotateEvery == 2)
        #expect(channel.status().encryption?.since == clearEdge.msn + 1)
        let encryptedEdge = try #require(channel.snapshot.renditions["360p"]?.entries.last)
        try channel.changeEncryption(nil)
        try slot(origin)
        let off = try #require(channel.snapshot.encryption)
        #expect(off.period(of: encryptedEdge.msn) != nil, "listed encrypted segments stay encrypted")
        let clearAgain = try #require(channel.snapshot.renditions["360p"]?.entries.last)
        #expect(clearAgain.msn == encryptedEdge.msn + 1)
        #expect(channel.ciphertext(rendition: "360p", msn: clearAgain.msn, plaintext: clearAgain.bytes!) == nil)
        #expect(channel.status().encryption?.state == "clear")
        // On again: new periods above every period used before.
        try channel.changeEncryption(EncryptionConfiguration(rotateEvery: 2))
        try slot(origin)
        let again = try #require(channel.snapshot.encryption)
        let newest = try #require(channel.snapshot.renditions["360p"]?.entries.last)
        let highestBefore = try #require(off.period(of: encryptedEdge.msn))
        #expect(try #require(again.period(of: newest.msn)) > highestBefore)
        // The schedule is durable: the key file holds what is in force.
        let file = try #require(FileManager.default.contents(atPath: directory + "/keys/ch.json"))
        let object = try #require(try JSONSerialization.jsonObject(with: file) as? [String: Any])
        let spans = try #require((object["schedule"] as? [String: Any])?["spans"] as? [[String: Any]])
        #expect(spans.count == 3)
        var info = stat()
        #expect(stat(directory + "/keys/ch.json", &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
    }

    @Test("a refused change (key file not writable) keeps the previous schedule")
    mutating func refusedChangeKeepsSchedule() throws {
        let origin = try start(encryption: nil, dataDirectory: true)
        for _ in 0..<2 { try slot(origin) }
        let channel = try channelOf(origin)
        // A directory where the key file's temporary file must go: the write fails.
        try FileManager.default.createDirectory(
            atPath: directory + "/keys/ch.json.tmp", withIntermediateDirectories: true)
        #expect(throws: EncryptionChangeError.self) {
            try channel.changeEncryption(EncryptionConfiguration(rotateEvery: 2))
        }
        #expect(channel.snapshot.encryption == nil)
        try slot(origin)
        let newest = try #require(channel.snapshot.renditions["360p"]?.entries.last)
        #expect(channel.ciphertext(rendition: "360p", msn: newest.msn, plaintext: newest.bytes!) == nil)
    }

    @Test("a corrupt key file is moved aside, never overwritten, and the channel re-keys: a new secret, loudly")
    mutating func corruptKeyFileRekeys() throws {
        var origin: Origin? = try start()
        for _ in 0..<5 { try slot(origin!) }
        let before = try channelOf(origin!)
        let listed = try #require(before.snapshot.renditions["360p"]?.entries.last)
        let oldPeriod = try #require(before.snapshot.encryption?.period(of: listed.msn))
        let oldKey = try #require(before.periodKey(oldPeriod))
        origin = nil
        // Torn: the first bytes of a file.
        #expect(
            FileManager.default.createFile(
                atPath: directory + "/keys/ch.json", contents: Data("{\"version\":1,\"se".utf8)))
        let restarted = try start()
        let channel = try channelOf(restarted)
        let status = channel.status()
        #expect(status.encryption?.state == "rekeyed")
        #expect(status.journal?.contains("key file corrupt") == true)
        let aside = try FileManager.default.contentsOfDirectory(atPath: directory + "/keys").filter {
            $0.hasPrefix("ch.json.corrupt-")
        }
        #expect(aside.count == 1, "the corrupt file is kept aside")
        #expect(
            aside.first.flatMap { FileManager.default.contents(atPath: directory + "/keys/" + $0) }
                == Data("{\"version\":1,\"se".utf8))
        let restored = try #require(channel.snapshot.renditions["360p"]?.entry(msn: listed.msn))
        let period = try #require(channel.snapshot.encryption?.period(of: listed.msn), "stored MSNs stay encrypted")
        let newKey = try #require(channel.periodKey(period))
        #expect(newKey != oldKey)
        #expect(try decryptServed(channel, rendition: "360p", entry: restored) == restored.bytes?.array)
        // New MSNs get periods above every stored one, and the new secret is durable.
        var restartedOrigin = restarted
        try slot(restartedOrigin)
        let newest = try #require(channel.snapshot.renditions["360p"]?.entries.last)
        #expect(try #require(channel.snapshot.encryption?.period(of: newest.msn)) > period)
        restartedOrigin = try start()
        #expect(try self.channelOf(restartedOrigin).periodKey(period) == newKey)
        #expect(try self.channelOf(restartedOrigin).status().encryption?.state == "active")
    }

    @Test("a key file that cannot be read stops the channel, with the reason, and is never replaced")
    mutating func unreadableKeyFileIsNeverReplaced() throws {
        var origin: Origin? = try start()
        for _ in 0..<5 { try slot(origin!) }
        let before = try channelOf(origin!)
        let listed = try #require(before.snapshot.renditions["360p"]?.entries.last)
        let period = try #require(before.snapshot.encryption?.period(of: listed.msn))
        let key = try #require(before.periodKey(period))
        origin = nil
        // A read error (EISDIR here; EIO, EACCES in the field) on an intact secret.
        let path = directory + "/keys/ch.json"
        let intact = try #require(FileManager.default.contents(atPath: path))
        try FileManager.default.moveItem(atPath: path, toPath: directory + "/kept.json")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        do {
            let started = try start()
            Issue.record("the channel started without its key secret: \(String(describing: started.channel(named: "ch")?.status().journal))")
        } catch {
            #expect("\(error)".contains("key"), "the reason names the key file: \(error)")
            #expect("\(error)".contains("ch.json"), "the reason names the key file: \(error)")
        }
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue)
        // Once it reads again, the channel continues with its secret.
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.moveItem(atPath: directory + "/kept.json", toPath: path)
        let restarted = try start()
        #expect(try channelOf(restarted).periodKey(period) == key)
        #expect(FileManager.default.contents(atPath: path) == intact)
    }

    @Test("the ciphertext cache stays under its byte bound and drops MSNs that left retention")
    mutating func ciphertextCacheBounded() throws {
        var configuration = ChannelConfiguration(name: "small", renditions: [.init(name: "360p")])
        configuration.window = .segments(3)
        configuration.encryption = EncryptionConfiguration(rotateEvery: 4)
        let limit = 200_000
        let channel = Channel(
            configuration: configuration, clock: clock,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), ciphertextCacheBytes: limit)
        var sizes: [Int] = []
        for _ in 0..<20 {
            clock.advance(seconds: 2)
            let bytes = SharedBytes(generators["360p"]!.nextSegment().bytes)
            sizes.append(bytes.count)
            _ = try channel.acceptSegment(rendition: "360p", bytes: bytes)
            channel.tick()
            #expect(channel.ciphertextCacheUsage.bytes <= limit)
        }
        let snapshot = channel.snapshot.renditions["360p"]!
        // Retained + listed only (the window's floor pruned what left), and at least the newest one.
        #expect(channel.ciphertextCacheUsage.count <= snapshot.entries.count)
        #expect(channel.ciphertextCacheUsage.count >= 1)
        // An evicted or pruned MSN is recomputed with the same bytes.
        let entry = snapshot.entries[0]
        let again = try #require(channel.ciphertext(rendition: "360p", msn: entry.msn, plaintext: entry.bytes!))
        let key = try #require(channel.periodKey(entry.msn / 4))
        #expect(again.withUnsafeBytes { SegmentCipher.decrypt($0, key: key, msn: entry.msn) } == entry.bytes?.array)
    }

    @Test("BANDWIDTH and AVERAGE-BANDWIDTH count each encrypted segment's PKCS7 padding")
    mutating func bandwidthCountsPadding() throws {
        var configuration = ChannelConfiguration(name: "bw", renditions: [.init(name: "360p")])
        configuration.window = .segments(20)
        configuration.encryption = EncryptionConfiguration(rotateEvery: 2)
        let channel = Channel(
            configuration: configuration, clock: clock,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        for _ in 0..<6 {
            clock.advance(seconds: 2)
            _ = try channel.acceptSegment(
                rendition: "360p", bytes: SharedBytes(generators["360p"]!.nextSegment().bytes))
            channel.tick()
        }
        let entries = try #require(channel.snapshot.renditions["360p"]?.entries)
        #expect(entries.count == 6)
        let served = entries.map { ($0.bytes!.count / 16 + 1) * 16 }
        let peak = zip(entries, served).map { entry, bytes in
            Int(Int64(bytes) * 8 * 1000 / entry.durationMilliseconds)
        }.max()
        let milliseconds = entries.reduce(0) { $0 + $1.durationMilliseconds }
        let status = try #require(channel.status().renditions.first)
        #expect(status.peakBitrate == peak)
        #expect(status.averageBitrate == Int(Int64(served.reduce(0, +)) * 8 * 1000 / milliseconds))
    }

    @Test(
        "EXT-X-KEY: first listed, at every period change, never gone while a segment it applies to is listed")
    mutating func keyPlacementInLivePlaylists() throws {
        let origin = try start(dataDirectory: false)
        var previous: MediaPlaylist?
        for _ in 0..<9 {
            try slot(origin)
            let text = try #require(
                try channelOf(origin).snapshot.renditions["360p"]?.playlist.map {
                    String(decoding: $0.array, as: UTF8.self)
                })
            let playlist = try MediaPlaylist.parse(text)
            // HLS rule 33 as the playlist model checks it: keys well formed, none dropped while it applies.
            #expect(playlist.validateDefinesAndKeys(importable: []).isEmpty)
            if let previous { #expect(playlist.validateKeyContinuity(after: previous).isEmpty) }
            previous = playlist
            let lines = text.split(separator: "\n")
            // The first KEY comes before the first segment URI.
            let firstKey = try #require(lines.firstIndex { $0.hasPrefix("#EXT-X-KEY:") })
            let firstURI = try #require(lines.firstIndex { !$0.hasPrefix("#") })
            #expect(firstKey < firstURI)
            var msn = playlist.mediaSequence
            var stated: String?
            for line in lines {
                if line.hasPrefix("#EXT-X-KEY:") { stated = String(line) }
                guard !line.hasPrefix("#") else { continue }
                #expect(stated == "#EXT-X-KEY:METHOD=AES-128,URI=\"../key-\(msn / 3).key\"", "msn \(msn)")
                msn += 1
            }
            let keyLines = lines.filter { $0.hasPrefix("#EXT-X-KEY:") }.count
            let periods = Set((playlist.mediaSequence..<msn).map { $0 / 3 }).count
            #expect(keyLines == periods, "one KEY per period listed, no more")
        }
    }

    @Test(
        "EXT-X-SESSION-KEY: the key of the newest published MSN's period, relative to the multivariant")
    mutating func sessionKey() throws {
        let origin = try start(dataDirectory: false)
        for _ in 0..<4 { try slot(origin) }
        let channel = try channelOf(origin)
        let text = try #require(channel.snapshot.multivariantPlaylist.map { String(decoding: $0.array, as: UTF8.self) })
        let period = try #require(channel.snapshot.encryption?.currentPeriod)
        #expect(period == 1)
        #expect(text.contains("#EXT-X-SESSION-KEY:METHOD=AES-128,URI=\"key-\(period).key\"\n"))
        // Rule 33: the SESSION-KEY is one of the media playlists' keys (resolved against /live/ch/ and /live/ch/r/).
        var mediaKeys: [EncryptionKey] = []
        for rendition in renditions {
            let media = try MediaPlaylist.parse(
                String(decoding: try #require(channel.snapshot.renditions[rendition]?.playlist).array, as: UTF8.self))
            for case .aes128(let uri, let iv) in media.segments.compactMap(\.key) {
                mediaKeys.append(.aes128(uri: uri.replacing("../", with: ""), iv: iv))
            }
        }
        #expect(try MultivariantPlaylist.parse(text).validateSessionKeys(against: mediaKeys).isEmpty)
    }
}
