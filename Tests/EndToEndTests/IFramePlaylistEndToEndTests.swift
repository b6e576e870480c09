import Foundation
import Glibc
import TestSupport
import Testing

extension EndToEnd {
    /// I-frame playlists of a channel ffmpeg pushes, read by real tools: every entry's byte range decodes alone to
    /// exactly one keyframe (ffprobe), ffmpeg reads the playlist itself, and it lists the rendition's MSNs, DSN and
    /// PDTs.
    @Suite("End to end: I-frame playlists", .tags(.endToEnd))
    struct IFramePlaylistEndToEndTests {
        static let configuration = """
            logLevel: info
            ingest:
              autoCreate: true
              defaults:
                segmentDuration: 2
                window: { segments: 8 }
            channels: []
            """

        @Test("MPEG-TS: each byte range is one I frame; ffmpeg reads iframes.m3u8; MSN, DSN, PDT as index.m3u8")
        func transportStream() async throws {
            try await check(.transportStream)
        }

        @Test("fMP4: init section + each byte range is one I frame; ffmpeg reads iframes.m3u8; same MSN, DSN, PDT")
        func fragmentedMP4() async throws {
            try await check(.fragmentedMP4)
        }

        func check(_ container: ProtectedChannels.Container) async throws {
            let channel = "trick"
            try await OriginProcess.withRunning(configuration: Self.configuration, label: "iframes") { origin in
                let client = HTTPClient(port: origin.port)
                let encoder = try ProtectedChannels.startPush(
                    port: origin.port, channel: channel, container: container, directory: origin.directory,
                    label: "ffmpeg-push")
                defer { encoder.signal(SIGKILL) }
                let rules = ProtectedPlaylistRules()
                let mediaPath = "/live/\(channel)/hi/index.m3u8"
                let iFramePath = "/live/\(channel)/hi/iframes.m3u8"
                _ = try await ProtectedChannels.awaitPlaylist(client: client, path: mediaPath, entries: 4)

                let multivariantPath = "/live/\(channel)/index.m3u8"
                let multivariant = try await client.get(multivariantPath)
                #expect(multivariant.status == 200)
                rules.multivariant(path: multivariantPath, text: multivariant.text)
                #expect(
                    multivariant.text.contains("#EXT-X-I-FRAME-STREAM-INF:")
                        && multivariant.text.contains(#"URI="hi/iframes.m3u8""#),
                    "no I-frame stream in the multivariant playlist:\n\(multivariant.text)")

                // The rendition's playlist and its I-frame playlist, read back to back (retried when a new segment
                // was published between the two reads).
                var media = try MediaPlaylistText(try await client.get(mediaPath).text)
                var iFrames = try MediaPlaylistText(try await client.get(iFramePath).text)
                for _ in 0..<5
                where media.mediaSequence != iFrames.mediaSequence
                    || media.entries.count != iFrames.entries.count
                {
                    media = try MediaPlaylistText(try await client.get(mediaPath).text)
                    iFrames = try MediaPlaylistText(try await client.get(iFramePath).text)
                }
                rules.media(path: mediaPath, text: media.text)
                rules.media(path: iFramePath, text: iFrames.text)
                #expect(iFrames.iFramesOnly, "no EXT-X-I-FRAMES-ONLY:\n\(iFrames.text)")
                #expect(
                    iFrames.version == (container == .transportStream ? 4 : 5),
                    "version \(iFrames.version ?? 0):\n\(iFrames.text)")
                #expect(iFrames.mediaSequence == media.mediaSequence)
                #expect(iFrames.discontinuitySequence == media.discontinuitySequence)
                #expect(iFrames.entries.count == media.entries.count, "\(iFrames.text)\n---\n\(media.text)")
                for (frame, segment) in zip(iFrames.entries, media.entries) {
                    #expect(frame.msn == segment.msn)
                    #expect(frame.programDateTime == segment.programDateTime, "MSN \(frame.msn)")
                    #expect(frame.duration == segment.duration, "MSN \(frame.msn)")
                    #expect(frame.gap == segment.gap, "MSN \(frame.msn)")
                    #expect(frame.uri == segment.uri, "MSN \(frame.msn): I-frame entries point into the segment")
                }

                // Every entry's range, fetched with a Range header, decodes alone to exactly one I frame.
                var initSection: [UInt8] = []
                if container != .transportStream {
                    let map = try #require(iFrames.entries.first?.mapURI, "no EXT-X-MAP:\n\(iFrames.text)")
                    initSection = try await ProtectedChannels.fetch(
                        client: client, PlaylistURL.resolve(map, against: iFramePath))
                }
                var ranges: [String] = []
                for entry in iFrames.entries where !entry.gap {
                    let range = try #require(entry.byteRange, "MSN \(entry.msn) has no byte range")
                    #expect(range.offset == 0, "MSN \(entry.msn): range \(range.length)@\(range.offset)")
                    let path = PlaylistURL.resolve(entry.uri, against: iFramePath)
                    let answer = try await client.get(
                        path, headers: [("Range", "bytes=\(range.offset)-\(range.offset + range.length - 1)")])
                    #expect(answer.status == 206, "\(path) with Range answered \(answer.status)")
                    #expect(
                        answer.body.count == range.length, "\(path): \(answer.body.count) bytes, not \(range.length)")
                    let frames = try await FrameCount.videoFrames(
                        of: initSection + answer.body, name: "iframe-\(entry.msn).\(container.segmentExtension)",
                        in: origin.directory)
                    // fMP4: the range ends inside the mdat whose trun lists the whole GOP, so ffprobe says "partial
                    // file" after the keyframe (measured); anything else is an error.
                    let errors = frames.errors.split(whereSeparator: \.isNewline).filter {
                        container == .transportStream || !$0.contains("partial file")
                    }
                    #expect(frames.status == 0 && errors.isEmpty, "MSN \(entry.msn): \(frames.errors)")
                    #expect(
                        frames.pictureTypes == ["I"] && frames.keyFrames == [true],
                        "MSN \(entry.msn) range \(range.length)@0 decodes to \(frames.pictureTypes) \(frames.keyFrames)"
                    )
                    ranges.append("\(entry.msn):\(range.length)@0")
                }
                #expect(ranges.count >= 3, "only \(ranges.count) I-frame entries checked")

                // ffmpeg reads the I-frame playlist as a playlist (6 s of media time = 3 I frames). A small probe size:
                // at one keyframe per 2 s and no audio frames, ffmpeg's default 5 MB probe would wait for minutes.
                // fMP4 is recorded, not required: ffmpeg 5.1 reads the ranges as one stream and takes the next range's
                // boxes for the truncated mdat's remaining samples ("Invalid NAL unit size", measured).
                let output = origin.directory.appendingPathComponent(
                    "iframes-read.\(container == .transportStream ? "ts" : "mp4")")
                let reader = try ChildProcess(
                    executable: try #require(ChildProcess.locate("ffmpeg")),
                    arguments: [
                        "-nostdin", "-v", "error", "-y", "-probesize", "32768", "-analyzeduration", "1000000", "-i",
                        "\(origin.baseURL)\(iFramePath)", "-map", "0:v", "-c", "copy", "-t", "6", output.path,
                    ], directory: origin.directory, label: "ffmpeg-iframes")
                let status = await reader.wait(timeout: .seconds(container == .transportStream ? 40 : 15))
                if status == nil { reader.signal(SIGKILL) }
                let read = try await FrameCount.videoFrames(of: output, in: origin.directory)
                let readAccount =
                    "ffmpeg status \(status.map(String.init) ?? "killed"), \(read.pictureTypes.count) frames "
                    + "\(Set(read.pictureTypes).sorted()), errors: \(read.errors.prefix(300))"
                if container == .transportStream {
                    #expect(status == 0, "ffmpeg reading \(iFramePath): \(reader.standardError.suffix(1500))")
                    #expect(read.errors.isEmpty, "\(read.errors)")
                    #expect(
                        read.pictureTypes.count >= 2 && read.pictureTypes.allSatisfy { $0 == "I" },
                        "ffmpeg's copy of the I-frame playlist: \(readAccount)")
                }
                let violations = rules.finish()
                #expect(violations.isEmpty, "\(violations.joined(separator: "\n"))")
                print(
                    "I-frame playlist (\(container.rawValue)): \(ranges.count) ranges each one I frame: "
                        + "\(ranges.joined(separator: " ")); ffmpeg reading iframes.m3u8: \(readAccount); "
                        + "\(rules.checked) playlists passed rules 30/33/36")
            }
        }
    }
}
