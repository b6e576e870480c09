#!/usr/bin/env python3
"""SRT ingest figures of scripts/bench (9, 10, 11; docs/performance.md, "SRT ingest").

Prints JSON rows ({"row": ..., "hlsorigin": ..., "nginx": ..., "ratio": ...}) for `benchtool.py table`, progress on
stderr. Starts everything itself (origins, ffmpeg callers, srt-live-transmit) and stops it on exit.

  9.  CPU per ingested Mbit/s: N ffmpeg callers (`-re -stream_loop -1 -c copy`, a ~5 Mbit/s H.264+AAC TS) into one
      origin, its CPU (/proc/PID/stat utime+stime) over the window / the bytes its SRT callers received
      (hlsorigin_srt_received_bytes_total); the same callers into N srt-live-transmit relays to UDP (the floor of what
      libsrt costs), their CPU / the bytes arriving on the UDP sockets.
  10. Renditions two cores take with players: callers added in steps, each with a player (playlist every second, each
      new segment fetched); a step keeps up when no GAP was listed, every channel listed its segments on time and no
      SRT packet was dropped.
  11. Last packet of a frame -> its part served, LL channel: a Python sender paces the TS by video DTS into UDP,
      srt-live-transmit carries it over SRT to the origin; a client issues blocking playlist requests for the next
      part and fetches it; for each part, its last video frame's send time (of that frame's last TS packet) to the
      part's last byte received.
"""
import argparse
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

procs = []


def log(message):
    print(f"srtbench: {message}", file=sys.stderr, flush=True)


def spawn(args, **kw):
    p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=kw.pop("stdout", subprocess.DEVNULL),
                         stderr=kw.pop("stderr", subprocess.DEVNULL), **kw)
    procs.append(p)
    return p


def stop(p):
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def stop_all():
    for p in reversed(procs):
        stop(p)


def free_udp_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cpu_ticks(pids):
    total = 0
    for pid in pids:
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return total


HZ = os.sysconf("SC_CLK_TCK")


def media(directory):
    """A ~5 Mbit/s 720p25 H.264 (GOP 1 s, no B-frames) + AAC MPEG-TS of 20 s, made once."""
    path = os.path.join(directory, "srt-5m.ts")
    if os.path.exists(path):
        return path
    os.makedirs(directory, exist_ok=True)
    log("encoding the 5 Mbit/s source once (20 s of 720p25)")
    subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                    "testsrc2=size=1280x720:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
                    "-t", "20", "-c:v", "libx264", "-preset", "veryfast", "-bf", "0", "-g", "25", "-keyint_min", "25",
                    "-sc_threshold", "0", "-b:v", "4800k", "-minrate", "4800k", "-maxrate", "4800k",
                    "-bufsize", "2400k", "-x264-params", "nal-hrd=cbr", "-c:a", "aac", "-b:a", "128k",
                    "-f", "mpegts", path + ".tmp"], check=True)
    os.rename(path + ".tmp", path)
    return path


def file_mbps(path):
    out = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path],
                         capture_output=True, text=True).stdout
    return os.path.getsize(path) * 8 / float(out) / 1e6


class Origin:
    def __init__(self, binary, work, name, channels, srt_port, ll=False):
        self.dir = os.path.join(work, name)
        os.makedirs(self.dir, exist_ok=True)
        lines = ["server: { connectionLimit: 1000 }", "logLevel: warning",
                 "ingest:", "  autoCreate: false",
                 f"  srt: {{ port: {srt_port}, host: 127.0.0.1, latencyMilliseconds: 120, maxCallers: 128, "
                 "idleTimeoutMilliseconds: 2000 }", "channels:"]
        for c in channels:
            lines += [f"  - name: {c}", "    segmentDuration: 2", "    window: { segments: 6 }"]
            if ll:
                lines.append("    lowLatency: { partTarget: 0.4 }")
            lines.append("    renditions: [ { name: r } ]")
        config = os.path.join(self.dir, "config.yaml")
        open(config, "w").write("\n".join(lines) + "\n")
        self.stdout = open(os.path.join(self.dir, "stdout"), "w+")
        self.process = spawn([binary, "--config", config, "--host", "127.0.0.1", "--port", "0", "--data-dir",
                              os.path.join(self.dir, "data")], stdout=self.stdout,
                             stderr=open(os.path.join(self.dir, "stderr"), "w"))
        self.port = None
        for _ in range(300):
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", open(self.stdout.name).read())
            if m:
                self.port = int(m.group(1))
                break
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        if self.port is None:
            sys.exit("srtbench: hlsorigin did not start: " + open(os.path.join(self.dir, "stderr")).read()[-2000:])
        self.srt_port = srt_port
        time.sleep(0.5)

    def get(self, path, timeout=10):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=timeout) as r:
            return r.read()

    def metric(self, name):
        """Sum of a metric's samples."""
        total = 0.0
        for line in self.get("/metrics").decode().splitlines():
            if line.startswith(name + "{") or line.startswith(name + " "):
                total += float(line.rsplit(" ", 1)[1])
        return total


def machine_busy():
    """(busy, total) jiffies of all cores, from /proc/stat."""
    fields = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return sum(fields) - fields[3] - fields[4], sum(fields)


def caller(file, port, streamid, latency_us=120000):
    return spawn(["ffmpeg", "-nostdin", "-loglevel", "error", "-re", "-stream_loop", "-1", "-i", file, "-c", "copy",
                  "-f", "mpegts", f"srt://127.0.0.1:{port}?streamid={streamid}&latency={latency_us}"])


# ---------------------------------------------------------------------------------------------------- figure 9


def udp_sink(ports, counter, stop_event):
    socks = []
    for port in ports:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        s.bind(("127.0.0.1", port))
        s.settimeout(0.2)
        socks.append(s)
    import selectors
    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_READ)
    buf = bytearray(65536)
    while not stop_event.is_set():
        for key, _ in sel.select(0.2):
            try:
                counter[0] += key.fileobj.recv_into(buf)
            except OSError:
                pass
    for s in socks:
        s.close()


def figure9(args, file, mbps):
    n, window = args.callers, args.window
    rows = []
    # hlsorigin
    origin = Origin(args.binary, args.work, "f9", [f"c{i:02d}" for i in range(n)], free_udp_port())
    for i in range(n):
        caller(file, origin.srt_port, f"#!::r=c{i:02d}/r,m=publish")
    time.sleep(args.warmup)
    b0, t0, c0 = origin.metric("hlsorigin_srt_received_bytes_total"), time.monotonic(), cpu_ticks([origin.process.pid])
    time.sleep(window)
    b1, t1, c1 = origin.metric("hlsorigin_srt_received_bytes_total"), time.monotonic(), cpu_ticks([origin.process.pid])
    drops = origin.metric("hlsorigin_srt_dropped_packets_total")
    h_mbit = (b1 - b0) * 8 / 1e6
    h_cpu = (c1 - c0) / HZ
    for p in procs[1:]:
        stop(p)
    stop(origin.process)
    del procs[:]
    # srt-live-transmit, one per caller, to UDP sockets read here
    counter, stop_event = [0], threading.Event()
    udp_ports = [free_udp_port() for _ in range(n)]
    sink = threading.Thread(target=udp_sink, args=(udp_ports, counter, stop_event), daemon=True)
    sink.start()
    relays = []
    for i in range(n):
        srt_port = free_udp_port()
        relays.append(spawn(["srt-live-transmit", "-q", "-a:no", f"srt://:{srt_port}?latency=120",
                             f"udp://127.0.0.1:{udp_ports[i]}"]))
        time.sleep(0.2)
        caller(file, srt_port, f"c{i:02d}/r")
    time.sleep(args.warmup)
    r0, t2, s0 = counter[0], time.monotonic(), cpu_ticks([p.pid for p in relays])
    time.sleep(window)
    r1, t3, s1 = counter[0], time.monotonic(), cpu_ticks([p.pid for p in relays])
    stop_event.set()
    stop_all()
    del procs[:]
    s_mbit = (r1 - r0) * 8 / 1e6
    s_cpu = (s1 - s0) / HZ
    h_us = h_cpu / max(h_mbit, 1e-9) * 1e6
    s_us = s_cpu / max(s_mbit, 1e-9) * 1e6
    label = f"9. SRT ingest, {n} callers x {mbps:.1f} Mbit/s ffmpeg -c copy, {window} s"
    rows.append({"row": f"{label}: ingested Mbit/s (hlsorigin: its SRT stats; srt-live-transmit: bytes out on UDP)",
                 "hlsorigin": f"{h_mbit / (t1 - t0):.1f}", "nginx": f"slt {s_mbit / (t3 - t2):.1f}"})
    rows.append({"row": f"{label}: CPU per ingested Mbit (vs srt-live-transmit -> UDP, the libsrt floor)",
                 "hlsorigin": f"{h_us:.0f} us", "nginx": f"slt {s_us:.0f} us", "ratio": f"{h_us / s_us:.2f}",
                 "runs": 1, "errors": f"{drops:.0f} dropped"})
    rows.append({"row": f"{label}: % of a core per 5 Mbit/s rendition",
                 "hlsorigin": f"{h_us * 5 / 1e4:.2f} %", "nginx": f"slt {s_us * 5 / 1e4:.2f} %",
                 "ratio": f"{h_us / s_us:.2f}"})
    return rows


# ---------------------------------------------------------------------------------------------------- figure 10


class Player(threading.Thread):
    """Polls one playlist every second and fetches each new segment; counts errors."""

    def __init__(self, origin, channel):
        super().__init__(daemon=True)
        self.origin, self.path, self.stop_event = origin, f"/live/{channel}/r/index.m3u8", threading.Event()
        self.errors, self.fetched, self.gaps, self.msn = 0, 0, 0, -1
        self.seen = set()

    def run(self):
        while not self.stop_event.is_set():
            try:
                text = self.origin.get(self.path).decode()
                m = re.search(r"#EXT-X-MEDIA-SEQUENCE:(\d+)", text)
                msn = int(m.group(1)) if m else 0
                lines = text.splitlines()
                gap = False
                for line in lines:
                    if line.startswith("#EXT-X-GAP"):
                        gap = True
                    elif line and not line.startswith("#"):
                        if line not in self.seen:
                            self.seen.add(line)
                            if gap:
                                self.gaps += 1
                            else:
                                base = self.path.rsplit("/", 1)[0]
                                url = line if line.startswith("/") else f"{base}/{line}"
                                self.origin.get(url)
                                self.fetched += 1
                        gap = False
                self.msn = msn + sum(1 for l in lines if l and not l.startswith("#")) - 1
            except Exception:  # noqa: BLE001 - any failure is an error of the step
                self.errors += 1
            self.stop_event.wait(1.0)


def figure10(args, file, mbps):
    steps = [int(s) for s in args.steps.split(",")]
    origin = Origin(args.binary, args.work, "f10", [f"c{i:02d}" for i in range(steps[-1])], free_udp_port())
    players, rows, best, started = [], [], 0, 0
    for count in steps:
        while started < count:
            caller(file, origin.srt_port, f"#!::r=c{started:02d}/r,m=publish")
            started += 1
        time.sleep(args.warmup + 2)  # the new callers' first segment cut and listed
        while len(players) < count:
            p = Player(origin, f"c{len(players):02d}")
            p.start()
            players.append(p)
        time.sleep(1)
        before = [(p.msn, p.gaps, p.errors) for p in players]
        callers = [p.pid for p in procs if p is not origin.process]
        d0, c0, t0 = origin.metric("hlsorigin_srt_dropped_packets_total"), cpu_ticks([origin.process.pid]), \
            time.monotonic()
        f0, m0 = cpu_ticks(callers), machine_busy()
        time.sleep(args.step_window)
        d1, c1, t1 = origin.metric("hlsorigin_srt_dropped_packets_total"), cpu_ticks([origin.process.pid]), \
            time.monotonic()
        f1, m1 = cpu_ticks(callers), machine_busy()
        callers_cpu = (f1 - f0) / HZ / (t1 - t0) * 100
        busy = (m1[0] - m0[0]) / max(m1[1] - m0[1], 1) * 100
        after = [(p.msn, p.gaps, p.errors) for p in players]
        expected = int(args.step_window / 2) - 1
        advanced = [a[0] - b[0] for a, b in zip(after, before)]
        gaps = sum(a[1] - b[1] for a, b in zip(after, before))
        errors = sum(a[2] - b[2] for a, b in zip(after, before))
        late = sum(1 for a in advanced if a < expected)
        cpu = (c1 - c0) / HZ / (t1 - t0) * 100
        ok = gaps == 0 and late == 0 and d1 == d0 and errors == 0
        log(f"10. {count} callers: CPU {cpu:.0f} %, segments listed per channel {min(advanced)}-{max(advanced)} "
            f"(>= {expected} expected), GAPs {gaps}, SRT drops {d1 - d0:.0f}, player errors {errors}: "
            f"{'keeps up' if ok else 'falls behind'}; the ffmpeg callers {callers_cpu:.0f} %, machine busy {busy:.0f} %")
        rows.append({"row": f"10. {count} x {mbps:.1f} Mbit/s SRT callers + {count} players, {args.step_window} s: "
                            f"origin CPU (% of a core), segments listed per channel (min-max, >= {expected} on "
                            f"time), GAPs, SRT drops, player errors; the callers' CPU, the 2 cores busy",
                     "hlsorigin": f"{cpu:.0f} %, {min(advanced)}-{max(advanced)}, {gaps}, {d1 - d0:.0f}, {errors}",
                     "nginx": f"callers {callers_cpu:.0f} %, busy {busy:.0f} %",
                     "runs": 1, "errors": "" if ok else "behind"})
        if not ok:
            break
        best = count
    for p in players:
        p.stop_event.set()
    stop_all()
    del procs[:]
    rows.append({"row": f"10. largest step that kept up (steps {args.steps}; no GAP, on time, 0 SRT drops)",
                 "hlsorigin": f"{best} renditions ({best * mbps:.0f} Mbit/s)"})
    return rows


# ---------------------------------------------------------------------------------------------------- figure 11


def ts_packets(data):
    for i in range(0, len(data) - 187, 188):
        yield data[i:i + 188]


def pes_timestamp(b):
    return ((b[0] >> 1) & 7) << 30 | b[1] << 22 | (b[2] >> 1) << 15 | b[3] << 7 | b[4] >> 1


def video_pes(data):
    """(pid of video, [(pts, dts) of each video PES start in order]) of a TS."""
    pmt_pid, video = None, None
    starts = []
    for p in ts_packets(data):
        if p[0] != 0x47:
            continue
        pid = (p[1] & 0x1F) << 8 | p[2]
        pusi = p[1] & 0x40
        afc = (p[3] >> 4) & 3
        off = 4 + (1 + p[4] if afc & 2 else 0)
        if not afc & 1 or off >= 188:
            continue
        payload = p[off:]
        if pid == 0 and pusi and pmt_pid is None:
            sec = payload[1 + payload[0]:]
            pmt_pid = (sec[10] & 0x1F) << 8 | sec[11]
        elif pid == pmt_pid and pusi and video is None:
            sec = payload[1 + payload[0]:]
            length = (sec[1] & 0x0F) << 8 | sec[2]
            info = (sec[10] & 0x0F) << 8 | sec[11]
            i = 12 + info
            while i < 3 + length - 4:
                st, epid, esl = sec[i], (sec[i + 1] & 0x1F) << 8 | sec[i + 2], (sec[i + 3] & 0x0F) << 8 | sec[i + 4]
                if st in (0x1B, 0x24) and video is None:
                    video = epid
                i += 5 + esl
        elif pid == video and pusi and payload[:3] == b"\0\0\1":
            flags = payload[7]
            pts = pes_timestamp(payload[9:14]) if flags & 0x80 else None
            dts = pes_timestamp(payload[14:19]) if flags & 0x40 else pts
            starts.append((pts, dts))
    return video, starts


def sender(file, udp_port, sent, seconds):
    """Sends the first `seconds` of the TS (one pass, no loop: a loop would jump the timestamps) to UDP, paced by
    video DTS, 7 TS packets a datagram, a frame's tail flushed before the next frame starts; records per video PTS
    the wall-clock time its last TS packet was sent."""
    data = open(file, "rb").read()
    video, _ = video_pes(data)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    dest = ("127.0.0.1", udp_port)
    pending, frame, t0, d0 = [], None, None, None
    pmt_seen = False
    for p in ts_packets(data):
        pid = (p[1] & 0x1F) << 8 | p[2]
        if pid == video and p[1] & 0x40:
            afc = (p[3] >> 4) & 3
            off = 4 + (1 + p[4] if afc & 2 else 0)
            payload = p[off:]
            flags = payload[7]
            pts = pes_timestamp(payload[9:14])
            dts = pes_timestamp(payload[14:19]) if flags & 0x40 else pts
            # the frame before ends here: its tail goes out now
            while pending:
                s.sendto(b"".join(pending[:7]), dest)
                del pending[:7]
            if frame is not None:
                sent[frame] = time.time()
            if t0 is None:
                t0, d0 = time.monotonic(), dts
            elif (dts - d0) / 90000 > seconds:
                break
            delay = t0 + (dts - d0) / 90000 - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            frame = pts
        pending.append(p)
        if len(pending) == 7:
            s.sendto(b"".join(pending), dest)
            pending = []
    s.close()


def next_part(text):
    """(media sequence number, part index) of the part after the last one the playlist lists."""
    current, count = int(re.search(r"#EXT-X-MEDIA-SEQUENCE:(\d+)", text).group(1)), 0
    for line in text.splitlines():
        if line.startswith("#EXT-X-PART:"):
            count += 1
        elif line and not line.startswith("#"):
            current, count = current + 1, 0
    return current, count


def figure11(args, file):
    origin = Origin(args.binary, args.work, "f11", ["ll"], free_udp_port(), ll=True)
    udp_port = free_udp_port()
    spawn(["srt-live-transmit", "-q", "-a:no", f"udp://127.0.0.1:{udp_port}",
           f"srt://127.0.0.1:{origin.srt_port}?streamid=ll/r&latency=120"])
    time.sleep(1)
    sent = {}
    send = threading.Thread(target=sender, args=(file, udp_port, sent, args.ll_seconds), daemon=True)
    send.start()
    path = "/live/ll/r/index.m3u8"
    # wait for the first parts
    deadline = time.monotonic() + 20
    text = ""
    while time.monotonic() < deadline:
        try:
            text = origin.get(path).decode()
            if "#EXT-X-PRELOAD-HINT" in text:
                break
        except Exception:  # noqa: BLE001 - not yet created
            pass
        time.sleep(0.2)
    latencies, missing = [], 0
    base = path.rsplit("/", 1)[0]
    while send.is_alive():
        # the next part: the preload hint's segment and part index
        want_msn, want_part = next_part(text)
        try:
            text = origin.get(f"{path}?_HLS_msn={want_msn}&_HLS_part={want_part}").decode()
        except Exception:  # noqa: BLE001 - e.g. the stream ended
            break
        uri = None
        count, current = 0, int(re.search(r"#EXT-X-MEDIA-SEQUENCE:(\d+)", text).group(1))
        for l in text.splitlines():
            if l.startswith("#EXT-X-PART:"):
                if current == want_msn and count == want_part:
                    uri = re.search(r'URI="([^"]+)"', l).group(1)
                count += 1
            elif l and not l.startswith("#"):
                current += 1
                count = 0
        if uri is None:
            continue
        data = origin.get(uri if uri.startswith("/") else f"{base}/{uri}")
        arrived = time.time()
        _, starts = video_pes(data)
        if not starts:
            continue
        last = starts[-1][0]
        if last in sent:
            latencies.append((arrived - sent[last]) * 1000)
        else:
            missing += 1
    stop_all()
    del procs[:]
    latencies.sort()
    if not latencies:
        return [{"row": "11. SRT frame -> LL part served: no part matched a sent frame", "hlsorigin": "n/a",
                 "errors": missing}]
    p95 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.95))]
    return [{"row": f"11. LL (part 0.4 s) over SRT (latency 120 ms): last TS packet of a part's last frame sent "
                    f"-> that part's bytes received by a blocking-playlist client, median / p95 / max "
                    f"({len(latencies)} parts)",
             "hlsorigin": f"{statistics.median(latencies):.0f} / {p95:.0f} / {latencies[-1]:.0f} ms", "runs": 1,
             "errors": f"{missing} unmatched" if missing else 0}]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--media", required=True)
    ap.add_argument("--only", default="9,10,11")
    ap.add_argument("--callers", type=int, default=4)
    ap.add_argument("--window", type=float, default=20)
    ap.add_argument("--warmup", type=float, default=4)
    ap.add_argument("--steps", default="2,4,8,12,16")
    ap.add_argument("--step-window", type=float, default=16)
    ap.add_argument("--ll-seconds", type=float, default=18, help="at most the source's 20 s")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    only = args.only.split(",")
    try:
        file = media(args.media)
        mbps = file_mbps(file)
        log(f"source {file}: {mbps:.2f} Mbit/s")
        rows = []
        if "9" in only:
            log(f"9. CPU per ingested Mbit/s, {args.callers} callers, {args.window} s, then srt-live-transmit")
            rows += figure9(args, file, mbps)
        if "10" in only:
            log(f"10. renditions with players, steps {args.steps}")
            rows += figure10(args, file, mbps)
        if "11" in only:
            log("11. SRT frame to LL part")
            rows += figure11(args, file)
        for r in rows:
            print(json.dumps(r), flush=True)
    finally:
        stop_all()


if __name__ == "__main__":
    main()
