#!/usr/bin/env python3
"""Helpers of scripts/bench: media generation, pushes, mirroring for nginx, wrk parsing, clients, the table.

Standard library only. Every subcommand prints what the shell script needs on stdout (one value or key=value
lines) and its complaints on stderr.
"""
import argparse
import http.client
import json
import os
import re
import selectors
import socket
import statistics
import subprocess
import sys
import time

NULL_PACKET = b"\x47\x1f\xff\x10" + b"\xff" * 184  # MPEG-TS null packet (PID 0x1FFF), ignored by every reader


def log(message):
    print(f"bench: {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------------- media


def ffmpeg(args):
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", *args], check=True)


def generate_media(directory):
    """Generates, once per cache directory: 2 s segments (360p, ~800 kbit/s, AAC) for the ingest test, 0.2 s
    segments for the 600-segment window, and a small 2 s segment padded to 1 MiB and 100 KiB for segment GETs."""
    os.makedirs(directory, exist_ok=True)
    done = os.path.join(directory, "done")
    if os.path.exists(done):
        return
    two = os.path.join(directory, "2s")
    os.makedirs(two, exist_ok=True)
    ffmpeg([
        "-f", "lavfi", "-i", "testsrc2=s=640x360:r=25", "-f", "lavfi", "-i", "sine=f=440:r=48000",
        "-t", "100", "-c:v", "libx264", "-preset", "ultrafast", "-b:v", "800k", "-g", "50", "-keyint_min", "50",
        "-sc_threshold", "0", "-c:a", "aac", "-b:a", "64k", "-f", "segment", "-segment_time", "2",
        "-segment_format", "mpegts", os.path.join(two, "%03d.ts")])
    short = os.path.join(directory, "short")
    os.makedirs(short, exist_ok=True)
    ffmpeg([
        "-f", "lavfi", "-i", "testsrc2=s=160x90:r=25", "-t", "120", "-c:v", "libx264", "-preset", "ultrafast",
        "-b:v", "100k", "-g", "5", "-keyint_min", "5", "-sc_threshold", "0", "-f", "segment",
        "-segment_time", "0.2", "-segment_format", "mpegts", os.path.join(short, "%03d.ts")])
    small = os.path.join(directory, "small.ts")
    ffmpeg([
        "-f", "lavfi", "-i", "testsrc2=s=320x180:r=25", "-t", "2", "-c:v", "libx264", "-preset", "ultrafast",
        "-b:v", "100k", "-g", "50", "-f", "mpegts", small])
    base = open(small, "rb").read()
    for name, size in (("1m.ts", 1 << 20), ("100k.ts", 100 << 10)):
        count = (size - len(base)) // 188
        with open(os.path.join(directory, name), "wb") as out:
            out.write(base + NULL_PACKET * count)
    open(done, "w").write("ok\n")


# ---------------------------------------------------------------------------------------------------- HTTP


class Client:
    """One keep-alive connection."""

    def __init__(self, port, host="127.0.0.1"):
        self.connection = http.client.HTTPConnection(host, port, timeout=30)

    def request(self, method, path, body=None):
        self.connection.request(method, path, body=body)
        response = self.connection.getresponse()
        return response.status, response.read()


def push(port, path, data):
    status, body = Client(port).request("PUT", path, data)
    if status >= 300:
        raise SystemExit(f"PUT {path}: {status} {body.decode(errors='replace').strip()}")
    match = re.search(rb"msn (\d+)", body)
    return int(match.group(1)) if match else None


def padded_segment(media, size):
    """The small 2 s segment padded with MPEG-TS null packets to `size` bytes (rounded down to whole packets)."""
    base = open(os.path.join(media, "small.ts"), "rb").read()
    return base + NULL_PACKET * max(0, (size - len(base)) // 188)


def command_push_segments(args):
    """PUTs the padded 1 MiB and 100 KiB segments (or, with `--sizes`, one padded segment per size to rendition
    `s{size}`) to `--channel` and mirrors them into nginx's root (if given). All are pushed before any is fetched: a
    slot is published once every started rendition of the channel has filled it."""
    client = Client(args.port)
    pushed = []
    if args.sizes:
        renditions = [(f"s{size}", padded_segment(args.media, int(size))) for size in args.sizes.split(",")]
    else:
        renditions = [(name, open(os.path.join(args.media, f"{name}.ts"), "rb").read()) for name in ("1m", "100k")]
    for rendition, data in renditions:
        status, body = client.request("PUT", f"/ingest/{args.channel}/{rendition}/0.ts", data)
        if status >= 300:
            raise SystemExit(f"PUT {args.channel}/{rendition}: {status} {body!r}")
        pushed.append((rendition, data, int(re.search(rb"msn (\d+)", body).group(1))))
    for rendition, data, msn in pushed:
        path = f"/live/{args.channel}/{rendition}/{msn}.ts"
        deadline = time.time() + 10
        while True:  # the slot is published once its closing pass has been synced
            status, served = client.request("GET", path)
            if status == 200 or time.time() > deadline:
                break
            time.sleep(0.01)
        assert status == 200 and served == data, f"GET {path}: {status}, {len(served)} bytes"
        if args.root:
            write_file(args.root, path, served)
        print(f"{rendition}={path} {len(served)}")


def command_await_disk(args):
    """Waits until `--path` (`/live/{channel}/{rendition}/{msn}.ts` of a push channel with DVR whose later slots are
    GAPs) has left its playlist and the window's retention (the admin status counts no retained segment: GAPs are
    not retained, so it was the only one); then GETs it once more and prints `ok` if the bytes equal `--file`, else
    `missing <status>` (the origin has no disk route)."""
    client = Client(args.port)
    _, _, channel, rendition, name = args.path.split("/")
    deadline = time.time() + args.wait
    while True:
        status, playlist = client.request("GET", f"/live/{channel}/{rendition}/index.m3u8")
        _, body = client.request("GET", f"/admin/channels/{channel}")
        retained = next(r["retainedSegments"] for r in json.loads(body)["renditions"] if r["name"] == rendition)
        if status == 200 and name.encode() not in playlist and retained == 0:
            break
        if time.time() > deadline:
            raise SystemExit(f"{args.path} still listed or retained after {args.wait} s")
        time.sleep(0.25)
    status, served = client.request("GET", args.path)
    expected = open(args.file, "rb").read()
    print("ok" if status == 200 and served == expected else f"missing {status}")


def command_push_window(args):
    """PUTs 600 segments of 0.2 s to channel `big` (target duration 120 s, so all may be pushed at once)."""
    directory = os.path.join(args.media, "short")
    names = sorted(os.listdir(directory))[: args.count]
    client = Client(args.port)
    for name in names:
        status, body = client.request("PUT", f"/ingest/big/r/{name}", open(os.path.join(directory, name), "rb").read())
        if status >= 300:
            raise SystemExit(f"PUT big/r/{name}: {status} {body!r}")
    status, playlist = client.request("GET", "/live/big/r/index.m3u8")
    count = playlist.count(b"#EXTINF")
    if count != len(names):
        raise SystemExit(f"big/r lists {count} segments, {len(names)} pushed")
    print(count)


def write_file(root, path, data):
    target = os.path.join(root, path.lstrip("/"))
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target + ".tmp", "wb") as out:
        out.write(data)
    os.replace(target + ".tmp", target)


def command_mirror(args):
    """Waits until the playlist lists `--segments` entries, then copies it (and its segments) into nginx's root."""
    client = Client(args.port)
    deadline = time.time() + args.wait
    while True:
        status, playlist = client.request("GET", args.path)
        if status == 200 and playlist.count(b"#EXTINF") >= args.segments:
            break
        if time.time() > deadline:
            raise SystemExit(f"{args.path}: fewer than {args.segments} segments after {args.wait} s")
        time.sleep(0.25)
    directory = args.path.rsplit("/", 1)[0]
    if args.with_segments:
        for line in playlist.decode().splitlines():
            if line and not line.startswith("#"):
                status, data = client.request("GET", f"{directory}/{line}")
                if status == 200:
                    write_file(args.root, f"{directory}/{line}", data)
    write_file(args.root, args.path, playlist)
    print(len(playlist))


def command_newest(args):
    """Copies the newest segment (not GAP; with `--parts` the newest part) `--path` (a media playlist) lists into nginx's root under the same URL and prints
    `path size`: figure 2b re-chooses it every round, so both servers serve the segment players fetch right now."""
    client = Client(args.port)
    status, playlist = client.request("GET", args.path)
    uris, gap = [], False
    if args.parts:  # the newest complete part (EXT-X-PART without GAP=YES) instead
        uris = [m.group(1) for m in re.finditer(r'^#EXT-X-PART:(?!.*GAP=YES).*URI="([^"]+)"', playlist.decode(), re.M)]
    for line in [] if args.parts else playlist.decode().splitlines():
        if line.startswith("#EXT-X-GAP"):
            gap = True
        elif line and not line.startswith("#"):
            if not gap:  # a GAP entry's URL answers 404 or a filler, not a segment
                uris.append(line)
            gap = False
    if status != 200 or not uris:
        raise SystemExit(f"{args.path}: {status}, no segment listed")
    path = f"{args.path.rsplit('/', 1)[0]}/{uris[-1]}"
    status, data = client.request("GET", path)
    if status != 200:
        raise SystemExit(f"GET {path}: {status}")
    if args.root:
        write_file(args.root, path, data)
    if args.save:
        with open(args.save, "wb") as out:
            out.write(data)
    print(path, len(data))


def command_counters(args):
    """The sum of each `--name` metric (all label sets) in the origin's /metrics, one `name value` per line; a
    metric the build does not export prints `name nan`."""
    status, body = Client(args.port).request("GET", "/metrics")
    text = body.decode(errors="replace") if status == 200 else ""
    for name in args.name:
        values = [float(m.group(1)) for m in re.finditer(rf"^{re.escape(name)}(?:{{[^}}]*}})? (\S+)$", text, re.M)]
        print(name, sum(values) if values else "nan")


# ---------------------------------------------------------------------------------------------------- wrk


UNITS = {"": 1, "B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}
TIME = {"us": 1e-3, "ms": 1.0, "s": 1000.0, "m": 60000.0}


def parse_wrk(text):
    """Requests/s, bytes/s, p99 ms, errors (socket errors + non-2xx/3xx) of one wrk run."""
    result = {"rps": 0.0, "bps": 0.0, "p99": float("nan"), "p50": float("nan"), "errors": 0}
    if m := re.search(r"Requests/sec:\s+([\d.]+)", text):
        result["rps"] = float(m.group(1))
    if m := re.search(r"Transfer/sec:\s+([\d.]+)([KMGT]?B)", text):
        result["bps"] = float(m.group(1)) * UNITS[m.group(2)]
    for label, key in (("99%", "p99"), ("50%", "p50")):
        if m := re.search(rf"^\s+{label}\s+([\d.]+)(us|ms|s|m)\s*$", text, re.M):
            result[key] = float(m.group(1)) * TIME[m.group(2)]
    if m := re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text):
        result["errors"] += sum(int(x) for x in m.groups())
    if m := re.search(r"Non-2xx or 3xx responses: (\d+)", text):
        result["errors"] += int(m.group(1))
    if m := re.search(r"(\d+) requests in", text):
        result["requests"] = int(m.group(1))
    return result


def command_parse_wrk(args):
    result = parse_wrk(open(args.file).read())
    if args.cpu_file:
        # `perf stat -x,` output: the server's task-clock (ms of CPU) over the round.
        cpu = [float(line.split(",")[0]) for line in open(args.cpu_file) if ",task-clock," in line
               and line.split(",")[0].replace(".", "", 1).isdigit()]
        if cpu and result.get("requests"):
            result["cpu_us"] = cpu[0] * 1000 / result["requests"]
    print(json.dumps({"label": args.label, "server": args.server, **result}))


# ---------------------------------------------------------------------------------------------------- many clients


def command_idle(args):
    """Opens `--count` keep-alive connections, sends one playlist GET on each and reads the answer, then holds them
    until stdin closes. Prints `open=N errors=E` once all are open (and again, with closed ones, at the end)."""
    selector = selectors.DefaultSelector()
    request = f"GET {args.path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
    sockets, errors, answered = [], 0, 0
    pending = {}
    for _ in range(args.count):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect_ex(("127.0.0.1", args.port))
        except OSError:
            errors += 1
            continue
        sockets.append(s)
        selector.register(s, selectors.EVENT_WRITE)
        pending[s] = b""
        # Bound the number of handshakes in flight so the listen backlog is never the limit.
        while len(pending) >= 512:
            answered, errors = pump(selector, pending, request, answered, errors)
    while pending:
        answered, errors = pump(selector, pending, request, answered, errors)
    print(f"open={answered} errors={errors}", flush=True)
    sys.stdin.read()
    # Count connections the server closed while idle.
    closed = 0
    for s in sockets:
        try:
            s.setblocking(False)
            if s.recv(1) == b"":
                closed += 1
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
    print(f"closed_while_idle={closed}", flush=True)


def pump(selector, pending, request, answered, errors):
    for key, mask in selector.select(timeout=10) or []:
        s = key.fileobj
        try:
            if mask & selectors.EVENT_WRITE:
                s.send(request)
                selector.modify(s, selectors.EVENT_READ)
                continue
            data = s.recv(65536)
        except OSError:
            data = b""
        if not data:
            errors += 1
            selector.unregister(s)
            del pending[s]
            continue
        pending[s] += data
        buffered = pending[s]
        head_end = buffered.find(b"\r\n\r\n")
        if head_end >= 0:
            m = re.search(rb"Content-Length: (\d+)", buffered[:head_end], re.I)
            if m and len(buffered) >= head_end + 4 + int(m.group(1)):
                if not buffered.startswith(b"HTTP/1.1 200"):
                    errors += 1
                else:
                    answered += 1
                selector.unregister(s)
                del pending[s]
    return answered, errors


# ---------------------------------------------------------------------------------------------------- fan-out


SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux; SCM_TIMESTAMPNS has the same value


def ll_target(port, path):
    """The part to block on: waits for a part to be published (the preload hint moves to `(msn, part)`), then
    returns `(msn + 1, 1)`, the second part of the next segment: at least two part durations away (0.8 s at 0.4 s
    parts, at most one segment and two parts), so that 10,000 requests sent by this (slow, Python) client on a loaded
    machine are all waiting before it is published. The hinted part itself (one part duration away) was published
    while the last requests were still being sent in 3 of 5 rounds at load average 4."""
    client = Client(port)
    def hint():
        status, playlist = client.request("GET", path)
        if status != 200:
            raise SystemExit(f"GET {path}: {status}")
        m = re.search(rb'#EXT-X-PRELOAD-HINT:TYPE=PART,URI="(\d+)\.(\d+)\.', playlist)
        if not m:
            raise SystemExit(f"{path} has no part preload hint: is the channel Low-Latency?")
        return int(m.group(1)), int(m.group(2))
    first = hint()
    deadline = time.time() + 10
    while time.time() < deadline:
        now = hint()
        if now != first:
            return now[0] + 1, 1
        time.sleep(0.002)
    raise SystemExit(f"{path}: no part published in 10 s")


def rss_kib(pids):
    total = 0
    for pid in pids:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total


def command_fanout(args):
    """Figure 8: `--count` keep-alive connections, opened (one plain GET each, as a player's first request) and
    then, per round, each sends one request at nearly the same instant and waits for its answer.

    `--mode blocking`: the request is `--path?_HLS_msn=M&_HLS_part=P` for part 1 of the segment after the one the
    preload hint names just after a part was published (`ll_target`), so every request waits in the origin until
    that part is published, and all are released together. `--mode plain` (the nginx reference): `--stop` processes (the server's workers) are stopped with
    SIGSTOP, every connection sends a plain GET of `--path`, and the workers continue with SIGCONT: all requests are
    pending at one instant.

    Answer times are the kernel's receive time of each answer's last bytes (SO_TIMESTAMPNS), so the client's own
    slowness in reading 10,000 sockets is not counted. Prints one JSON object: per round the first-to-last answer
    spread, p50/p99/max of answer time minus the first answer's, errors; RSS of `--rss-pids` with the connections
    idle and while the requests wait (blocking mode)."""
    import signal
    selector = selectors.EpollSelector()
    sockets, errors = [], 0
    warm = f"GET {args.path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
    pending = {}
    for _ in range(args.count):
        s = socket.socket()
        s.setblocking(False)
        s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        s.connect_ex(("127.0.0.1", args.port))
        sockets.append(s)
        selector.register(s, selectors.EVENT_WRITE)
        pending[s] = b""
        while len(pending) >= 512:
            _, errors = pump(selector, pending, warm, 0, errors)
    while pending:
        _, errors = pump(selector, pending, warm, 0, errors)
    if errors:
        raise SystemExit(f"{errors} of {args.count} connections failed to open or answer")
    rss_pids = [int(p) for p in args.rss_pids.split(",")] if args.rss_pids else []
    stop_pids = [int(p) for p in args.stop.split(",")] if args.stop else []
    rounds = []
    for round_index in range(args.rounds):
        idle_rss = rss_kib(rss_pids) if rss_pids else None
        if args.mode == "blocking":
            msn, part = ll_target(args.port, args.path)
            target = f"{args.path}?_HLS_msn={msn}&_HLS_part={part}"
        else:
            target = args.path
            for pid in stop_pids:
                os.kill(pid, signal.SIGSTOP)
        request = f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
        sent_start = time.time()
        for s in sockets:
            s.send(request)
        sent_end = time.time()
        if args.mode == "blocking":
            time.sleep(0.05)  # the origin reads the last requests (the part is due ~0.2 s later)
        waiting_rss = rss_kib(rss_pids) if rss_pids else None
        if args.mode != "blocking":
            for pid in stop_pids:
                os.kill(pid, signal.SIGCONT)
        answers, failures = collect(sockets, args.timeout)
        times = sorted(t for t, _ in answers)
        early = sum(1 for t in times if t < sent_end)
        if args.mode == "blocking":
            needle = f"{msn}.{part}.".encode()
            failures += sum(1 for _, body in answers if needle not in body)
        first = times[0] if times else float("nan")
        offsets = [(t - first) * 1000 for t in times]
        pick = lambda q: offsets[min(len(offsets) - 1, int(q * len(offsets)))] if offsets else float("nan")
        rounds.append({
            "answers": len(times), "errors": failures,
            "send_ms": (sent_end - sent_start) * 1000, "answered_while_sending": early,
            "spread_ms": offsets[-1] if offsets else float("nan"), "p50_ms": pick(0.5), "p99_ms": pick(0.99),
            "max_ms": offsets[-1] if offsets else float("nan"),
            "rss_idle_kib": idle_rss, "rss_waiting_kib": waiting_rss})
    for s in sockets:
        s.close()
    print(json.dumps({"count": args.count, "mode": args.mode, "rounds": rounds}))


def collect(sockets, timeout):
    """Reads one HTTP answer (Content-Length bodies) from every socket; returns [(kernel receive time, body)] of
    the 200 answers and the number of other answers or failures."""
    import struct
    selector = selectors.EpollSelector()
    buffers, stamps = {}, {}
    for s in sockets:
        selector.register(s, selectors.EVENT_READ)
        buffers[s] = b""
    answers, failures = [], 0
    deadline = time.time() + timeout
    cmsg_space = socket.CMSG_SPACE(16)
    while buffers and time.time() < deadline:
        for key, _ in selector.select(timeout=0.5) or []:
            s = key.fileobj
            try:
                data, ancillary, _, _ = s.recvmsg(1 << 16, cmsg_space)
            except BlockingIOError:
                continue
            except OSError:
                data, ancillary = b"", []
            for level, kind, value in ancillary:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                    seconds, nanoseconds = struct.unpack("qq", value[:16])
                    stamps[s] = seconds + nanoseconds / 1e9
            if not data:
                failures += 1
                selector.unregister(s)
                del buffers[s]
                continue
            buffers[s] += data
            buffered = buffers[s]
            head_end = buffered.find(b"\r\n\r\n")
            if head_end < 0:
                continue
            m = re.search(rb"Content-Length: (\d+)", buffered[:head_end], re.I)
            if m and len(buffered) >= head_end + 4 + int(m.group(1)):
                if buffered.startswith(b"HTTP/1.1 200"):
                    answers.append((stamps.get(s, time.time()), buffered[head_end + 4:]))
                else:
                    failures += 1
                selector.unregister(s)
                del buffers[s]
    failures += len(buffers)
    selector.close()
    return answers, failures


def command_histogram(args):
    """The buckets of Prometheus histogram `--name` in /metrics (all label sets summed) as JSON {upper bound:
    cumulative count}; {} when the build does not export it."""
    status, body = Client(args.port).request("GET", "/metrics")
    buckets = {}
    for m in re.finditer(rf'^{re.escape(args.name)}_bucket{{(?:[^}}]*,)?le="([^"]+)"[^}}]*}} (\S+)$',
                         body.decode(errors="replace") if status == 200 else "", re.M):
        buckets[m.group(1)] = buckets.get(m.group(1), 0) + float(m.group(2))
    print(json.dumps(buckets))


def command_fanout_rows(args):
    """Table rows of figure 8 from the two `fanout` results and the release histogram before and after."""
    origin, nginx = json.loads(args.origin), json.loads(args.nginx)
    before, after = json.loads(args.release_before), json.loads(args.release_after)
    count = origin["count"]
    def summary(result, key):
        return median([r[key] for r in result["rounds"]])
    def every(result, key):
        return max(r[key] for r in result["rounds"])
    label = f"8. fan-out, {count:,} conns each blocked on the next part (nginx: a plain GET each, released at once)"
    h, n = summary(origin, "spread_ms"), summary(nginx, "spread_ms")
    rows = [{"row": f"{label}: first-to-last answer, median of {len(origin['rounds'])} rounds",
             "hlsorigin": f"{h:.1f} ms", "nginx": f"{n:.1f} ms", "ratio": f"{h / n:.2f}" if n else "n/a",
             "runs": len(origin["rounds"]),
             "errors": f'{sum(r["errors"] for r in origin["rounds"])} / {sum(r["errors"] for r in nginx["rounds"])}'}]
    for key, name in (("p50_ms", "p50"), ("p99_ms", "p99"), ("max_ms", "max")):
        rows.append({"row": f"8. fan-out: answer time after the round's first answer, {name} (worst round)",
                     "hlsorigin": f"{every(origin, key):.1f} ms", "nginx": f"{every(nginx, key):.1f} ms"})
    delta = {le: after.get(le, 0) - before.get(le, 0) for le in after}
    total = delta.get("+Inf", 0)
    if total:
        def quantile(q):
            for le, cumulative in sorted(((float(le), c) for le, c in delta.items()), key=lambda x: x[0]):
                if cumulative >= q * total:
                    return "> largest bucket" if le == float("inf") else f"<= {le * 1000:g} ms"
        rows.append({"row": "8. fan-out: server-side release (publish to the last waiter resumed), p50 / p99 / max",
                     "hlsorigin": f"{quantile(0.5)} / {quantile(0.99)} / {quantile(1.0)} ({total:.0f} releases)"})
    else:
        rows.append({"row": "8. fan-out: server-side release", "hlsorigin": "not exported by this build"})
    # The first round only: later rounds reuse what the first one allocated (their growth is about 0).
    first = origin["rounds"][0]
    if first["rss_idle_kib"] is not None:
        growth = (first["rss_waiting_kib"] - first["rss_idle_kib"]) * 1024 / count
        rows.append({"row": "8. fan-out: RSS growth per suspended request (first round; later ones reuse it)",
                     "hlsorigin": f"{growth:,.0f} B"})
    early = sum(r["answered_while_sending"] for r in origin["rounds"])
    rows.append({"row": "8. fan-out: answers received before the last request was sent (should be 0)",
                 "hlsorigin": f"{early}"})
    for row in rows:
        print(json.dumps(row))


# ---------------------------------------------------------------------------------------------------- ingest latency


def command_latency(args):
    """20 renditions pushed at once, at real time (2 s segments, starts staggered over 1 s), each the only rendition
    of its channel (lat00 ... lat19): for each segment, the time from the last byte of the PUT sent to the first
    playlist GET (on another keep-alive connection) that lists a new segment, and to the PUT's answer (the client
    waits for either in `select` on the PUT's socket, so the answer's time is exact to the poll's round trip).

    One process per rendition, so the clients neither share a GIL nor fall behind real time; between polls a
    client sleeps 0.2 ms (a poll is one loopback round trip, ~0.1 ms), so 20 pollers do not take the cores from
    the server they measure."""
    import multiprocessing

    directory = os.path.join(args.media, "2s")
    names = sorted(os.listdir(directory))[: args.segments]
    start = time.time() + 1.0
    queue = multiprocessing.Queue()
    processes = [multiprocessing.Process(target=latency_rendition, args=(args.port, directory, names, index, start,
                                                                         queue))
                 for index in range(args.renditions)]
    for process in processes:
        process.start()
    results, answers, failures, late = [], [], [], 0
    for _ in processes:
        rendition_results, rendition_answers, rendition_failures, rendition_late = queue.get()
        results += rendition_results
        answers += rendition_answers
        failures += rendition_failures
        late += rendition_late
    for process in processes:
        process.join()
    for failure in failures[:5]:
        log(failure)
    results.sort()
    answers.sort()
    p = lambda values, q: values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")
    print(json.dumps({"count": len(results), "failures": len(failures), "late": late, "p50": p(results, 0.50),
                      "p99": p(results, 0.99), "max": results[-1] if results else float("nan"),
                      "answer_p50": p(answers, 0.50), "answer_p99": p(answers, 0.99),
                      "answer_max": answers[-1] if answers else float("nan")}))


def latency_rendition(port, directory, names, index, start, queue):
    """One rendition of figure 4, in a process of its own: puts `[listed ms], [answered ms], [failures], late PUTs`
    on `queue`."""
    import select
    segments = [open(os.path.join(directory, n), "rb").read() for n in names]
    name = f"lat{index:02d}"
    put = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    get = Client(port)
    playlist_path = f"/live/{name}/r/index.m3u8"
    last_uri = None
    results, answers, failures, late = [], [], [], 0
    for k, data in enumerate(segments):
        delay = start + index * 0.05 + 2.0 * k - time.time()
        if delay > 0:
            time.sleep(delay)
        elif delay < -0.5:
            late += 1   # the client, not the origin, missed the segment's time
        put.putrequest("PUT", f"/ingest/{name}/r/{k:03d}.ts")
        put.putheader("Content-Length", str(len(data)))
        put.endheaders()
        put.send(data)
        sent = time.perf_counter()
        seen, answered = None, None
        while time.perf_counter() - sent < 5:
            status, playlist = get.request("GET", playlist_path)
            if status == 200:
                uri = playlist.rstrip().rsplit(b"\n", 1)[-1]
                if uri != last_uri:
                    seen = time.perf_counter()
                    last_uri = uri
                    break
            if answered is None:
                if select.select([put.sock], [], [], 0.0002)[0]:
                    answered = time.perf_counter()
            else:
                time.sleep(0.0002)
        response = put.getresponse()
        if answered is None:
            answered = time.perf_counter()
        body = response.read()
        if response.status != 201 or seen is None:
            failures.append(f"{name} segment {k}: PUT {response.status} {body.decode(errors='replace').strip()}")
        else:
            results.append((seen - sent) * 1000)
            answers.append((answered - sent) * 1000)
    queue.put((results, answers, failures, late))


# ---------------------------------------------------------------------------------------------------- bytes held


def command_held(args):
    """Sum of the segment bytes the origin holds in memory: listed entries plus the removed ones it still retains
    (their count from the admin status; a HEAD below the window would also find what the store serves from disk).
    Also the GAPs written and segments refused (a feed that fell behind real time) over all renditions."""
    client = Client(args.port)
    status, body = client.request("GET", "/admin/channels")
    statuses = [(c["name"], r) for c in json.loads(body) for r in c["renditions"]]
    retained = {(name, r["name"]): r["retainedSegments"] for name, r in statuses}
    total, segments = 0, 0
    for channel in range(args.channels):
        for rendition in args.renditions.split(","):
            name = f"{args.prefix}{channel:03d}"
            base = f"/live/{name}/{rendition}"
            status, playlist = client.request("GET", f"{base}/index.m3u8")
            if status != 200:
                continue
            sequence = int(re.search(rb"#EXT-X-MEDIA-SEQUENCE:(\d+)", playlist).group(1))
            uris = [line for line in playlist.decode().splitlines() if line and not line.startswith("#")]
            msns = [int(u.split(".")[0]) for u in uris]
            msns += range(max(0, sequence - retained.get((name, rendition), 0)), sequence)
            for msn in msns:
                client.connection.request("HEAD", f"{base}/{msn}.ts")
                response = client.connection.getresponse()
                response.read()
                if response.status == 200:
                    total += int(response.getheader("Content-Length"))
                    segments += 1
    gaps = sum(r["gapsWritten"] for _, r in statuses)
    rejected = sum(r["segmentsRejected"] for _, r in statuses)
    print(f"bytes={total} segments={segments} gaps={gaps} rejected={rejected}")


# ---------------------------------------------------------------------------------------------------- process


def command_cpu(args):
    """CPU of a process over `--seconds`, as % of one core, from /proc/PID/stat (utime + stime)."""
    def ticks():
        fields = open(f"/proc/{args.pid}/stat").read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    hz = os.sysconf("SC_CLK_TCK")
    before, t0 = ticks(), time.monotonic()
    time.sleep(args.seconds)
    after, t1 = ticks(), time.monotonic()
    print(f"{(after - before) / hz / (t1 - t0) * 100:.1f}")


# ---------------------------------------------------------------------------------------------------- table


def median(values):
    values = [v for v in values if v == v]
    return statistics.median(values) if values else float("nan")


def human_bytes(value):
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if value >= size:
            return f"{value / size:.1f} {unit}"
    return f"{value:.0f} B"


def command_table(args):
    """Prints one Markdown table from the JSON lines of results."""
    runs = [json.loads(line) for line in open(args.results) if line.strip()]
    extra = [r for r in runs if "row" in r]
    wrk = [r for r in runs if "server" in r]
    labels = []
    for r in wrk:
        if r["label"] not in labels:
            labels.append(r["label"])
    rows = []

    def ratio(a, b):
        return f"{a / b:.2f}" if b and a == a and b == b else "n/a"

    for label in labels:
        of = lambda server, key: median([r.get(key, float("nan")) for r in wrk
                                         if r["label"] == label and r["server"] == server])
        errors = sum(r["errors"] for r in wrk if r["label"] == label)
        n = len([r for r in wrk if r["label"] == label and r["server"] == "hlsorigin"])
        if label.startswith(("2.", "7.")):
            h, g = of("hlsorigin", "bps"), of("nginx", "bps")
            rows.append((label, f"{human_bytes(h)}/s", f"{human_bytes(g)}/s", ratio(h, g), n, errors))
        else:
            h, g = of("hlsorigin", "rps"), of("nginx", "rps")
            rows.append((label + ", req/s", f"{h:,.0f}", f"{g:,.0f}", ratio(h, g), n, errors))
            h, g = of("hlsorigin", "p99"), of("nginx", "p99")
            rows.append((label + ", p99 latency", f"{h:.2f} ms", f"{g:.2f} ms", ratio(h, g), n, ""))
        if any("cpu_us" in r for r in wrk if r["label"] == label):
            # CPU time of the server per request answered: steadier than req/s on a shared machine.
            h, g = of("hlsorigin", "cpu_us"), of("nginx", "cpu_us")
            rows.append((label + ", server CPU per request", f"{h:.1f} us", f"{g:.1f} us", ratio(h, g), n, ""))
    small = next((l for l in labels if l.startswith("1.") and "64 conns" in l), None)
    large = next((l for l in labels if l.startswith("6.")), None)
    if small and large:
        def window_ratio(server):
            of = lambda label: median([r["rps"] for r in wrk if r["label"] == label and r["server"] == server])
            return ratio(of(large), of(small))
        rows.append(("6. req/s 600-segment / 6-segment playlist", window_ratio("hlsorigin"), window_ratio("nginx"),
                     "", "", ""))
    for r in extra:
        rows.append((r["row"], r.get("hlsorigin", ""), r.get("nginx", ""), r.get("ratio", ""), r.get("runs", ""),
                     r.get("errors", "")))
    rows.sort(key=lambda row: row[0].split(".")[0])  # by figure, stable
    print("| figure | hlsorigin | nginx | ratio h/n | runs | errors |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in rows:
        print("| " + " | ".join(str(c) for c in row) + " |")


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("media"); p.add_argument("directory")
    p = sub.add_parser("push-segments"); p.add_argument("--port", type=int); p.add_argument("--media"); p.add_argument("--root")
    p.add_argument("--channel", default="seg"); p.add_argument("--sizes")
    p = sub.add_parser("await-disk"); p.add_argument("--port", type=int); p.add_argument("--path")
    p.add_argument("--file"); p.add_argument("--wait", type=float, default=60)
    p = sub.add_parser("push-window"); p.add_argument("--port", type=int); p.add_argument("--media"); p.add_argument("--count", type=int, default=600)
    p = sub.add_parser("mirror"); p.add_argument("--port", type=int); p.add_argument("--path"); p.add_argument("--root")
    p.add_argument("--segments", type=int, default=6); p.add_argument("--wait", type=float, default=30)
    p.add_argument("--with-segments", action="store_true")
    p = sub.add_parser("newest"); p.add_argument("--port", type=int); p.add_argument("--path"); p.add_argument("--root")
    p.add_argument("--save"); p.add_argument("--parts", action="store_true")
    p = sub.add_parser("counters"); p.add_argument("--port", type=int); p.add_argument("--name", action="append")
    p = sub.add_parser("parse-wrk"); p.add_argument("file"); p.add_argument("--label"); p.add_argument("--server")
    p.add_argument("--cpu-file")
    p = sub.add_parser("idle"); p.add_argument("--port", type=int); p.add_argument("--count", type=int); p.add_argument("--path")
    p = sub.add_parser("fanout"); p.add_argument("--port", type=int); p.add_argument("--path")
    p.add_argument("--count", type=int, default=10000); p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--mode", choices=["blocking", "plain"], default="blocking"); p.add_argument("--stop")
    p.add_argument("--rss-pids"); p.add_argument("--timeout", type=float, default=10)
    p = sub.add_parser("histogram"); p.add_argument("--port", type=int); p.add_argument("--name")
    p = sub.add_parser("fanout-rows"); p.add_argument("--origin"); p.add_argument("--nginx")
    p.add_argument("--release-before"); p.add_argument("--release-after")
    p = sub.add_parser("latency"); p.add_argument("--port", type=int); p.add_argument("--media")
    p.add_argument("--renditions", type=int, default=20); p.add_argument("--segments", type=int, default=50)
    p = sub.add_parser("held"); p.add_argument("--port", type=int); p.add_argument("--channels", type=int)
    p.add_argument("--renditions"); p.add_argument("--prefix", default="c")
    p = sub.add_parser("cpu"); p.add_argument("--pid", type=int); p.add_argument("--seconds", type=float)
    p = sub.add_parser("table"); p.add_argument("results")
    args = parser.parse_args()
    if args.command == "media":
        generate_media(args.directory)
    else:
        globals()["command_" + args.command.replace("-", "_")](args)


if __name__ == "__main__":
    main()
