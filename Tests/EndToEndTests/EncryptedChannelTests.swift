import Foundation
import Glibc
import TestSupport
import Testing

extension EndToEnd {
    /// AES-128 with key rotation at the origin, read by real players: ffmpeg (`-c copy`, then every frame decoded),
    /// streamlink and GStreamer; the same ciphertext and keys after a SIGKILL and restart; GAP fillers and I-frame
    /// resources that decrypt (openssl, IV = MSN) to decodable media.
    @Suite("End to end: encrypted channels", .tags(.endToEnd))
    struct EncryptedChannelTests {
        static func configuration(encryptedChannel: String) -> String {
            """
            logLevel: info
            ingest:
              autoCreate: true
              defaults:
                segmentDuration: 2
                window: { segments: 10 }
            channels:
              - name: \(encryptedChannel)
                segmentDuration: 2
                window: { segments: 10 }
                encryption: { method: AES-128, rotateEvery: 2 }
            """
        }

        /// Reloads a channel's playlists like a player, applies the rules, and fetches every new segment and its
        /// key once: decrypts it with openssl and keeps the ciphertext and key by URL for the restart check.
        final class EncryptedWatch {
            let client: HTTPClient
            let channel: String
            let directory: URL
            let rules = ProtectedPlaylistRules()
            /// Segment path -> ciphertext as first fetched.
            var segments: [String: [UInt8]] = [:]
            /// Key path -> the 16 bytes as first fetched.
            var keys: [String: [UInt8]] = [:]
            /// Segments whose decryption did not start with an MPEG-TS sync byte or an fMP4 box.
            var undecryptable: [String] = []
            var lastMedia: MediaPlaylistText?

            init(client: HTTPClient, channel: String, directory: URL) {
                self.client = client
                self.channel = channel
                self.directory = directory
            }

            func poll() async throws {
                let multivariantPath = "/live/\(channel)/index.m3u8"
                let multivariant = try await client.get(multivariantPath)
                if multivariant.status == 200 { rules.multivariant(path: multivariantPath, text: multivariant.text) }
                let mediaPath = "/live/\(channel)/hi/index.m3u8"
                let answer = try await client.get(mediaPath)
                guard answer.status == 200 else { return }
                rules.media(path: mediaPath, text: answer.text)
                let media = try MediaPlaylistText(answer.text)
                lastMedia = media
                for entry in media.entries where !entry.gap {
                    let path = PlaylistURL.resolve(entry.uri, against: mediaPath)
                    guard segments[path] == nil else { continue }
                    guard let keyURI = entry.keyURI else {
                        undecryptable.append("\(path): no EXT-X-KEY in force")
                        continue
                    }
                    let keyPath = PlaylistURL.resolve(keyURI, against: mediaPath)
                    if keys[keyPath] == nil {
                        keys[keyPath] = try await ProtectedChannels.fetch(client: client, keyPath)
                    }
                    let ciphertext = try await ProtectedChannels.fetch(client: client, path)
                    segments[path] = ciphertext
                    let plaintext = try await SegmentDecryption.decrypt(
                        ciphertext, key: keys[keyPath]!, msn: entry.msn, in: directory)
                    let fragmented = plaintext.count > 8 && plaintext[4..<8].allSatisfy { $0 >= 0x61 && $0 <= 0x7A }
                    if plaintext.first != 0x47 && !fragmented {
                        undecryptable.append("\(path) decrypted does not start with 0x47 or an fMP4 box")
                    }
                }
            }
        }

        @Test(
            "MPEG-TS, rotateEvery 2: ffmpeg, streamlink and GStreamer play it; same ciphertext and keys after SIGKILL")
        func transportStreamPlaysAndSurvivesRestart() async throws {
            let channel = "secure"
            let port = try OriginProcess.freePort()
            let origin = try await OriginProcess(
                configuration: Self.configuration(encryptedChannel: channel), label: "encrypted", port: port)
            var restarted: OriginProcess?
            defer {
                origin.kill()
                restarted?.kill()
            }
            let client = HTTPClient(port: port)
            let encoder = try ProtectedChannels.startPush(
                port: port, channel: channel, container: .transportStream, directory: origin.directory,
                label: "ffmpeg-push")
            defer { encoder.signal(SIGKILL) }
            let mediaPath = "/live/\(channel)/hi/index.m3u8"
            _ = try await ProtectedChannels.awaitPlaylist(client: client, path: mediaPath, entries: 3)
            let multivariantURL = "\(origin.baseURL)/live/\(channel)/index.m3u8"

            // Three real players at once, 20 s each, while the test reloads the playlists like a fourth.
            let recording = origin.directory.appendingPathComponent("ffmpeg-read.ts")
            let recorder = try FFmpeg.startRecorder(
                url: multivariantURL, seconds: 20, output: recording, directory: origin.directory,
                label: "ffmpeg-read", logLevel: "warning")
            let streamlinkOutput = origin.directory.appendingPathComponent("streamlink.ts")
            let streamlink = try ChildProcess(
                executable: try await StreamlinkTests.streamlink(),
                arguments: [
                    "--loglevel", "info", "--hls-live-edge", "3", "--stream-segmented-duration", "20", "--force",
                    "-o", streamlinkOutput.path, multivariantURL, "best",
                ], directory: origin.directory, label: "streamlink")
            try await GStreamerPlayer.requireInstalled(in: origin.directory)
            let gstreamer = try GStreamerPlayer.start(
                url: multivariantURL, seconds: 20, directory: origin.directory, label: "gstreamer")
            let watch = EncryptedWatch(client: client, channel: channel, directory: origin.directory)
            let watchEnd = ContinuousClock.now + .seconds(22)
            while ContinuousClock.now < watchEnd {
                try await watch.poll()
                try await Task.sleep(for: .seconds(1))
            }
            let recorderStatus = await recorder.wait(timeout: .seconds(40))
            let streamlinkStatus = await streamlink.wait(timeout: .seconds(40))
            let gstreamerStatus = await gstreamer.wait(timeout: .seconds(30))
            for player in [recorder, streamlink, gstreamer] where player.isRunning { player.signal(SIGKILL) }

            #expect(recorderStatus == 0, "ffmpeg: \(recorder.standardError.suffix(2000))")
            let decoded = try await ProtectedChannels.expectDecodes(recording, in: origin.directory)
            #expect(decoded.errors.isEmpty, "ffprobe on ffmpeg's copy: \(decoded.errors.prefix(2000))")
            // 20 s at 25 fps, give or take the segment ffmpeg cut at.
            #expect(
                decoded.pictureTypes.count >= 450 && decoded.pictureTypes.count <= 550,
                "ffmpeg's 20 s copy decodes to \(decoded.pictureTypes.count) video frames")
            #expect(
                !recorder.standardError.contains("403") && !recorder.standardError.contains("Unable to open"),
                "ffmpeg: \(recorder.standardError.suffix(2000))")

            #expect(streamlinkStatus == 0, "streamlink: \(streamlink.standardError.suffix(2000))")
            let streamlinkFailures = StreamlinkTests.failures(streamlink.standardError + streamlink.standardOutput)
            #expect(streamlinkFailures.isEmpty, "streamlink: \(streamlinkFailures.joined(separator: "\n"))")
            let streamlinkDecoded = try await StreamlinkTests.decode(streamlinkOutput, in: origin.directory)
            #expect(streamlinkDecoded.errors.isEmpty, "\(streamlinkDecoded.errors.prefix(2000))")
            #expect((streamlinkDecoded.frames["video"] ?? 0) >= 400, "streamlink: \(streamlinkDecoded.frames)")

            #expect(gstreamerStatus == 0, "GStreamer: \(gstreamer.standardOutput.suffix(2000))")
            let gstreamerSummary = try GStreamerPlayer.summary(of: gstreamer)
            #expect(gstreamerSummary.errors.isEmpty, "GStreamer: \(gstreamerSummary.errors)")
            #expect(gstreamerSummary.video >= 250, "GStreamer decoded \(gstreamerSummary.video) video frames in 20 s")

            #expect(watch.undecryptable.isEmpty, "\(watch.undecryptable.joined(separator: "\n"))")
            #expect(watch.keys.count >= 3, "keys seen: \(watch.keys.keys.sorted())")
            #expect(Set(watch.keys.values).count == watch.keys.count, "two key URLs gave the same key")
            #expect(watch.keys.values.allSatisfy { $0.count == 16 })
            let violations = watch.rules.finish()
            #expect(violations.isEmpty, "\(violations.joined(separator: "\n"))")

            // SIGKILL and restart on the same port and data directory: the same URLs answer the same bytes.
            encoder.signal(SIGKILL)
            _ = await encoder.wait(timeout: .seconds(5))
            origin.kill()
            _ = await origin.child.wait(timeout: .seconds(5))
            let again = try await OriginProcess(
                configuration: Self.configuration(encryptedChannel: channel), label: "restarted", port: port,
                restarting: origin.directory)
            restarted = again
            let listed = try MediaPlaylistText(try await client.get(mediaPath).text)
            let listedPaths = Set(listed.entries.map { PlaylistURL.resolve($0.uri, against: mediaPath) })
            var identical = 0
            var missingListed: [String] = []
            for (path, before) in watch.segments.sorted(by: { $0.key < $1.key }) {
                let answer = try await client.get(path)
                if answer.status == 200 {
                    #expect(answer.body == before, "\(path): different bytes after the restart")
                    if answer.body == before { identical += 1 }
                } else if listedPaths.contains(path) {
                    missingListed.append("\(path): \(answer.status)")
                }
            }
            #expect(missingListed.isEmpty, "listed after the restart but not served: \(missingListed)")
            #expect(identical >= 3, "only \(identical) earlier segment URLs answered after the restart")
            var sameKeys = 0
            for (path, before) in watch.keys {
                let answer = try await client.get(path)
                if answer.status == 200 {
                    #expect(answer.body == before, "\(path): a different key after the restart")
                    sameKeys += 1
                }
            }
            // Every key the restored playlist names is served (16 bytes).
            for keyPath in Set(listed.entries.compactMap(\.keyURI).map { PlaylistURL.resolve($0, against: mediaPath) })
            {
                let answer = try await client.get(keyPath)
                #expect(
                    answer.status == 200 && answer.body.count == 16, "\(keyPath) after the restart: \(answer.status)")
            }
            #expect(sameKeys >= 1, "no earlier key URL answered after the restart")
            print(
                "encrypted MPEG-TS: ffmpeg decoded \(decoded.pictureTypes.count) frames of 20 s, streamlink "
                    + "\(streamlinkDecoded.frames), GStreamer \(gstreamerSummary.video) video frames; "
                    + "\(watch.segments.count) segments under \(watch.keys.count) keys decrypted with openssl; "
                    + "after SIGKILL + restart \(identical) segment URLs and \(sameKeys) key URLs answered the same "
                    + "bytes; \(watch.rules.checked) playlists passed rules 30/33/36")
            await again.stop()
        }

        @Test("fMP4 (HEVC when libx265 is there): clear init section before the first KEY; ffmpeg decodes every frame")
        func fragmentedMP4() async throws {
            let channel = "securefmp4"
            let container = await ProtectedChannels.Container.fragmentedMP4WithHEVCIfAvailable
            try await OriginProcess.withRunning(
                configuration: Self.configuration(encryptedChannel: channel), label: "encrypted-fmp4"
            ) { origin in
                let client = HTTPClient(port: origin.port)
                let encoder = try ProtectedChannels.startPush(
                    port: origin.port, channel: channel, container: container, directory: origin.directory,
                    label: "ffmpeg-push")
                defer { encoder.signal(SIGKILL) }
                let mediaPath = "/live/\(channel)/hi/index.m3u8"
                let media = try await ProtectedChannels.awaitPlaylist(client: client, path: mediaPath, entries: 3)
                // MAP above the first KEY: the init section is clear (no AES-128 key in force at the MAP).
                let mapLine = try #require(media.text.range(of: "#EXT-X-MAP:"), "no EXT-X-MAP:\n\(media.text)")
                let keyLine = try #require(media.text.range(of: "#EXT-X-KEY:"), "no EXT-X-KEY:\n\(media.text)")
                #expect(mapLine.lowerBound < keyLine.lowerBound, "EXT-X-KEY before EXT-X-MAP:\n\(media.text)")
                // Not MSN 0: the encoder's first segment may be cut short.
                let first = try #require(media.entries.dropFirst().first { !$0.gap })
                let initSection = try await ProtectedChannels.fetch(
                    client: client, PlaylistURL.resolve(try #require(first.mapURI), against: mediaPath))
                #expect(initSection.count > 8 && Array(initSection[4..<8]) == Array("ftyp".utf8), "init is not clear")
                let key = try await ProtectedChannels.fetch(
                    client: client, PlaylistURL.resolve(try #require(first.keyURI), against: mediaPath))
                let plaintext = try await SegmentDecryption.decrypt(
                    try await ProtectedChannels.fetch(
                        client: client, PlaylistURL.resolve(first.uri, against: mediaPath)),
                    key: key, msn: first.msn, in: origin.directory)
                let segmentFrames = try await FrameCount.videoFrames(
                    of: initSection + plaintext, name: "segment.mp4", in: origin.directory)
                #expect(
                    segmentFrames.errors.isEmpty && (45...55).contains(segmentFrames.pictureTypes.count),
                    "MSN \(first.msn) decrypted: \(segmentFrames.pictureTypes.count) frames, \(segmentFrames.errors)")

                let recording = origin.directory.appendingPathComponent("ffmpeg-read.mp4")
                let recorder = try FFmpeg.startRecorder(
                    url: "\(origin.baseURL)/live/\(channel)/index.m3u8", seconds: 12, output: recording,
                    directory: origin.directory, label: "ffmpeg-read", logLevel: "warning")
                let rules = ProtectedPlaylistRules()
                let end = ContinuousClock.now + .seconds(14)
                while ContinuousClock.now < end {
                    rules.media(path: mediaPath, text: try await client.get(mediaPath).text)
                    try await Task.sleep(for: .seconds(1))
                }
                let status = await recorder.wait(timeout: .seconds(40))
                if status == nil { recorder.signal(SIGKILL) }
                #expect(status == 0, "ffmpeg: \(recorder.standardError.suffix(2000))")
                let decoded = try await ProtectedChannels.expectDecodes(recording, in: origin.directory)
                #expect(decoded.errors.isEmpty, "\(decoded.errors.prefix(2000))")
                #expect(
                    decoded.pictureTypes.count >= 250 && decoded.pictureTypes.count <= 350,
                    "ffmpeg's 12 s copy decodes to \(decoded.pictureTypes.count) frames")
                let violations = rules.finish()
                #expect(violations.isEmpty, "\(violations.joined(separator: "\n"))")
                print(
                    "encrypted \(container.rawValue): MSN \(first.msn) decrypts to 50 frames after the clear init "
                        + "section; ffmpeg decoded \(decoded.pictureTypes.count) frames of 12 s")
            }
        }

        @Test("Outage on an encrypted test-source channel: GAP fillers and iframe-{msn}.ts decrypt to decodable TS")
        func fillersAndIFrameResourcesDecrypt() async throws {
            let configuration = """
                logLevel: info
                channels:
                  - name: slate
                    source: test-source
                    segmentDuration: 2
                    window: { segments: 10 }
                    gapResponse: filler
                    encryption: { method: AES-128, rotateEvery: 2 }
                    renditions:
                      - { name: 360p, profile: 360p }
                """
            try await OriginProcess.withRunning(configuration: configuration, label: "encrypted-outage") { origin in
                let client = HTTPClient(port: origin.port)
                let mediaPath = "/live/slate/360p/index.m3u8"
                _ = try await ProtectedChannels.awaitPlaylist(client: client, path: mediaPath, entries: 3)
                let outage = try await client.request(
                    "POST", "/admin/channels/slate/outage", headers: [("Content-Type", "application/json")],
                    body: Array(#"{"seconds": 6, "renditions": ["360p"]}"#.utf8))
                #expect(outage.status == 202, "outage answered \(outage.status): \(outage.text)")
                let rules = ProtectedPlaylistRules()
                var media = try MediaPlaylistText(try await client.get(mediaPath).text)
                let deadline = ContinuousClock.now + .seconds(30)
                while ContinuousClock.now < deadline {
                    media = try MediaPlaylistText(try await client.get(mediaPath).text)
                    rules.media(path: mediaPath, text: media.text)
                    if let lastGap = media.entries.last(where: \.gap), (media.entries.last?.msn ?? 0) >= lastGap.msn + 2
                    {
                        break
                    }
                    try await Task.sleep(for: .milliseconds(500))
                }
                let gaps = media.entries.filter(\.gap)
                #expect(!gaps.isEmpty, "no GAP entries after the outage:\n\(media.text)")
                var keys: [String: [UInt8]] = [:]
                func key(_ entry: MediaPlaylistText.Entry, base: String) async throws -> [UInt8] {
                    let path = PlaylistURL.resolve(try #require(entry.keyURI, "MSN \(entry.msn) clear"), against: base)
                    if let known = keys[path] { return known }
                    let bytes = try await ProtectedChannels.fetch(client: client, path)
                    keys[path] = bytes
                    return bytes
                }
                for gap in gaps {
                    let filler = try await ProtectedChannels.fetch(
                        client: client, PlaylistURL.resolve(gap.uri, against: mediaPath))
                    let plaintext = try await SegmentDecryption.decrypt(
                        filler, key: try await key(gap, base: mediaPath), msn: gap.msn, in: origin.directory)
                    let frames = try await FrameCount.videoFrames(
                        of: plaintext, name: "filler-\(gap.msn).ts", in: origin.directory)
                    #expect(
                        frames.status == 0 && frames.errors.isEmpty && !frames.pictureTypes.isEmpty,
                        "filler \(gap.msn): \(frames.pictureTypes.count) frames, \(frames.errors)")
                }

                let iFramePath = "/live/slate/360p/iframes.m3u8"
                let iFrameAnswer = try await client.get(iFramePath)
                #expect(iFrameAnswer.status == 200, "\(iFramePath): \(iFrameAnswer.status) \(iFrameAnswer.text)")
                rules.media(path: iFramePath, text: iFrameAnswer.text)
                let iFrames = try MediaPlaylistText(iFrameAnswer.text)
                var checked = 0
                for entry in iFrames.entries where !entry.gap {
                    #expect(entry.byteRange == nil, "MSN \(entry.msn): a byte range into an encrypted resource")
                    #expect(entry.uri.hasPrefix("iframe-\(entry.msn).ts"), "MSN \(entry.msn): \(entry.uri)")
                    let ciphertext = try await ProtectedChannels.fetch(
                        client: client, PlaylistURL.resolve(entry.uri, against: iFramePath))
                    let plaintext = try await SegmentDecryption.decrypt(
                        ciphertext, key: try await key(entry, base: iFramePath), msn: entry.msn,
                        in: origin.directory)
                    let frames = try await FrameCount.videoFrames(
                        of: plaintext, name: "iframe-\(entry.msn).ts", in: origin.directory)
                    #expect(
                        frames.errors.isEmpty && frames.pictureTypes == ["I"],
                        "iframe-\(entry.msn).ts decrypted: \(frames.pictureTypes) \(frames.errors)")
                    checked += 1
                }
                #expect(checked >= 3, "only \(checked) I-frame resources")
                let violations = rules.finish()
                #expect(violations.isEmpty, "\(violations.joined(separator: "\n"))")
                print(
                    "encrypted outage: \(gaps.count) GAP fillers (MSN \(gaps.map(\.msn))) decrypt to decodable TS; "
                        + "\(checked) iframe-{msn}.ts decrypt to one I frame each under \(keys.count) keys")
            }
        }
    }
}
