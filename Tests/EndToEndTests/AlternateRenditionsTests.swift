import Foundation
import Glibc
import HLSPlaylist
import Synchronization
import TestSupport
import Testing

extension EndToEndInBrowser {
    /// The issue's demuxed ffmpeg push (two video renditions, English and French audio, WebVTT subtitles on `lo`,
    /// ffmpeg's own multivariant playlist PUT as the hint) into an auto-created channel, checked with real readers:
    /// the multivariant playlist, ffmpeg reading it, hls.js, chromium's own HLS and video.js in Debian's chromium, an
    /// encoder restart, sparse cues, HEVC in fMP4, and hints that must be refused.
    @Suite("End to end: alternate renditions", .tags(.endToEnd))
    struct AlternateRenditionsTests {
        static let channel = "demux"
        /// Every rendition ffmpeg pushes, with `lo`'s subtitles as the origin names them.
        static let renditions = ["hi", "lo", "en", "fr", "lo-vtt"]

        static let configuration = """
            logLevel: info
            ingest:
              autoCreate: true
              defaults:
                segmentDuration: 2
                window: { segments: 10 }
            channels: []
            """

        /// What ffmpeg writes the segments in.
        enum Container: String {
            case transportStream = "MPEG-TS"
            case fragmentedMP4 = "fMP4 H.264"
            case fragmentedMP4HEVC = "fMP4 HEVC"

            var videoCodecPrefix: String { self == .fragmentedMP4HEVC ? "hvc1" : "avc1" }

            /// Where the SRT's clock starts on the media timeline (ffmpeg 5.1, measured; design section 3): the
            /// first video frame's PTS, 1.4 s of mpegts muxer delay in MPEG-TS.
            var cueClockStart: Double { self == .transportStream ? 1.421 : 0.067 }

            /// The X-TIMESTAMP-MAP the origin writes into ffmpeg 5.1's map-less WebVTT (design section 3): cue time 0
            /// is MPEG-TS time 1.4 s (126000) under an MPEG-TS parent, 0 under fMP4.
            var timestampMap: String {
                "X-TIMESTAMP-MAP=MPEGTS:\(self == .transportStream ? 126_000 : 0),LOCAL:00:00:00.000"
            }
        }

        /// The issue's command plus the SRT input (`s:0,sgroup:subs` on `lo` only: ffmpeg 5.1 crashes when a variant
        /// names an sgroup without a subtitle stream). `-preset ultrafast` keeps two real-time encodes within reach
        /// of a shared 2-core machine; the origin sees the same pushes either way.
        static func startDemuxedPush(
            port: Int, subtitles: URL, container: Container, directory: URL, label: String
        ) throws -> ChildProcess {
            guard let ffmpeg = ChildProcess.locate("ffmpeg") else { throw EndToEndError("ffmpeg is not on the PATH") }
            var arguments = [
                "-nostdin", "-v", "error", "-re",
                "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30",
                "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
                "-f", "lavfi", "-i", "sine=frequency=880:sample_rate=48000",
                "-i", subtitles.path,
                "-filter_complex", "[0:v]split=2[a][b];[b]scale=320:180[b2]",
                "-map", "[a]", "-map", "[b2]", "-map", "1:a", "-map", "2:a", "-map", "3:s",
            ]
            switch container {
            case .transportStream, .fragmentedMP4:
                arguments += ["-c:v", "libx264", "-preset", "ultrafast", "-g", "60"]
            case .fragmentedMP4HEVC:
                arguments += [
                    "-c:v", "libx265", "-preset", "ultrafast", "-tag:v", "hvc1",
                    "-x265-params", "keyint=60:min-keyint=60:log-level=error",
                ]
            }
            arguments += ["-c:a", "aac", "-c:s", "webvtt", "-f", "hls", "-hls_time", "2"]
            if container != .transportStream { arguments += ["-hls_segment_type", "fmp4"] }
            arguments += [
                "-method", "PUT", "-master_pl_name", "master.m3u8",
                "-var_stream_map",
                "v:0,agroup:aud,name:hi v:1,s:0,agroup:aud,sgroup:subs,name:lo "
                    + "a:0,agroup:aud,name:en,language:en,default:yes a:1,agroup:aud,name:fr,language:fr",
                "http://127.0.0.1:\(port)/ingest/\(channel)/%v/index.m3u8",
            ]
            return try ChildProcess(executable: ffmpeg, arguments: arguments, directory: directory, label: label)
        }

        /// The text of cue `index` in the SRTs the tests write.
        static func cueText(_ index: Int, sparse: Bool) -> String {
            sparse ? "Sparse cue \(index)" : "Cue number \(index)"
        }

        /// Writes an SRT: dense, a 1.5 s cue every 2 s from 0 ("Cue number N" at 2N s); sparse, a 2 s cue every
        /// 20 s from 1 s ("Sparse cue N" at 20N + 1 s).
        static func writeSubtitles(to url: URL, sparse: Bool) throws {
            func time(_ milliseconds: Int) -> String {
                String(
                    format: "%02d:%02d:%02d,%03d", milliseconds / 3_600_000, milliseconds / 60_000 % 60,
                    milliseconds / 1000 % 60, milliseconds % 1000)
            }
            var text = ""
            for index in 0..<(sparse ? 30 : 300) {
                let start = sparse ? 20_000 * index + 1000 : 2000 * index
                let end = start + (sparse ? 2000 : 1500)
                text += "\(index + 1)\n\(time(start)) --> \(time(end))\n\(cueText(index, sparse: sparse))\n\n"
            }
            try Data(text.utf8).write(to: url)
        }

        // MARK: - The multivariant playlist

        /// An attribute list (`KEY=VALUE,KEY="quoted, value"`) as a dictionary, quotes removed; `quoted` says which
        /// values were quoted.
        static func attributes(_ list: Substring) -> (values: [String: String], quoted: Set<String>) {
            var values: [String: String] = [:]
            var quoted: Set<String> = []
            var rest = list[...]
            while !rest.isEmpty {
                guard let equals = rest.firstIndex(of: "=") else { break }
                let key = String(rest[..<equals])
                rest = rest[rest.index(after: equals)...]
                if rest.first == "\"" {
                    let body = rest.dropFirst()
                    let close = body.firstIndex(of: "\"") ?? body.endIndex
                    values[key] = String(body[..<close])
                    quoted.insert(key)
                    rest = close < body.endIndex ? body[body.index(after: close)...] : body[close...]
                } else {
                    let comma = rest.firstIndex(of: ",") ?? rest.endIndex
                    values[key] = String(rest[..<comma])
                    rest = rest[comma...]
                }
                if rest.first == "," { rest = rest.dropFirst() }
            }
            return (values, quoted)
        }

        /// The EXT-X-MEDIA tags and the variants (attributes and URI) of a multivariant playlist's text.
        struct Multivariant {
            struct Variant {
                let attributes: [String: String]
                let quoted: Set<String>
                let uri: String
            }
            let text: String
            let media: [[String: String]]
            let variants: [Variant]

            init(_ text: String) {
                self.text = text
                var media: [[String: String]] = []
                var variants: [Variant] = []
                var pending: (values: [String: String], quoted: Set<String>)?
                for line in text.split(separator: "\n") {
                    if line.hasPrefix("#EXT-X-MEDIA:") {
                        media.append(AlternateRenditionsTests.attributes(line.dropFirst("#EXT-X-MEDIA:".count)).values)
                    } else if line.hasPrefix("#EXT-X-STREAM-INF:") {
                        pending = AlternateRenditionsTests.attributes(line.dropFirst("#EXT-X-STREAM-INF:".count))
                    } else if !line.hasPrefix("#"), let attributes = pending {
                        variants.append(
                            Variant(attributes: attributes.values, quoted: attributes.quoted, uri: String(line)))
                        pending = nil
                    }
                }
                self.media = media
                self.variants = variants
            }

            func media(type: String) -> [[String: String]] { media.filter { $0["TYPE"] == type } }

            /// The EXT-X-MEDIA lines as sent, for before/after comparisons.
            var mediaLines: [Substring] { text.split(separator: "\n").filter { $0.hasPrefix("#EXT-X-MEDIA:") } }

            /// The layout is there: two audio renditions and, when asked, one subtitle rendition.
            func hasGroups(subtitles: Bool) -> Bool {
                media(type: "AUDIO").count == 2 && (!subtitles || media(type: "SUBTITLES").count == 1)
            }
        }

        /// Polls the multivariant playlist until it lists the groups (or `timeout` passes); returns the last one read.
        static func awaitGroups(
            client: HTTPClient, subtitles: Bool, timeout: Duration = .seconds(40)
        ) async throws -> Multivariant {
            let deadline = ContinuousClock.now + timeout
            var last = Multivariant("")
            while ContinuousClock.now < deadline {
                let response = try await client.get("/live/\(channel)/index.m3u8")
                if response.status == 200 {
                    last = Multivariant(response.text)
                    // Both variants listed with the groups, and every rendition's playlist served.
                    if last.hasGroups(subtitles: subtitles), last.variants.count >= 2 {
                        var served = true
                        for rendition in renditions where subtitles || rendition != "lo-vtt" {
                            served = try await client.get("/live/\(channel)/\(rendition)/index.m3u8").status == 200
                            if !served { break }
                        }
                        if served { return last }
                    }
                }
                try await Task.sleep(for: .milliseconds(500))
            }
            return last
        }

        /// What the issue asks of the multivariant playlist: two AUDIO renditions named, tagged and defaulted from
        /// the hint, one SUBTITLES rendition, and every variant (hi and lo only) referencing both groups with
        /// CLOSED-CAPTIONS=NONE and audio in CODECS. Returns the problems.
        static func problems(of multivariant: Multivariant, subtitles: Bool, container: Container) -> [String] {
            var problems: [String] = []
            do {
                problems += try MultivariantPlaylist.parse(multivariant.text).validate().map { "validate(): \($0)" }
            } catch {
                problems.append("does not parse: \(error)")
            }
            let audio = multivariant.media(type: "AUDIO")
            if audio.count != 2 { problems.append("\(audio.count) AUDIO renditions, expected 2") }
            let groups = Set(audio.compactMap { $0["GROUP-ID"] })
            if groups.count != 1 { problems.append("AUDIO renditions in groups \(groups.sorted()), expected one") }
            let byLanguage = Dictionary(audio.map { ($0["LANGUAGE"] ?? "none", $0) }, uniquingKeysWith: { a, _ in a })
            for (language, name, isDefault) in [("en", "English", "YES"), ("fr", "Français", "NO")] {
                guard let member = byLanguage[language] else {
                    problems.append("no AUDIO rendition with LANGUAGE=\"\(language)\"")
                    continue
                }
                if member["NAME"] != name { problems.append("AUDIO \(language): NAME \(member["NAME"] ?? "none")") }
                if member["DEFAULT"] != isDefault {
                    problems.append(
                        "AUDIO \(language): DEFAULT=\(member["DEFAULT"] ?? "absent"), expected \(isDefault)")
                }
                if member["URI"] != "\(language)/index.m3u8" {
                    problems.append("AUDIO \(language): URI \(member["URI"] ?? "none")")
                }
                if member["CHANNELS"] != "1" {
                    problems.append("AUDIO \(language): CHANNELS \(member["CHANNELS"] ?? "absent"), expected 1 (mono)")
                }
            }
            let subtitleRenditions = multivariant.media(type: "SUBTITLES")
            if subtitles {
                if subtitleRenditions.count != 1 {
                    problems.append("\(subtitleRenditions.count) SUBTITLES renditions, expected 1")
                } else if subtitleRenditions[0]["URI"] != "lo-vtt/index.m3u8" {
                    problems.append(
                        "SUBTITLES URI \(subtitleRenditions[0]["URI"] ?? "none"), expected lo-vtt/index.m3u8")
                }
            }
            let uris = multivariant.variants.map(\.uri)
            if uris.sorted() != ["hi/index.m3u8", "lo/index.m3u8"] {
                problems.append("variants \(uris), expected hi and lo only")
            }
            for variant in multivariant.variants {
                let attributes = variant.attributes
                if attributes["AUDIO"] != groups.first {
                    problems.append("\(variant.uri): AUDIO=\(attributes["AUDIO"] ?? "absent")")
                }
                if subtitles,
                    attributes["SUBTITLES"] == nil || attributes["SUBTITLES"] != subtitleRenditions.first?["GROUP-ID"]
                {
                    problems.append("\(variant.uri): SUBTITLES=\(attributes["SUBTITLES"] ?? "absent")")
                }
                if attributes["CLOSED-CAPTIONS"] != "NONE" || variant.quoted.contains("CLOSED-CAPTIONS") {
                    problems.append(
                        "\(variant.uri): CLOSED-CAPTIONS \(attributes["CLOSED-CAPTIONS"] ?? "absent"), expected NONE")
                }
                let codecs = attributes["CODECS"] ?? ""
                if !codecs.contains("mp4a.40.2") || !codecs.contains(container.videoCodecPrefix) {
                    problems.append(
                        "\(variant.uri): CODECS \"\(codecs)\" lacks mp4a.40.2 or \(container.videoCodecPrefix)")
                }
            }
            return problems
        }

        // MARK: - Readers

        /// ffmpeg reads the multivariant playlist for `seconds` and copies the first program's video and every
        /// audio stream it offers into Matroska; returns ffprobe's streams of the recording as
        /// (codec_type, codec_name, language).
        static func recordAndProbe(
            origin: OriginProcess, seconds: Int, label: String
        ) async throws -> (streams: [(type: String, codec: String, language: String?)], log: String) {
            let output = origin.directory.appendingPathComponent("\(label).mkv")
            guard let ffmpeg = ChildProcess.locate("ffmpeg") else { throw EndToEndError("ffmpeg is not on the PATH") }
            let recorder = try ChildProcess(
                executable: ffmpeg,
                arguments: [
                    "-nostdin", "-v", "error", "-y", "-i", "\(origin.baseURL)/live/\(channel)/index.m3u8",
                    "-map", "0:p:0:v?", "-map", "0:p:0:a?", "-c", "copy", "-t", "\(seconds)", output.path,
                ], directory: origin.directory, label: label)
            let status = await recorder.wait(timeout: .seconds(Int64(seconds) + 40))
            recorder.signal(SIGKILL)
            let log = "recorder status \(status.map(String.init) ?? "timeout"): \(recorder.standardError)"
            let probed = try await ChildProcess.run(
                "ffprobe",
                [
                    "-v", "error", "-show_entries", "stream=codec_type,codec_name:stream_tags=language",
                    "-of", "json", output.path,
                ], in: origin.directory)
            struct Root: Decodable {
                struct Stream: Decodable {
                    let codec_type: String?
                    let codec_name: String?
                    let tags: [String: String]?
                }
                let streams: [Stream]?
            }
            let root = try? JSONDecoder().decode(Root.self, from: Data(probed.standardOutput.utf8))
            let streams = (root?.streams ?? []).map {
                (type: $0.codec_type ?? "?", codec: $0.codec_name ?? "?", language: $0.tags?["language"])
            }
            return (streams, log + " ffprobe: \(probed.standardError)")
        }

        /// The X-TIMESTAMP-MAP line of every non-GAP `.vtt` `lo-vtt` lists now, by URI ("none" when missing).
        static func listedTimestampMaps(client: HTTPClient) async throws -> [(uri: String, map: String)] {
            let playlist = try await client.get("/live/\(channel)/lo-vtt/index.m3u8")
            guard playlist.status == 200, let parsed = try? MediaPlaylist.parse(playlist.text) else { return [] }
            var maps: [(String, String)] = []
            for segment in parsed.segments where !segment.gap {
                let response = try await client.get("/live/\(channel)/lo-vtt/\(segment.uri)")
                maps.append((segment.uri, timestampMap(response.text).map(String.init) ?? "none (\(response.status))"))
            }
            return maps
        }

        /// Every `.vtt` listed now carries the map the container asks for: one encoder session has one cue clock, so
        /// the first segments (accepted before the parent's container was known) are no exception.
        static func checkTimestampMaps(client: HTTPClient, container: Container) async throws {
            let maps = try await listedTimestampMaps(client: client)
            #expect(!maps.isEmpty, "lo-vtt lists no .vtt")
            for (uri, map) in maps {
                #expect(map == container.timestampMap, "\(uri): \(map) (\(container.rawValue))")
            }
            print(
                "alternate renditions (\(container.rawValue)): X-TIMESTAMP-MAP of the listed .vtt: "
                    + maps.map { "\($0.uri) \($0.map.dropFirst("X-TIMESTAMP-MAP=".count))" }.joined(separator: ", "))
        }

        /// The newest non-GAP `.vtt` of `lo-vtt` as served: its headers and text.
        static func servedWebVTT(client: HTTPClient) async throws -> (contentType: String?, text: String, uri: String)?
        {
            let playlist = try await client.get("/live/\(channel)/lo-vtt/index.m3u8")
            guard playlist.status == 200 else { return nil }
            var gap = false
            var uris: [String] = []
            for line in playlist.text.split(separator: "\n") {
                if line == "#EXT-X-GAP" { gap = true }
                if !line.hasPrefix("#") {
                    if !gap { uris.append(String(line)) }
                    gap = false
                }
            }
            for uri in uris.reversed() {
                let response = try await client.get("/live/\(channel)/lo-vtt/\(uri)")
                if response.status == 200, response.text.contains("-->") {
                    return (response["Content-Type"], response.text, uri)
                }
            }
            guard let uri = uris.last else { return nil }
            let response = try await client.get("/live/\(channel)/lo-vtt/\(uri)")
            return (response["Content-Type"], response.text, uri)
        }

        /// The X-TIMESTAMP-MAP line of a WebVTT text, if it has one in its header.
        static func timestampMap(_ text: String) -> Substring? {
            text.split(separator: "\n", omittingEmptySubsequences: false).prefix(while: { !$0.isEmpty })
                .first { $0.hasPrefix("X-TIMESTAMP-MAP=") }
        }

        /// hls.js's cues against the SRT: each "Cue number N" should start (and end 1.5 s later) at element time
        /// `2N + cueClockStart - initPTS/timescale` ("Sparse cue N": `20N + 1 + ...`), the media timeline the
        /// origin's X-TIMESTAMP-MAP maps cues onto;
        /// returns each cue's error in seconds.
        static func cueErrors(_ played: BrowserPlayer.Played, container: Container) -> [(text: String, error: Double)] {
            guard let state = played.state, let initPTS = state.initPTS.first else { return [] }
            let base = initPTS.initPTS / initPTS.timescale
            var errors: [(String, Double)] = []
            for (key, cues) in state.cues where key.hasPrefix("subtitles/") {
                for cue in cues {
                    let srtStart: Double
                    let srtDuration: Double
                    if cue.text.hasPrefix("Cue number "), let index = Int(cue.text.dropFirst("Cue number ".count)) {
                        (srtStart, srtDuration) = (2 * Double(index), 1.5)
                    } else if cue.text.hasPrefix("Sparse cue "),
                        let index = Int(cue.text.dropFirst("Sparse cue ".count))
                    {
                        (srtStart, srtDuration) = (20 * Double(index) + 1, 2)
                    } else {
                        continue
                    }
                    // A cue mapped before the element's time 0 is clamped there by the player: its start looks right
                    // but it is shorter, so the end is checked too.
                    let startError = cue.start - (srtStart + container.cueClockStart - base)
                    let endError = cue.end - (srtStart + srtDuration + container.cueClockStart - base)
                    let expectedStart = srtStart + container.cueClockStart - base
                    errors.append(
                        (cue.text, expectedStart < 0 || abs(endError) > abs(startError) ? endError : startError))
                    if max(abs(startError), abs(endError)) > 0.2 {
                        print(
                            "alternate renditions (\(container.rawValue)): \(cue.text) shown \(cue.start)-\(cue.end), "
                                + "expected \(srtStart + container.cueClockStart - base)-"
                                + "\(srtStart + srtDuration + container.cueClockStart - base) (initPTS \(base) s)")
                    }
                }
            }
            return errors.sorted { $0.0 < $1.0 }
        }

        // MARK: - Following the playlists

        /// Reloads the media playlists of `renditions` every 400 ms in a task of its own and follows each with a
        /// `RenditionTracker`; also writes down each rendition's newest MSN at every reload.
        final class PlaylistFollower: Sendable {
            struct Observed: Sendable {
                var trackers: [String: RenditionTracker]
                var newest: [(at: Double, msns: [String: UInt64])] = []
            }
            private let observed: Mutex<Observed>
            private let task = Mutex<Task<Void, Never>?>(nil)

            init(client: HTTPClient, renditions: [String]) {
                observed = Mutex(
                    Observed(
                        trackers: Dictionary(uniqueKeysWithValues: renditions.map { ($0, RenditionTracker(name: $0)) }))
                )
                start(client: client, renditions: renditions)
            }

            private func start(client: HTTPClient, renditions: [String]) {
                let start = ContinuousClock.now
                let running = Task { [self] in
                    while !Task.isCancelled {
                        var newest: [String: UInt64] = [:]
                        for rendition in renditions {
                            let sent = (ContinuousClock.now - start).seconds
                            guard let response = try? await client.get("/live/\(channel)/\(rendition)/index.m3u8"),
                                response.status == 200, let playlist = try? MediaPlaylist.parse(response.text)
                            else { continue }
                            let received = (ContinuousClock.now - start).seconds
                            newest[rendition] = self.observed.withLock {
                                $0.trackers[rendition]!.observe(
                                    playlist, text: response.text, sent: sent, received: received)
                                return $0.trackers[rendition]!.lastMSN
                            }
                        }
                        let at = (ContinuousClock.now - start).seconds
                        self.observed.withLock { $0.newest.append((at, newest)) }
                        try? await Task.sleep(for: .milliseconds(400))
                    }
                }
                task.withLock { $0 = running }
            }

            /// What was seen so far.
            var snapshot: Observed { observed.withLock { $0 } }

            /// Stops reloading; returns what was seen.
            func finish() async -> Observed {
                let running = task.withLock { $0 }
                running?.cancel()
                await running?.value
                return snapshot
            }

            /// Waits until `condition` holds for what was seen (or `timeout` passes); returns whether it held.
            func wait(for timeout: Duration, until condition: (Observed) -> Bool) async -> Bool {
                let deadline = ContinuousClock.now + timeout
                while ContinuousClock.now < deadline {
                    if condition(snapshot) { return true }
                    try? await Task.sleep(for: .milliseconds(200))
                }
                return condition(snapshot)
            }
        }

        /// For every MSN every rendition listed: the same PDT, discontinuity sequence number, GAP-ness and
        /// DISCONTINUITY in all of them. Returns the problems and how many MSNs were compared.
        ///
        /// `cutSlot`: the one MSN whose pushes a SIGKILL of the encoder may have cut part way (ffmpeg PUTs a slot's
        /// renditions one after the other): there a rendition whose segment never arrived is a GAP while the others
        /// list theirs, as RFC 8216bis allows (GAP is per rendition, so a player switches to one that has the media).
        static func alignmentProblems(
            _ trackers: [String: RenditionTracker], cutSlot: UInt64? = nil
        ) -> (problems: [String], compared: Int) {
            guard let reference = trackers["lo"] else { return (["lo was never listed"], 0) }
            var problems: [String] = []
            let common = reference.msns.filter { msn in trackers.values.allSatisfy { $0.entries[msn] != nil } }
            for msn in common {
                let base = reference.entries[msn]!
                for name in renditions where name != "lo" {
                    guard let entry = trackers[name]?.entries[msn] else { continue }
                    if entry.programDateTimeMilliseconds != base.programDateTimeMilliseconds {
                        problems.append(
                            "MSN \(msn): PDT lo=\(base.programDateTimeMilliseconds ?? -1) "
                                + "\(name)=\(entry.programDateTimeMilliseconds ?? -1)")
                    }
                    if entry.discontinuitySequenceNumber != base.discontinuitySequenceNumber {
                        problems.append(
                            "MSN \(msn): DSN lo=\(base.discontinuitySequenceNumber) "
                                + "\(name)=\(entry.discontinuitySequenceNumber)"
                        )
                    }
                    if entry.gap != base.gap && msn != cutSlot {
                        problems.append("MSN \(msn): GAP lo=\(base.gap) \(name)=\(entry.gap)")
                    }
                    if entry.discontinuity != base.discontinuity {
                        problems.append(
                            "MSN \(msn): DISCONTINUITY lo=\(base.discontinuity) \(name)=\(entry.discontinuity)")
                    }
                }
            }
            return (problems, common.count)
        }

        /// One line per MSN: each rendition's GAP (G), DISCONTINUITY (D) and PDT, for the test's output.
        static func table(_ trackers: [String: RenditionTracker], msns: ClosedRange<UInt64>) -> String {
            msns.map { msn in
                "\(msn): "
                    + renditions.map { name in
                        guard let entry = trackers[name]?.entries[msn] else { return "\(name) -" }
                        return "\(name) \(entry.gap ? "G" : "")\(entry.discontinuity ? "D" : "")"
                            + "\(entry.programDateTimeMilliseconds.map { String($0 % 100_000) } ?? "?")"
                    }.joined(separator: " ")
            }.joined(separator: "\n")
        }
    }
}

extension EndToEndInBrowser.AlternateRenditionsTests {
    @Test("MPEG-TS: groups, ffmpeg records en+fr, three players with sound, aligned across a restart, bad hints 400")
    func demuxedTransportStream() async throws {
        try await OriginProcess.withRunning(configuration: Self.configuration, label: "alternate-ts") { origin in
            let client = HTTPClient(port: origin.port)
            let subtitles = origin.directory.appendingPathComponent("subs.srt")
            try Self.writeSubtitles(to: subtitles, sparse: false)
            var encoders: [ChildProcess] = []
            defer { for encoder in encoders { encoder.signal(SIGKILL) } }
            encoders.append(
                try Self.startDemuxedPush(
                    port: origin.port, subtitles: subtitles, container: .transportStream,
                    directory: origin.directory, label: "encoder-1"))
            let follower = PlaylistFollower(client: client, renditions: Self.renditions)

            // 1. The multivariant playlist.
            let multivariant = try await Self.awaitGroups(client: client, subtitles: true)
            print("alternate renditions (MPEG-TS): the multivariant playlist\n\(multivariant.text)")
            let problems = Self.problems(of: multivariant, subtitles: true, container: .transportStream)
            #expect(
                problems.isEmpty, "multivariant playlist:\n\(problems.joined(separator: "\n"))\n\(multivariant.text)")

            // 2. A served .vtt carries X-TIMESTAMP-MAP.
            let webVTT = try await Self.servedWebVTT(client: client)
            #expect(webVTT != nil, "no .vtt listed in lo-vtt/index.m3u8")
            if let webVTT {
                #expect(webVTT.text.hasPrefix("WEBVTT"), "\(webVTT.uri) does not start with WEBVTT:\n\(webVTT.text)")
                #expect(webVTT.contentType?.hasPrefix("text/vtt") == true, "\(webVTT.uri): \(webVTT.contentType ?? "")")
                let map = Self.timestampMap(webVTT.text)
                #expect(map != nil, "\(webVTT.uri) has no X-TIMESTAMP-MAP in its header:\n\(webVTT.text)")
                print("alternate renditions (MPEG-TS): lo-vtt/\(webVTT.uri) as served:\n\(webVTT.text)")
            }

            try await Self.checkTimestampMaps(client: client, container: .transportStream)

            // 3. ffmpeg reads the multivariant playlist while the browser plays.
            async let recording = Self.recordAndProbe(origin: origin, seconds: 8, label: "recorder-ts")
            let url = "\(origin.baseURL)/live/\(Self.channel)/index.m3u8"
            let report = try await BrowserPlayer.play(
                [
                    .init(player: .hlsjs, url: url, seconds: 16, subtitles: true, switchAudio: .init(to: "fr", at: 8)),
                    .init(player: .native, url: url, seconds: 8),
                    // VHS 1.9.3 may never start a demuxed stream (docs/alternate-renditions.md): run its queue on.
                    .init(player: .videojs, url: url, seconds: 8, subtitles: true, runStalledVHSQueues: true),
                ], directory: origin.directory, label: "browser-ts")
            let (streams, recorderLog) = try await recording
            print(
                "alternate renditions (MPEG-TS): ffmpeg recorded \(Self.describe(streams))"
            )
            #expect(streams.contains { $0.type == "video" && $0.codec == "h264" }, "\(streams) \(recorderLog)")
            Self.checkRecordedAudio(streams, log: recorderLog)
            Self.checkBrowsers(report, container: .transportStream, native: true, videojs: true)

            // 4. Encoder restart: stopped 8 s, started again.
            try await Task.sleep(for: .seconds(1))
            let beforeKill = follower.snapshot.trackers["lo"]?.lastMSN ?? 0
            encoders[0].signal(SIGKILL)
            try await Task.sleep(for: .seconds(8))
            encoders.append(
                try Self.startDemuxedPush(
                    port: origin.port, subtitles: subtitles, container: .transportStream,
                    directory: origin.directory, label: "encoder-2"))
            func joinMSN(_ observed: PlaylistFollower.Observed) -> UInt64? {
                guard let lo = observed.trackers["lo"],
                    let gap = lo.msns.first(where: { $0 > beforeKill && lo.entries[$0]!.gap })
                else { return nil }
                return lo.msns.first { $0 > gap && !lo.entries[$0]!.gap }
            }
            let joined = await follower.wait(for: .seconds(30)) { observed in
                guard let join = joinMSN(observed) else { return false }
                return Self.renditions.allSatisfy { (observed.trackers[$0]?.lastMSN ?? 0) >= join + 2 }
            }
            let observed = await follower.finish()
            #expect(joined, "the renditions did not list 3 segments after the restart within 30 s")
            // The slot the kill may have cut: the last one before the outage's first GAP in every rendition, and
            // only when some rendition lists media there (a slot of GAPs alone was no push in flight).
            let firstOutageSlot = observed.trackers["lo"]?.msns.first { msn in
                msn > beforeKill && Self.renditions.allSatisfy { observed.trackers[$0]?.entries[msn]?.gap == true }
            }
            let cutSlot = firstOutageSlot.map { $0 - 1 }.flatMap { msn in
                Self.renditions.contains { observed.trackers[$0]?.entries[msn]?.gap == false } ? msn : nil
            }
            let (alignment, compared) = Self.alignmentProblems(observed.trackers, cutSlot: cutSlot)
            #expect(
                alignment.isEmpty, "\(alignment.count) misalignments:\n\(alignment.prefix(30).joined(separator: "\n"))")
            #expect(compared >= 10, "only \(compared) MSNs listed by every rendition")
            #expect(firstOutageSlot != nil, "no MSN after \(beforeKill) is a GAP in every rendition")
            if let join = joinMSN(observed) {
                for rendition in Self.renditions {
                    let entry = observed.trackers[rendition]?.entries[join]
                    #expect(
                        entry?.discontinuity == true,
                        "\(rendition) MSN \(join) (first after the restart): \(String(describing: entry))")
                }
                let low = join > 8 ? join - 8 : 0
                print(
                    "alternate renditions (MPEG-TS) across the restart (G = GAP, D = DISCONTINUITY, PDT mod 100 s):\n"
                        + Self.table(observed.trackers, msns: low...(join + 2)))
            } else {
                Issue.record("no GAP and join after the kill in lo: \(observed.trackers["lo"]?.msns ?? [])")
            }
            for rendition in Self.renditions {
                let violations = (observed.trackers[rendition]?.violations ?? []).filter { !$0.contains("is named") }
                #expect(violations.isEmpty, "\(rendition): \(violations.prefix(10))")
            }

            // 5. Hints that must be refused leave the groups as they are.
            try await Self.checkRefusedHints(client: client)
            #expect(encoders.allSatisfy { $0.standardError.isEmpty }, "ffmpeg said: \(encoders.map(\.standardError))")
        }
    }

    /// Streams as "type codec language".
    static func describe(_ streams: [(type: String, codec: String, language: String?)]) -> [String] {
        streams.map { "\($0.type) \($0.codec) \($0.language ?? "-")" }
    }

    /// The recording has an AAC stream in English and one in French (ISO 639-1 or -2 tags: Matroska writes "eng").
    static func checkRecordedAudio(_ streams: [(type: String, codec: String, language: String?)], log: String) {
        let audio = streams.filter { $0.type == "audio" }
        let languages = Set(audio.compactMap { $0.language.map { String($0.prefix(2)) } })
        #expect(
            audio.count == 2 && audio.allSatisfy { $0.codec == "aac" } && languages == ["en", "fr"],
            "the recording's audio: \(streams) \(log)")
    }

    /// Three invalid hints, each answered 400, and the EXT-X-MEDIA lines unchanged afterwards.
    static func checkRefusedHints(client: HTTPClient) async throws {
        let before = try await client.get("/live/\(channel)/index.m3u8")
        let valid = """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="group_aud",NAME="audio_2",DEFAULT=YES,LANGUAGE="en",URI="en/index.m3u8"
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="group_aud",NAME="audio_3",DEFAULT=NO,LANGUAGE="fr",URI="fr/index.m3u8"
            #EXT-X-STREAM-INF:BANDWIDTH=75900,RESOLUTION=640x360,CODECS="avc1.42c01e,mp4a.40.2",AUDIO="group_aud"
            hi/index.m3u8

            """
        let invalid = [
            ("two DEFAULT=YES", valid.replacingOccurrences(of: "DEFAULT=NO", with: "DEFAULT=YES")),
            ("URI into another channel", valid.replacingOccurrences(of: "fr/index.m3u8", with: "../other/x.m3u8")),
            ("LANGUAGE english!", valid.replacingOccurrences(of: "LANGUAGE=\"en\"", with: "LANGUAGE=\"english!\"")),
        ]
        for (what, body) in invalid {
            let answer = try await client.request(
                "PUT", "/ingest/\(channel)/master.m3u8", headers: [("Content-Type", "application/vnd.apple.mpegurl")],
                body: Array(body.utf8))
            #expect(answer.status == 400, "hint with \(what): \(answer.status) \(answer.text)")
            print("alternate renditions: hint with \(what): \(answer.status) \(answer.text.prefix(200))")
        }
        let after = try await client.get("/live/\(channel)/index.m3u8")
        #expect(
            Multivariant(after.text).mediaLines == Multivariant(before.text).mediaLines,
            "the refused hints changed the groups:\nbefore\n\(before.text)\nafter\n\(after.text)")
    }

    /// What every player must have done (each that ran): play with sound; hls.js also two audio tracks, a switch to
    /// fr that keeps playing, one subtitle track and SRT cues at the right time.
    static func checkBrowsers(
        _ report: BrowserPlayer.Report, container: Container, denseCues: Bool = true, native: Bool, videojs: Bool
    ) {
        if let capabilities = report.capabilities {
            print(
                "alternate renditions (\(container.rawValue)): chromium \(report.browser ?? "?"): native HLS "
                    + "canPlayType \"\(capabilities.nativeHLS)\", MSE H.264 \(capabilities.h264), "
                    + "AAC \(capabilities.aac), "
                    + "HEVC \(capabilities.hevc)")
        }
        for played in report.runs ?? [] {
            print("alternate renditions (\(container.rawValue)): \(played.account)")
        }
        func run(_ kind: BrowserPlayer.Kind) -> BrowserPlayer.Played? { report.runs?.first { $0.player == kind } }
        func playedWithSound(_ played: BrowserPlayer.Played, minimum: Double) {
            #expect(played.error == nil, "\(played.account)")
            let all = played.summary?.all
            #expect((all?.played ?? 0) >= minimum, "currentTime did not advance \(minimum) s: \(played.account)")
            if (all?.played ?? 0) < minimum {
                let samples = (played.samples ?? []).suffix(4).map {
                    "t \($0.t) time \($0.currentTime ?? -1) paused \($0.paused ?? true) ready \($0.readyState ?? -1) buffered \($0.buffered ?? "")"
                        + ($0.stalledQueues.map { " stalled VHS queues \($0)" } ?? "")
                }
                let events = (played.state?.events ?? []).prefix(60).map { "\($0.at) \($0.kind) \($0.detail ?? "")" }
                print(
                    "alternate renditions: \(played.player.rawValue) did not play; last samples \(samples); events "
                        + "\(events); console \((played.console ?? []).prefix(20))")
            }
            #expect((all?.audioBytes ?? 0) > 0, "no audio decoded: \(played.account)")
            #expect((all?.audioPeak ?? 0) > 0.01, "silence: \(played.account)")
            #expect(played.state?.errors.isEmpty == true, "\(played.account)\n\(played.console ?? [])")
        }
        guard let hlsjs = run(.hlsjs) else {
            Issue.record("hls.js did not run")
            return
        }
        playedWithSound(hlsjs, minimum: 6)
        let audio = hlsjs.tracks?.audioTracks ?? []
        #expect(Set(audio.compactMap(\.lang)) == ["en", "fr"] && audio.count == 2, "hls.js audio tracks: \(audio)")
        #expect(hlsjs.switched?.found == true, "hls.js: no fr track to switch to")
        let frIndex = audio.firstIndex { $0.lang == "fr" }
        #expect(
            hlsjs.tracks?.audioTrack == frIndex, "hls.js audio track \(hlsjs.tracks?.audioTrack ?? -1) after the switch"
        )
        let after = hlsjs.summary?.afterSwitch
        #expect((after?.played ?? 0) >= 3, "hls.js stopped after the switch to fr: \(hlsjs.account)")
        #expect(
            (after?.audioBytes ?? 0) > 0 && (after?.audioPeak ?? 0) > 0.01,
            "no sound after the switch: \(hlsjs.account)")
        #expect(
            hlsjs.tracks?.subtitleTracks?.count == 1, "hls.js subtitle tracks: \(hlsjs.tracks?.subtitleTracks ?? [])")
        let errors = cueErrors(hlsjs, container: container)
        #expect(!denseCues || !errors.isEmpty, "hls.js showed no SRT cue: \(hlsjs.state?.cues ?? [:])")
        for (text, error) in errors {
            #expect(abs(error) <= 0.2, "cue off its media time by more than 0.2 s: \(text) \(error) s")
        }
        print(
            "alternate renditions (\(container.rawValue)): hls.js cues vs the SRT on the media timeline: "
                + errors.prefix(6).map { "\($0.text) \(String(format: "%+.3f", $0.error)) s" }.joined(separator: ", "))
        if native, let played = run(.native) {
            if report.capabilities?.nativeHLS.isEmpty == false {
                playedWithSound(played, minimum: 3)
            } else {
                print("alternate renditions: chromium has no native HLS (canPlayType is empty): not asserted")
            }
        }
        if videojs, let played = run(.videojs), played.error == nil {
            #expect(played.tracks?.audioTracks?.count == 2, "video.js audio tracks: \(played.account)")
            playedWithSound(played, minimum: 3)
        }
    }
}

extension EndToEndInBrowser.AlternateRenditionsTests {
    @Test("fMP4 H.264, a cue every 20 s: the window keeps moving, hls.js plays with sound, 2 audio + 1 subtitle track")
    func demuxedFragmentedMP4SparseCues() async throws {
        try await OriginProcess.withRunning(configuration: Self.configuration, label: "alternate-fmp4") { origin in
            let client = HTTPClient(port: origin.port)
            let subtitles = origin.directory.appendingPathComponent("sparse.srt")
            try Self.writeSubtitles(to: subtitles, sparse: true)
            let encoder = try Self.startDemuxedPush(
                port: origin.port, subtitles: subtitles, container: .fragmentedMP4, directory: origin.directory,
                label: "encoder")
            defer { encoder.signal(SIGKILL) }
            let follower = PlaylistFollower(client: client, renditions: Self.renditions)
            let multivariant = try await Self.awaitGroups(client: client, subtitles: true)
            print("alternate renditions (fMP4 H.264): the multivariant playlist\n\(multivariant.text)")
            let problems = Self.problems(of: multivariant, subtitles: true, container: .fragmentedMP4)
            try await Self.checkTimestampMaps(client: client, container: .fragmentedMP4)
            #expect(
                problems.isEmpty, "multivariant playlist:\n\(problems.joined(separator: "\n"))\n\(multivariant.text)")

            let url = "\(origin.baseURL)/live/\(Self.channel)/index.m3u8"
            let report = try await BrowserPlayer.play(
                [.init(player: .hlsjs, url: url, seconds: 16, subtitles: true, switchAudio: .init(to: "fr", at: 8))],
                directory: origin.directory, label: "browser-fmp4")
            Self.checkBrowsers(report, container: .fragmentedMP4, denseCues: false, native: false, videojs: false)

            // At least 24 s of following: more than one 20 s stretch without a cue.
            _ = await follower.wait(for: .seconds(30)) { observed in (observed.newest.last?.at ?? 0) >= 24 }
            let observed = await follower.finish()
            let (alignment, compared) = Self.alignmentProblems(observed.trackers)
            #expect(
                alignment.isEmpty, "\(alignment.count) misalignments:\n\(alignment.prefix(30).joined(separator: "\n"))")
            let subtitleTracker = observed.trackers["lo-vtt"]
            let videoTracker = observed.trackers["lo"]
            let listed = subtitleTracker?.msns ?? []
            #expect(listed.count >= 10, "lo-vtt listed \(listed)")
            #expect(
                listed.allSatisfy { subtitleTracker?.entries[$0]?.gap == false },
                "GAP entries in lo-vtt without an outage")
            // The subtitle rendition never holds the window: new MSNs keep coming every TD, give or take the follower
            // wait (TD/2, at most 1 s) and the encoder's jitter.
            for tracker in [videoTracker, subtitleTracker].compactMap({ $0 }) {
                #expect(
                    tracker.maxStalenessLowerBound < 4.0,
                    "\(tracker.name) went \(tracker.maxStalenessLowerBound) s without a new segment")
            }
            let behind = observed.newest.filter { sample in
                guard let video = sample.msns["lo"], let text = sample.msns["lo-vtt"] else { return false }
                return video > text + 1
            }
            #expect(behind.isEmpty, "lo-vtt behind lo: \(behind.prefix(5).map { "\($0.at) s: \($0.msns)" })")

            // The served .vtt files: every one with its map; the empty ones are ordinary entries.
            var empty = 0
            var withCues: [String] = []
            for msn in listed.suffix(12) {
                guard let uri = subtitleTracker?.entries[msn]?.uri else { continue }
                let response = try await client.get("/live/\(Self.channel)/lo-vtt/\(uri)")
                guard response.status == 200 else {
                    Issue.record("lo-vtt/\(uri): \(response.status)")
                    continue
                }
                #expect(
                    Self.timestampMap(response.text) != nil, "lo-vtt/\(uri) without X-TIMESTAMP-MAP:\n\(response.text)")
                if response.text.contains("-->") { withCues.append(uri) } else { empty += 1 }
            }
            #expect(empty >= 3, "\(empty) empty cue segments in the last 12 of lo-vtt")
            print(
                "alternate renditions (fMP4 H.264, sparse cues): \(compared) MSNs aligned in all renditions, lo-vtt "
                    + "longest wait \(String(format: "%.1f", subtitleTracker?.maxStalenessLowerBound ?? 0))-"
                    + "\(String(format: "%.1f", subtitleTracker?.maxStalenessUpperBound ?? 0)) s, last 12 .vtt: "
                    + "\(empty) empty, cues in \(withCues)")
            #expect(encoder.standardError.isEmpty, "ffmpeg said: \(encoder.standardError)")
        }
    }

    @Test("fMP4 HEVC: the groups with hvc1 and mp4a in CODECS; ffmpeg records HEVC with English and French audio")
    func demuxedHEVC() async throws {
        try await OriginProcess.withRunning(configuration: Self.configuration, label: "alternate-hevc") { origin in
            let client = HTTPClient(port: origin.port)
            let subtitles = origin.directory.appendingPathComponent("subs.srt")
            try Self.writeSubtitles(to: subtitles, sparse: false)
            let encoder = try Self.startDemuxedPush(
                port: origin.port, subtitles: subtitles, container: .fragmentedMP4HEVC, directory: origin.directory,
                label: "encoder")
            defer { encoder.signal(SIGKILL) }
            let multivariant = try await Self.awaitGroups(client: client, subtitles: true)
            print("alternate renditions (fMP4 HEVC): the multivariant playlist\n\(multivariant.text)")
            let problems = Self.problems(of: multivariant, subtitles: true, container: .fragmentedMP4HEVC)
            try await Self.checkTimestampMaps(client: client, container: .fragmentedMP4HEVC)
            #expect(
                problems.isEmpty, "multivariant playlist:\n\(problems.joined(separator: "\n"))\n\(multivariant.text)")
            let webVTT = try await Self.servedWebVTT(client: client)
            #expect(webVTT.map { Self.timestampMap($0.text) != nil } == true, "lo-vtt: \(String(describing: webVTT))")
            if let webVTT { print("alternate renditions (fMP4 HEVC): lo-vtt/\(webVTT.uri) as served:\n\(webVTT.text)") }
            let (streams, log) = try await Self.recordAndProbe(origin: origin, seconds: 6, label: "recorder-hevc")
            print(
                "alternate renditions (fMP4 HEVC): ffmpeg recorded \(Self.describe(streams))"
            )
            #expect(streams.contains { $0.type == "video" && $0.codec == "hevc" }, "\(streams) \(log)")
            Self.checkRecordedAudio(streams, log: log)
            #expect(encoder.standardError.isEmpty, "ffmpeg said: \(encoder.standardError)")
        }
    }
}
