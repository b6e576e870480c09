import Foundation
import Glibc
import HLSPlaylist
import Synchronization
import TestSupport
import Testing

extension EndToEndInBrowser {
    /// A new user's outage, from outside: ffmpeg's HLS muxer pushes two renditions (30 fps, `-g 60`, AAC) with PUT, is
    /// stopped mid-segment and started again 12 s later, while hls.js 1.6, chromium's own HLS and video.js 7.5 VHS
    /// play the channel at once in Debian's chromium. SIGTERM makes ffmpeg flush a short last segment whose audio ends
    /// about 0.6 s before its video (the join the fillers must continue track by track); SIGKILL flushes nothing.
    /// Every player must keep playing after the outage (currentTime moves on) without a fatal error.
    @Suite("End to end: browsers play through an encoder stopped mid-segment", .tags(.endToEnd), .serialized)
    struct EncoderStopBrowserTests {
        static let configuration = """
            logLevel: info
            ingest:
              autoCreate: false
            channels:
              - name: tv
                segmentDuration: 2
                window: { segments: 6 }
                gapResponse: filler
                renditions: [{name: hi}, {name: lo}]
            """

        /// One ffmpeg pushing `hi` (640x360) and `lo` (320x180) as the issue's user did: 30 fps, a keyframe every
        /// 60 frames (so a segment every 2 s from the encoder's start), AAC 48 kHz.
        static func startEncoder(port: Int, directory: URL, label: String) throws -> ChildProcess {
            guard let ffmpeg = ChildProcess.locate("ffmpeg"), let python = ChildProcess.locate("python3") else {
                throw EndToEndError("ffmpeg or python3 is not on the PATH")
            }
            // The test process hands its children a signal mask with SIGTERM blocked: ffmpeg would never see it.
            // python3 clears the mask and becomes ffmpeg (same process, so the signal reaches it).
            var arguments = [
                "-c",
                "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); "
                    + "os.execv(sys.argv[1], sys.argv[1:])", ffmpeg.path,
                "-nostdin", "-v", "error", "-re",
                "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30",
                "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
            ]
            for (name, size, bitrate) in [("hi", "640x360", "600k"), ("lo", "320x180", "200k")] {
                arguments += [
                    "-map", "0:v", "-map", "1:a", "-c:v", "libx264", "-preset", "veryfast", "-g", "60",
                    "-pix_fmt", "yuv420p", "-s", size, "-b:v", bitrate, "-c:a", "aac", "-b:a", "64k",
                    "-f", "hls", "-hls_time", "2", "-hls_list_size", "6", "-method", "PUT",
                    "http://127.0.0.1:\(port)/ingest/tv/\(name)/index.m3u8",
                ]
            }
            return try ChildProcess(executable: python, arguments: arguments, directory: directory, label: label)
        }

        @Test("SIGTERM mid-segment (a short last segment, its audio ending first): hls.js, native, video.js play on")
        func stoppedWithSIGTERM() async throws {
            try await outage(signal: SIGTERM, name: "sigterm")
        }

        @Test("SIGKILL mid-segment (nothing flushed): hls.js, native and video.js play on")
        func killedWithSIGKILL() async throws {
            try await outage(signal: SIGKILL, name: "sigkill")
        }

        func outage(signal: Int32, name: String) async throws {
            try await OriginProcess.withRunning(configuration: Self.configuration, label: "stop-\(name)") { origin in
                let client = HTTPClient(port: origin.port)
                let encoders = Mutex<[ChildProcess]>([])
                defer { for encoder in encoders.withLock({ $0 }) { encoder.signal(SIGKILL) } }
                let first = try Self.startEncoder(port: origin.port, directory: origin.directory, label: "ffmpeg-1")
                let encoderStart = ContinuousClock.now
                encoders.withLock { $0.append(first) }
                _ = try await ProtectedChannels.awaitPlaylist(
                    client: client, path: "/live/tv/hi/index.m3u8", entries: 3)

                // The outage, while the players play: stop the encoder 1 s into a segment, about 9 s from now (the
                // players have started by then), and start another 12 s later.
                let times = Mutex<(stopped: Double, restarted: Double)>((0, 0))
                // What the outage task read 5 s in: the playlist, the encoder's last segment and the first filler.
                struct During: Sendable {
                    let playlist: String
                    let last: RawHTTPResponse
                    let filler: RawHTTPResponse
                }
                let outage = Task { () throws -> During in
                    let sinceStart = (ContinuousClock.now - encoderStart).seconds
                    let segments = ((sinceStart + 9) / 2).rounded(.up)
                    try await Task.sleep(until: encoderStart + .seconds(segments * 2 + 1), clock: .continuous)
                    first.signal(signal)
                    times.withLock { $0.stopped = Date().timeIntervalSince1970 }
                    guard await first.wait(timeout: .seconds(4)) != nil else {
                        throw EndToEndError("the encoder did not exit within 4 s of signal \(signal)")
                    }
                    // The playlist 5 s into the outage: the encoder's last segment, then GAP entries.
                    try await Task.sleep(for: .seconds(5))
                    let during = try await client.get("/live/tv/hi/index.m3u8").text
                    // The outage's first GAP entry follows the encoder's last segment (a GAP further up, from a slow
                    // start on a busy machine, is another outage).
                    let entries = try MediaPlaylist.parse(during).segments
                    let lastReal = entries.lastIndex { !$0.gap } ?? 0
                    let lastAnswer = try await client.get("/live/tv/hi/\(entries[lastReal].uri)")
                    let fillerURI = lastReal + 1 < entries.count ? entries[lastReal + 1].uri : "none"
                    let fillerAnswer = try await client.get("/live/tv/hi/\(fillerURI)")
                    try await Task.sleep(for: .seconds(7))
                    let second = try Self.startEncoder(
                        port: origin.port, directory: origin.directory, label: "ffmpeg-2")
                    encoders.withLock { $0.append(second) }
                    times.withLock { $0.restarted = Date().timeIntervalSince1970 }
                    return During(playlist: during, last: lastAnswer, filler: fillerAnswer)
                }
                let url = "\(origin.baseURL)/live/tv/index.m3u8"
                let report = try await BrowserPlayer.playOnce(
                    [BrowserPlayer.Kind.hlsjs, .native, .videojs].map {
                        BrowserPlayer.Run(player: $0, url: url, seconds: 42, requests: true)
                    }, directory: origin.directory, label: "stop-\(name)-players", parallel: true)
                let read = try await outage.value
                let during = read.playlist
                let (stopped, restarted) = times.withLock { $0 }

                // The scenario happened: the encoder's last segment before the GAP entries was cut short by SIGTERM
                // (SIGKILL flushes nothing, so the last one is whole).
                let playlist = try MediaPlaylist.parse(during)
                // The outage's first GAP entry follows the encoder's last segment (a GAP further up, from a slow
                // start on a busy machine, is another outage).
                let lastReal = try #require(playlist.segments.lastIndex { !$0.gap }, "no segment:\n\(during)")
                let firstGap = lastReal + 1
                try #require(firstGap < playlist.segments.count, "no GAP entry after the last segment:\n\(during)")
                let last = playlist.segments[lastReal]
                if signal == SIGTERM {
                    #expect(last.duration < 1.9, "SIGTERM 1 s into a segment flushes a short one:\n\(during)")
                }
                // The join as ffprobe reads the origin's answers: the first GAP URL's filler starts each track
                // where that track of the encoder's last segment ended (no hole in the audio, no overlap).
                let realAnswer = read.last
                let fillerAnswer = read.filler
                try #require(realAnswer.status == 200 && fillerAnswer.status == 200, "\(last.uri), GAP after it")
                let real = try await FFmpeg.probeSegment(realAnswer.body, in: origin.directory, name: "last.ts")
                let filler = try await FFmpeg.probeSegment(fillerAnswer.body, in: origin.directory, name: "filler.ts")
                let realAudio = try #require(real.audio)
                let realVideo = try #require(real.video)
                #expect(
                    filler.audio?.firstPTS == realAudio.endPTS,
                    "audio: \(realAudio) then \(String(describing: filler.audio))")
                #expect(
                    filler.video?.firstPTS == realVideo.endPTS,
                    "video: \(realVideo) then \(String(describing: filler.video))")
                if signal == SIGTERM {
                    #expect(realVideo.endPTS - realAudio.endPTS > 9_000, "the short segment's audio ends first")
                }

                let gapURIs = Set(playlist.segments.filter(\.gap).map(\.uri))
                var accounts: [String] = []
                for played in report.runs ?? [] {
                    let samples = (played.samples ?? []).filter { $0.wallClock != nil && $0.currentTime != nil }
                    // After the outage: from 8 s after the restart (the new encoder's first segments are listed)
                    // to the end, currentTime must move at least half as fast as the clock.
                    let after = samples.filter { $0.wallClock! >= restarted + 8 }
                    let wall = (after.last?.wallClock ?? 0) - (after.first?.wallClock ?? 0)
                    let moved = (after.last?.currentTime ?? 0) - (after.first?.currentTime ?? 0)
                    // The longest time currentTime stood still once playing.
                    var longest = 0.0
                    var since: Double?
                    for (before, sample) in zip(samples, samples.dropFirst()) {
                        if sample.currentTime! - before.currentTime! > 0.1 {
                            since = nil
                        } else {
                            since = since ?? before.wallClock!
                            longest = max(longest, sample.wallClock! - since!)
                        }
                    }
                    let gapRequests = (played.network?.requests ?? []).filter {
                        gapURIs.contains($0.url.split(separator: "/").last.map(String.init) ?? "")
                    }.count
                    let account =
                        "\(played.player.rawValue): played \(String(format: "%.1f", played.summary?.all.played ?? 0)) s, "
                        + "\(String(format: "%.1f", moved)) s in the last \(String(format: "%.1f", wall)) s, "
                        + "longest still \(String(format: "%.1f", longest)) s, \(gapRequests) filler requests, "
                        + "errors \(played.state?.errors ?? []) \(played.error ?? "")"
                        + (played.vhsQueues.isEmpty ? "" : ", \(played.vhsQueues)")
                    accounts.append(account)
                    #expect(played.error == nil, "\(account)")
                    #expect(wall >= 6, "too little time after the restart: \(account)")
                    // Chromium 156's own HLS never fetches a GAP URL; it used to die here in about half the runs
                    // under SIGTERM, re-appending the short last segment at a reload that still found it last. The
                    // origin now lists a segment cut short with the entry after it (docs/outages.md).
                    #expect(played.state?.errors.isEmpty ?? true, "\(account)")
                    #expect(moved >= wall / 2, "\(account)\nlast samples: \(samples.suffix(6).map(\.currentTime!))")
                }
                #expect(report.runs?.count == 3)
                print(
                    "encoder \(name) 1 s into a segment (last real EXTINF \(last.duration)), restarted "
                        + "\(String(format: "%.1f", restarted - stopped)) s later:\n  "
                        + accounts.joined(separator: "\n  "))
            }
        }
    }
}
