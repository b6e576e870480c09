#!/usr/bin/env python3
"""Plays HLS URLs in Debian's chromium (headless, driven by Playwright) with hls.js, the browser's own HLS or
video.js VHS, and prints one JSON report on stdout: what each player exposed (audio and subtitle tracks, cues) and
how it played (currentTime, decoded audio bytes, audio level), sampled every half second.

    play.py SPEC.json          SPEC: {"assets": DIR, "runs": [RUN, ...], "parallel": false}
                               "parallel": true plays every run at once, each in a page of its own (one outage
                               seen by several players); else one after the other
    RUN: {"player": "hlsjs"|"native"|"videojs", "url": URL, "seconds": 20,
          "interval": 0.5,                          seconds between samples
          "requests": true,                         list every response (time, status, URL) in the report
          "subtitles": true,                        turn the first subtitle/caption track on once tracks are known
          "switchAudio": {"to": "fr", "at": 10},    select that language's audio track N seconds in
          "catchUpRate": 1.5,                       hls.js maxLiveSyncPlaybackRate (catch up to its latency target)
          "stallIncrease": 0,                       hls.js liveSyncOnStallIncrease (target growth per stall)
          "cmcd": "query"|"headers",                hls.js sends CMCD (CTA-5004) in the CMCD argument or CMCD-* headers
          "runStalledVHSQueues": true}              video.js: run a stalled VHS 1.9.3 queue on (videojs/http-streaming#480)

The page (page.html, harness.js) and the players (DIR/hls.js, DIR/video.js, laid down by scripts/e2e-browser/install)
are served by a small HTTP server of this process on 127.0.0.1; the origin's playlists are loaded cross-origin (the
origin answers Access-Control-Allow-Origin: *). Exit status 0 when every run produced a report (the checks are the
caller's), 2 when the browser could not be started.
"""

import functools
import http.server
import json
import os
import sys
import threading
import time
import urllib.parse

from playwright.sync_api import sync_playwright

HERE = os.path.dirname(os.path.abspath(__file__))
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARGUMENTS = [
    "--no-sandbox",  # tests run as root
    "--autoplay-policy=no-user-gesture-required",  # unmuted autoplay: the sound is what is checked
    "--enable-blink-features=AudioVideoTracks",  # video.audioTracks for the native player
    "--disable-gpu",
]


class Handler(http.server.SimpleHTTPRequestHandler):
    """Serves page.html and harness.js from this directory and /assets/* from the assets directory."""

    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".js": "text/javascript"}

    def __init__(self, *args, assets, **kwargs):
        self.assets = assets
        super().__init__(*args, directory=HERE, **kwargs)

    def translate_path(self, path):
        path = urllib.parse.urlsplit(path).path
        if path.startswith("/assets/"):
            return os.path.join(self.assets, os.path.basename(path))
        return os.path.join(HERE, os.path.basename(path))

    def log_message(self, *args):
        pass


def capabilities(page):
    return page.evaluate(
        """() => { const v = document.createElement('video'); return {
            userAgent: navigator.userAgent,
            nativeHLS: v.canPlayType('application/vnd.apple.mpegurl'),
            h264: MediaSource.isTypeSupported('video/mp4; codecs="avc1.42c01e"'),
            aac: MediaSource.isTypeSupported('audio/mp4; codecs="mp4a.40.2"'),
            hevc: MediaSource.isTypeSupported('video/mp4; codecs="hvc1.1.6.L93.B0"'),
            audioDecodedByteCount: 'webkitAudioDecodedByteCount' in v } }"""
    )


def play(browser, base, run):
    """Plays one run to its end."""
    playing = start(browser, base, run)
    while not step(playing):
        time.sleep(float(run.get("interval", 0.5)))
    return finish(playing)


def start(browser, base, run):
    """Opens the run's page; `step` samples it, `finish` closes it and makes its report."""
    page = browser.new_page()
    console = []
    page.on("console", lambda m: len(console) < 200 and console.append(f"{m.type}: {m.text}"[:300]))
    page.on("pageerror", lambda e: console.append(f"pageerror: {e}"[:300]))
    # The network log: every response the page received (the players' playlist, segment and key requests), so a
    # caller can check that none was refused.
    # With "requests": true, also every response's time (seconds since the page was loaded, and the wall clock),
    # status, URL and X-Cache-Status header (a cache in front) (at most 3,000), for checks on what a player asked for.
    network = {"responses": 0, "failed": []}
    if run.get("requests"):
        network["requests"] = []

    # Each entry also carries "sent": the wall clock when the browser sent the request (its resource timing).
    def on_response(response):
        network["responses"] += 1
        if "requests" in network and len(network["requests"]) < 3000:
            at = round(time.monotonic() - loaded, 3)
            try:
                sent = response.request.timing["startTime"] / 1000
            except Exception:  # noqa: BLE001 - timing is optional; "wall" stands in
                sent = None
            network["requests"].append(
                {
                    "t": at,
                    "wall": round(time.time(), 3),
                    "sent": round(sent, 3) if sent and sent > 0 else None,
                    "status": response.status,
                    "url": response.url[:300],
                    "cache": response.headers.get("x-cache-status"),
                }
            )
        if response.status >= 400 and len(network["failed"]) < 100:
            network["failed"].append({"status": response.status, "url": response.url[:300]})

    page.on("response", on_response)
    page.on(
        "requestfailed",
        lambda r: len(network["failed"]) < 100
        and network["failed"].append({"status": 0, "url": r.url[:300], "failure": str(r.failure)[:200]}),
    )
    fields = {"player": run["player"], "src": run["url"]}
    if run.get("catchUpRate"):
        fields["catchup"] = run["catchUpRate"]
    if run.get("stallIncrease") is not None:
        fields["stallincrease"] = run["stallIncrease"]
    if run.get("cmcd"):
        fields["cmcd"] = run["cmcd"]
    if run.get("runStalledVHSQueues"):
        fields["vhsqueues"] = "run"
    query = urllib.parse.urlencode(fields)
    loaded = time.monotonic()
    page.goto(f"{base}/page.html?{query}")
    return {
        "run": run,
        "page": page,
        "console": console,
        "network": network,
        "samples": [],
        "switched": None,
        "subtitles_on": False,
        "started": time.monotonic(),
    }


def step(playing):
    """Takes one sample of a started run; True when the run has lasted its seconds (nothing sampled then)."""
    run, page, samples = playing["run"], playing["page"], playing["samples"]
    now = time.monotonic() - playing["started"]
    if now >= float(run.get("seconds", 20)):
        return True
    switch = run.get("switchAudio")
    sample = page.evaluate("() => window.harness ? window.harness.sample() : null")
    if sample is not None:
        sample["t"] = round(now, 2)
        samples.append(sample)
        if run.get("subtitles") and not playing["subtitles_on"] and now >= 1:
            tracks = page.evaluate("() => window.harness.tracks()")
            if tracks.get("subtitleTracks") or any(
                t["kind"] in ("subtitles", "captions") for t in tracks.get("textTracks") or []
            ):
                playing["subtitles_on"] = page.evaluate("() => window.harness.showSubtitles()")
        if switch and playing["switched"] is None and now >= switch["at"]:
            found = page.evaluate("(l) => window.harness.switchAudio(l)", switch["to"])
            playing["switched"] = {"at": round(now, 2), "found": found, "sampleIndex": len(samples)}
    return False


def finish(playing):
    """Closes a run's page and makes its report."""
    run, page, samples, switched = playing["run"], playing["page"], playing["samples"], playing["switched"]
    console, network, subtitles_on = playing["console"], playing["network"], playing["subtitles_on"]
    tracks = page.evaluate("() => window.harness ? window.harness.tracks() : null")
    state = page.evaluate("() => window.harness ? window.harness.state : null")
    page.close()
    return {
        "player": run["player"],
        "url": run["url"],
        "samples": samples,
        "tracks": tracks,
        "state": state,
        "switched": switched,
        "subtitlesShown": subtitles_on,
        "summary": summarize(samples, switched),
        "console": console[-60:],
        "network": network,
    }


def summarize(samples, switched):
    """How far currentTime moved, how many audio bytes were decoded and how loud it was, overall and after the
    audio switch."""

    def span(part):
        # Seconds played: currentTime's forward steps no larger than the wall time between the samples plus 0.5 s
        # (a player's seek to the live edge is not playing).
        played = 0.0
        for before, after in zip(part, part[1:]):
            if before["currentTime"] is None or after["currentTime"] is None:
                continue
            step = after["currentTime"] - before["currentTime"]
            if 0 < step <= after["t"] - before["t"] + 0.5:
                played += step
        audio = [s["audioBytes"] for s in part if s["audioBytes"] is not None]
        return {
            "played": round(played, 3),
            "audioBytes": (max(audio) - min(audio)) if audio else None,
            "audioPeak": max((s["audioPeak"] for s in part), default=0),
        }

    result = {"all": span(samples), "finalTime": samples[-1]["currentTime"] if samples else None}
    if switched and switched["sampleIndex"] < len(samples):
        result["afterSwitch"] = span(samples[max(switched["sampleIndex"] - 1, 0) :])
    return result


def play_together(browser, base, runs):
    """Plays every run at once, each in its page, sampling them in turn every half second."""
    begun = time.monotonic()
    playing, results = [], [None] * len(runs)
    for index, run in enumerate(runs):
        try:
            playing.append((index, start(browser, base, run)))
        except Exception as error:  # noqa: BLE001 - one failed run must not hide the others
            results[index] = {"player": run["player"], "url": run["url"], "error": str(error)}
    while playing:
        for entry in list(playing):
            index, state = entry
            try:
                done = step(state)
                if done:
                    results[index] = finish(state)
            except Exception as error:  # noqa: BLE001 - one failed run must not hide the others
                done = True
                results[index] = {"player": state["run"]["player"], "url": state["run"]["url"], "error": str(error)}
            if done:
                results[index]["elapsed"] = round(time.monotonic() - begun, 1)
                playing.remove(entry)
        time.sleep(0.5)
    return results


def launch(playwright):
    """Debian's chromium, headless, with ARGUMENTS; None when it does not start (the error is printed as the JSON
    report, for the test's message)."""
    try:
        return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGUMENTS)
    except Exception as error:  # noqa: BLE001 - reported as JSON for the test's message
        print(json.dumps({"error": f"cannot start {CHROMIUM}: {error}"}))
        return None


def main():
    with open(sys.argv[1]) as file:
        spec = json.load(file)
    handler = functools.partial(Handler, assets=os.path.abspath(spec["assets"]))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    report = {"runs": []}
    with sync_playwright() as playwright:
        browser = launch(playwright)
        if browser is None:
            return 2
        report["browser"] = browser.version
        page = browser.new_page()
        page.goto(f"{base}/page.html?player=none")
        report["capabilities"] = capabilities(page)
        page.close()
        internals = None
        if spec.get("mediaInternals"):
            # chromium's media log (chrome://media-internals) of every player, for a failure's cause.
            internals = browser.new_page()
            internals.goto("chrome://media-internals")
        if spec.get("parallel"):
            report["runs"] = play_together(browser, base, spec["runs"])
        for run in [] if spec.get("parallel") else spec["runs"]:
            begun = time.monotonic()
            try:
                result = play(browser, base, run)
            except Exception as error:  # noqa: BLE001 - one failed run must not hide the others
                result = {"player": run["player"], "url": run["url"], "error": str(error)}
            result["elapsed"] = round(time.monotonic() - begun, 1)
            report["runs"].append(result)
        if internals is not None:
            logs = {}
            for run in spec["runs"]:
                if run["player"] != "native" or run["url"] in logs:
                    continue  # the MSE players show as blob: URLs
                try:
                    internals.get_by_text(run["url"], exact=True).first.click(timeout=3000)
                    logs[run["url"]] = internals.inner_text("body")[-30000:]
                except Exception as error:  # noqa: BLE001 - the log is a diagnostic
                    logs[run["url"]] = f"no media log: {error}"
            report["mediaInternals"] = logs
        browser.close()
    server.shutdown()
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
