import Foundation
import Glibc
import TestSupport

/// Real browser players: Debian's chromium, headless, driven by Playwright (`scripts/e2e-browser/play.py`) with
/// hls.js 1.6 (from the gradio wheel), chromium's own HLS, or video.js 7.5 VHS. `scripts/e2e-browser/install` lays
/// down chromium, the Playwright venv and the players; it runs here when something is missing.
enum BrowserPlayer {
    /// The players the page can attach.
    enum Kind: String, Codable, Sendable {
        case hlsjs, native, videojs
    }

    /// One playback: a player, a URL, how long, and what to do meanwhile.
    struct Run: Encodable, Sendable {
        struct AudioSwitch: Encodable, Sendable {
            /// LANGUAGE of the audio track to select.
            let to: String
            /// Seconds after the page was loaded.
            let at: Double
        }
        let player: Kind
        let url: String
        let seconds: Double
        /// Turns the first subtitle or caption track on as soon as the player lists one.
        var subtitles = false
        var switchAudio: AudioSwitch?
        /// Seconds between samples (play.py's default: 0.5).
        var interval: Double?
        /// Lists every response (time, status, URL) in `Played.network.requests`.
        var requests = false
        /// hls.js: plays up to this many times faster while behind its live latency target
        /// (`maxLiveSyncPlaybackRate`; nil: hls.js's default 1, it never catches up).
        var catchUpRate: Double?
        /// hls.js: seconds its latency target grows by at each stall (`liveSyncOnStallIncrease`; nil: hls.js's
        /// default 1 s, up to one target duration).
        var stallIncrease: Double?
        /// hls.js sends CMCD (CTA-5004): `query` (the `CMCD` argument) or `headers` (`CMCD-*`); nil: none.
        var cmcd: String?
        /// video.js: the harness runs a VHS 1.9.3 queue that stalled (videojs/http-streaming#480) on, as VHS 1.10.2
        /// does, and lists each time in `State.vhsQueueRuns`. Only AlternateRenditionsTests sets it
        /// (docs/alternate-renditions.md); elsewhere a stall stays stalled for the test to see.
        var runStalledVHSQueues = false
    }

    /// What `play.py` printed.
    struct Report: Decodable, Sendable {
        struct Capabilities: Decodable, Sendable {
            let userAgent: String
            /// `canPlayType('application/vnd.apple.mpegurl')`: "", "maybe" or "probably".
            let nativeHLS: String
            let h264: Bool
            let aac: Bool
            let hevc: Bool
        }
        let browser: String?
        let capabilities: Capabilities?
        var runs: [Played]?
        let error: String?
    }

    /// Plays `runs` in one browser; a run in which the player never started (hls.js 1.6.15 now and then never seeks
    /// to its start position: readyState stays 1 at currentTime 0 with everything buffered seconds later, seen in 4
    /// of 19 demuxed fMP4 runs here) is played once more in a fresh browser, and that is said in the output.
    static func play(_ runs: [Run], directory: URL, label: String) async throws -> Report {
        var report = try await playOnce(runs, directory: directory, label: label)
        for (index, played) in (report.runs ?? []).enumerated() where played.neverStartedAhead {
            print("\(label): \(played.player.rawValue) never started (\(played.startStall)); played once more")
            let again = try await playOnce([runs[index]], directory: directory, label: "\(label)-again-\(index)")
            if let replay = again.runs?.first { report.runs?[index] = replay }
        }
        return report
    }

    /// One run's report.
    struct Played: Decodable, Sendable {
        struct Sample: Decodable, Sendable {
            let t: Double
            let currentTime: Double?
            let paused: Bool?
            let readyState: Int?
            /// The element's buffered ranges, `start-end` separated by spaces.
            let buffered: String?
            let audioBytes: Int?
            let audioPeak: Double
            /// The browser's clock (seconds since 1970) when the sample was taken.
            let wallClock: Double?
            /// hls.js: `hls.latency`, seconds behind the live edge as hls.js estimates it.
            let latency: Double?
            /// hls.js: `hls.targetLatency`.
            let targetLatency: Double?
            /// hls.js: the wall clock minus `hls.playingDate` (the PROGRAM-DATE-TIME being shown).
            let dateLatency: Double?
            /// The end of the element's seekable range.
            let seekableEnd: Double?
            /// video.js: the VHS segment loaders ("main", "audio") whose operation queue stalled with an operation it
            /// will never run (harness.js `stalledVHSQueues`); nil for the other players.
            let stalledQueues: [String]?
        }
        struct Span: Decodable, Sendable {
            /// How far currentTime moved, seconds.
            let played: Double
            /// Audio bytes the decoder reported meanwhile.
            let audioBytes: Int?
            /// The loudest sample the analyser saw (0 = silence).
            let audioPeak: Double
        }
        struct Summary: Decodable, Sendable {
            let all: Span
            let afterSwitch: Span?
        }
        struct Track: Decodable, Sendable {
            let label: String?
            let language: String?
            let kind: String?
            let enabled: Bool?
            let mode: String?
        }
        struct HlsTrack: Decodable, Sendable {
            let name: String?
            let lang: String?
        }
        struct Tracks: Decodable, Sendable {
            let nativeAudioTracks: [Track]?
            let textTracks: [Track]?
            /// hls.js: `hls.audioTracks`; video.js: `player.audioTracks()` (decoded as names and languages).
            let audioTracks: [HlsTrack]?
            let audioTrack: Int?
            let subtitleTracks: [HlsTrack]?
            let subtitleTrack: Int?
        }
        struct Cue: Decodable, Sendable {
            let start: Double
            let end: Double
            let text: String
        }
        struct InitPTS: Decodable, Sendable {
            let cc: Int
            /// A fraction in fMP4 (hls.js scales it to the track's timescale).
            let initPTS: Double
            let timescale: Double
        }
        struct Event: Decodable, Sendable {
            let at: Double
            let kind: String
            let detail: String?
        }
        struct State: Decodable, Sendable {
            let errors: [String]
            /// Element and player events in order (at most 400).
            let events: [Event]?
            /// "kind/label/language" -> every cue seen.
            let cues: [String: [Cue]]
            let initPTS: [InitPTS]
            /// video.js: each time the harness ran a stalled VHS 1.9.3 queue on, as VHS 1.10.2 does
            /// (videojs/http-streaming#480; harness.js `stalledVHSQueues`): "main at 2.41 s: 1 queued".
            let vhsQueueRuns: [String]?
        }
        struct Switched: Decodable, Sendable {
            let at: Double
            let found: Bool
        }
        let player: Kind
        let url: String
        let error: String?
        let samples: [Sample]?
        let tracks: Tracks?
        let state: State?
        let switched: Switched?
        let summary: Summary?
        let console: [String]?
        let elapsed: Double?
        /// Responses the page received, and the refused (>= 400) or failed (status 0) requests among them.
        let network: Network?

        struct Network: Decodable, Sendable {
            struct Failure: Decodable, Sendable {
                let status: Int
                let url: String
                let failure: String?
            }
            struct Request: Decodable, Sendable {
                /// Seconds after the page was loaded.
                let t: Double
                /// The wall clock, seconds since 1970.
                let wall: Double
                /// When the browser sent the request (wall clock, seconds since 1970), if its timing was known.
                let sent: Double?
                let status: Int
                let url: String
                /// The X-Cache-Status header (a cache in front of the origin: HIT, MISS, ...).
                let cache: String?
            }
            let responses: Int
            let failed: [Failure]
            /// Every response, when the run asked for them.
            let requests: [Request]?
        }

        /// True when the element sat at readyState 1 near time 0 to the end while its buffer began over a second
        /// later: the player never moved to what it had buffered.
        var neverStartedAhead: Bool {
            guard let last = samples?.last, let time = last.currentTime, time < 1, (last.readyState ?? 4) <= 1,
                let first = last.buffered?.split(separator: " ").first?.split(separator: "-").first,
                let start = Double(first)
            else { return false }
            return start > time + 1
        }

        /// The last sample's time, readyState and buffered ranges.
        var startStall: String {
            guard let last = samples?.last else { return "no samples" }
            return "currentTime \(last.currentTime ?? -1), readyState \(last.readyState ?? -1), buffered "
                + (last.buffered ?? "")
        }

        /// video.js: the samples that found a stalled VHS queue and each time the harness ran one on
        /// (`Run.runStalledVHSQueues`), for every summary of a video.js run; "" when there was neither.
        var vhsQueues: String {
            let stalled = (samples ?? []).filter { !($0.stalledQueues ?? []).isEmpty }
            let runs = state?.vhsQueueRuns ?? []
            var parts: [String] = []
            if let first = stalled.first {
                parts.append("VHS 1.9.3 queue stalled in \(stalled.count) samples from t \(first.t) s "
                    + "(\(first.stalledQueues ?? []))")
            }
            if !runs.isEmpty {
                parts.append("VHS 1.9.3 queue stalled and run on by the harness (videojs/http-streaming#480): \(runs)")
            }
            return parts.joined(separator: ", ")
        }

        /// A short account for test output and failure messages.
        var account: String {
            guard error == nil else { return "\(player.rawValue): failed to run: \(error!)" }
            let all = summary?.all
            var parts = [
                "\(player.rawValue): played \(String(format: "%.1f", all?.played ?? 0)) s",
                "audio bytes \(all?.audioBytes.map(String.init) ?? "n/a")",
                "peak \(String(format: "%.3f", all?.audioPeak ?? 0))",
            ]
            if let tracks {
                if let audio = tracks.audioTracks {
                    parts.append("audio tracks \(audio.map { "\($0.name ?? "?")/\($0.lang ?? "-")" })")
                }
                if let native = tracks.nativeAudioTracks {
                    parts.append("element audioTracks \(native.map { "\($0.label ?? "?")/\($0.language ?? "-")" })")
                }
                if let subtitles = tracks.subtitleTracks {
                    parts.append("subtitle tracks \(subtitles.map { "\($0.name ?? "?")/\($0.lang ?? "-")" })")
                }
                parts.append(
                    "text tracks \((tracks.textTracks ?? []).map { "\($0.kind ?? "?"):\($0.label ?? "?")" })")
            }
            if let after = summary?.afterSwitch {
                parts.append(
                    "after the audio switch: played \(String(format: "%.1f", after.played)) s, audio bytes "
                        + "\(after.audioBytes.map(String.init) ?? "n/a"), "
                        + "peak \(String(format: "%.3f", after.audioPeak))"
                )
            }
            let cueCount = state?.cues.values.map(\.count).reduce(0, +) ?? 0
            parts.append("\(cueCount) cues")
            if !vhsQueues.isEmpty { parts.append(vhsQueues) }
            if let errors = state?.errors, !errors.isEmpty { parts.append("errors \(errors)") }
            return parts.joined(separator: ", ")
        }
    }

    /// Runs `scripts/e2e-browser/install` (chromium, Playwright, hls.js, video.js) unless everything is there;
    /// returns the players' directory.
    static func install(directory: URL) async throws -> URL {
        let root = OriginProcess.packageRoot
        let assets = root.appendingPathComponent(".build/e2e-browser/assets")
        let python = root.appendingPathComponent(".build/browser-venv/bin/python")
        let ready =
            FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium")
            && FileManager.default.isExecutableFile(atPath: python.path)
            && FileManager.default.fileExists(atPath: assets.appendingPathComponent("hls.js").path)
            && FileManager.default.fileExists(atPath: assets.appendingPathComponent("video.js").path)
        if ready { return assets }
        let installed = try await ChildProcess.run(
            "/bin/bash", [root.appendingPathComponent("scripts/e2e-browser/install").path], in: directory,
            timeout: .seconds(600))
        guard installed.status == 0 else {
            throw EndToEndError("scripts/e2e-browser/install failed (\(installed.status)): \(installed.standardError)")
        }
        return assets
    }

    /// Plays `runs` one after the other in one chromium (`parallel`: all at once, each in a page of its own, so
    /// several players see the same event); returns its report.
    static func playOnce(_ runs: [Run], directory: URL, label: String, parallel: Bool = false) async throws -> Report {
        let assets = try await install(directory: directory)
        let root = OriginProcess.packageRoot
        struct Spec: Encodable {
            let assets: String
            let runs: [Run]
            let parallel: Bool
        }
        let spec = directory.appendingPathComponent("\(label).json")
        try JSONEncoder().encode(Spec(assets: assets.path, runs: runs, parallel: parallel)).write(to: spec)
        let seconds = parallel ? runs.map(\.seconds).max() ?? 0 : runs.map(\.seconds).reduce(0, +)
        let child = try ChildProcess(
            executable: root.appendingPathComponent(".build/browser-venv/bin/python"),
            arguments: [root.appendingPathComponent("scripts/e2e-browser/play.py").path, spec.path],
            directory: directory, label: label)
        guard let status = await child.wait(timeout: .seconds(Int64(seconds) + 30 + 10 * Int64(runs.count))) else {
            child.signal(SIGKILL)
            _ = await child.wait(timeout: .seconds(5))
            throw EndToEndError("play.py did not finish; stderr:\n\(child.standardError.suffix(3000))")
        }
        let output = child.standardOutput
        let report: Report
        do {
            report = try JSONDecoder().decode(Report.self, from: Data(output.utf8))
        } catch {
            throw EndToEndError(
                "play.py exited \(status) without a report (\(error)); stdout:\n\(output.suffix(2000))\nstderr:\n"
                    + child.standardError.suffix(3000))
        }
        if let error = report.error { throw EndToEndError("play.py: \(error)") }
        return report
    }
}
