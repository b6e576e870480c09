import Foundation
import Glibc
import TestSupport

/// GStreamer's playbin as a live HLS player: `/usr/bin/python3` with the GObject bindings (Debian's python3-gst-1.0;
/// hlsdemux, tsdemux and h264parse from gstreamer1.0-plugins-bad, souphttpsrc from -good, avdec_h264 from -libav).
/// It plays a URL for a number of seconds into fake sinks that run on the clock like a screen and speakers, counts the
/// decoded video frames and audio buffers, and prints a JSON summary with every error, warning and end of stream the
/// pipeline posted.
enum GStreamerPlayer {
    /// Debian's Python, which python3-gst-1.0 installs into (a `python3` earlier on the PATH may be another one).
    static let python = URL(fileURLWithPath: "/usr/bin/python3")

    /// The player script: `python3 -c SCRIPT URL SECONDS`. Exits 0 when the pipeline posted no ERROR and no EOS.
    static let script = #"""
        import json, sys, time
        import gi
        gi.require_version("Gst", "1.0")
        from gi.repository import GLib, Gst

        Gst.init(None)
        url, seconds = sys.argv[1], float(sys.argv[2])
        summary = {"errors": [], "warnings": [], "eos": False, "video": 0, "audio": 0, "samples": [],
                   "maxVideoStall": 0.0, "started": time.time()}
        last_video = [None]

        def sink(kind):
            element = Gst.ElementFactory.make("fakesink", kind)
            element.set_property("sync", True)
            element.set_property("signal-handoffs", True)
            def handoff(_element, _buffer, _pad):
                summary[kind] += 1
                if kind == "video":
                    now = time.time()
                    if last_video[0] is not None:
                        summary["maxVideoStall"] = max(summary["maxVideoStall"], now - last_video[0])
                    last_video[0] = now
            element.connect("handoff", handoff)
            return element

        player = Gst.ElementFactory.make("playbin", "player")
        if player is None:
            print(json.dumps({"errors": ["no playbin: install gstreamer1.0-plugins-base"]}))
            sys.exit(2)
        player.set_property("uri", url)
        player.set_property("video-sink", sink("video"))
        player.set_property("audio-sink", sink("audio"))
        loop = GLib.MainLoop()

        def on_message(_bus, message):
            if message.type == Gst.MessageType.ERROR:
                error, debug = message.parse_error()
                summary["errors"].append("%s: %s (%s)" % (message.src.get_name(), error.message, debug))
                loop.quit()
            elif message.type == Gst.MessageType.WARNING:
                warning, debug = message.parse_warning()
                summary["warnings"].append("%s: %s (%s)" % (message.src.get_name(), warning.message, debug))
            elif message.type == Gst.MessageType.EOS:
                summary["eos"] = True
                loop.quit()
            return True

        def sample():
            ok, position = player.query_position(Gst.Format.TIME)
            summary["samples"].append([time.time(), summary["video"], summary["audio"],
                                       position / 1e9 if ok else None])
            return True

        bus = player.get_bus()
        bus.add_signal_watch()
        bus.connect("message", on_message)
        GLib.timeout_add(500, sample)
        GLib.timeout_add(int(seconds * 1000), loop.quit)
        player.set_state(Gst.State.PLAYING)
        loop.run()
        sample()
        player.set_state(Gst.State.NULL)
        summary["ended"] = time.time()
        print(json.dumps(summary))
        sys.exit(1 if summary["errors"] or summary["eos"] else 0)
        """#

    /// What the player printed at the end.
    struct Summary: Decodable {
        let errors: [String]
        let warnings: [String]
        let eos: Bool
        /// Video frames and audio buffers that reached the sinks, decoded.
        let video: Int
        let audio: Int
        /// Every 500 ms: wall clock (epoch seconds), video frames, audio buffers, position in seconds.
        let samples: [[Double?]]
        /// The longest wall-clock time between two decoded video frames, seconds.
        let maxVideoStall: Double
        let started: Double
        let ended: Double

        /// Video frames decoded after `epochSeconds` (wall clock).
        func videoFrames(after epochSeconds: Double) -> Int {
            let before = samples.last { ($0.first ?? nil).map { $0 <= epochSeconds } ?? false }
            let atStart = before.flatMap { $0.count > 1 ? $0[1] : nil }.map { Int($0) } ?? 0
            return video - atStart
        }
    }

    /// Fails with what to install when python3-gst-1.0 or the plugins playbin needs for HLS are missing.
    static func requireInstalled(in directory: URL) async throws {
        let check = """
            import gi
            gi.require_version("Gst", "1.0")
            from gi.repository import Gst
            Gst.init(None)
            missing = [n for n in ["playbin", "hlsdemux", "souphttpsrc", "tsdemux", "h264parse", "avdec_h264",
                                   "avdec_aac", "fakesink"] if Gst.ElementFactory.find(n) is None]
            print(" ".join(missing))
            """
        let child = try ChildProcess(
            executable: python, arguments: ["-c", check], directory: directory, label: "gstreamer-check")
        let status = await child.wait(timeout: .seconds(60))
        let missing = child.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        guard status == 0, missing.isEmpty else {
            throw EndToEndError(
                "GStreamer is not installed for \(python.path) (missing: \(missing) \(child.standardError)): "
                    + "apt-get install "
                    + "python3-gst-1.0 gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad "
                    + "gstreamer1.0-libav (scripts/test does)")
        }
    }

    /// Starts playbin on `url` for `seconds` of wall-clock time.
    static func start(url: String, seconds: Int, directory: URL, label: String) throws -> ChildProcess {
        try ChildProcess(
            executable: python, arguments: ["-c", script, url, "\(seconds)"], directory: directory, label: label)
    }

    /// The summary a finished player printed.
    static func summary(of player: ChildProcess) throws -> Summary {
        guard let line = player.standardOutput.split(separator: "\n").last(where: { $0.hasPrefix("{") }) else {
            throw EndToEndError("GStreamer printed no summary; stderr:\n\(player.standardError)")
        }
        return try JSONDecoder().decode(Summary.self, from: Data(line.utf8))
    }
}
