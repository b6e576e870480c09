#!/usr/bin/env python3
"""End-to-end check of ad markers: real ffmpeg pushes two renditions to the release binary, 20 markers are posted
(open ones closed by PATCH, SCTE-35, scheduled ahead, END-ON-NEXT, raw sections), the playlists are read for a minute,
the origin is killed with SIGKILL and restarted, and no acknowledged marker may be missing.

Usage: scripts/markers-e2e.py [BINARY] [SECONDS]   (default .build/release/hlsorigin, 60)
Exits 0 and prints "N passed, 0 failed" when every check holds. Traffic goes to 127.0.0.1 only; everything stops by
itself."""
import json, os, re, signal, subprocess, sys, tempfile, time, urllib.request, urllib.error
from datetime import datetime, timezone, timedelta

BINARY = sys.argv[1] if len(sys.argv) > 1 else ".build/release/hlsorigin"
SECONDS = int(sys.argv[2]) if len(sys.argv) > 2 else 60
ADMIN, INGEST = "e2e-admin-token", "e2e-ingest-token"
passed, failed = 0, 0


def check(condition, what):
    global passed, failed
    if condition:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what, flush=True)


def start_origin(data):
    """Starts the origin; retries while the port is still held after a kill (up to 90 s)."""
    env = dict(os.environ, HLSORIGIN_ADMIN_TOKEN=ADMIN, HLSORIGIN_INGEST_TOKEN=INGEST)
    began = time.time()
    while True:
        process = subprocess.Popen([BINARY, "--config", config, "--host", "127.0.0.1", "--port", str(port),
                                    "--data-dir", data, "--log-level", "warning"],
                                   stdout=subprocess.PIPE, stderr=open(os.path.join(work, "origin.log"), "a"),
                                   env=env)
        line = process.stdout.readline().decode()
        if "listening" in line:
            if time.time() - began > 1:
                print(f"origin started after {time.time() - began:.1f} s of retries (port still in use)", flush=True)
            return process
        process.wait()
        assert time.time() - began < 90, "origin does not start: see origin.log"
        time.sleep(1)


def start_ffmpeg(name, size, rate):
    return subprocess.Popen([
        "ffmpeg", "-nostdin", "-v", "error", "-re", "-f", "lavfi", "-i", f"testsrc2=size={size}:rate=25",
        "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
        "-c:v", "libx264", "-preset", "ultrafast", "-b:v", rate, "-g", "50", "-keyint_min", "50",
        "-sc_threshold", "0", "-c:a", "aac", "-b:a", "64k", "-f", "hls", "-hls_time", "2", "-hls_list_size", "6",
        "-method", "PUT", "-headers", f"Authorization: Bearer {INGEST}\r\n",
        f"http://127.0.0.1:{port}/ingest/live/{name}/index.m3u8"],
        stderr=open(os.path.join(work, f"ffmpeg-{name}.log"), "a"))


def request(method, path, body=None, token=ADMIN, raw=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
    except (urllib.error.URLError, ConnectionError) as error:
        return 0, str(error)


def iso(moment):
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def attributes(tag):
    return dict(re.findall(r'([A-Z0-9-]+)=("[^"]*"|[^,]*)', tag.split(":", 1)[1]))


def playlist(rendition):
    status, text = request("GET", f"/live/live/{rendition}/index.m3u8", token=None)
    return text if status == 200 else None


work = tempfile.mkdtemp(prefix="markers-e2e-")
data = os.path.join(work, "data")
config = os.path.join(work, "config.yaml")
port = 18000 + os.getpid() % 1000
with open(config, "w") as file:
    file.write("channels:\n  - name: live\n    segmentDuration: 2\n    window: { segments: 6 }\n"
               "    renditions: [{name: hi}, {name: lo}]\n")
origin = start_origin(data)
encoders = [start_ffmpeg("hi", "640x360", "600k"), start_ffmpeg("lo", "320x180", "200k")]
try:
    deadline = time.time() + 30
    while time.time() < deadline and not (playlist("hi") and playlist("lo")):
        time.sleep(0.5)
    check(playlist("hi") and playlist("lo"), "both renditions publish a playlist")

    # Status codes of bad requests.
    check(request("GET", "/admin/channels/live/dateranges", token=None)[0] == 401, "no token: 401")
    check(request("GET", "/admin/channels/live/dateranges", token="wrong")[0] == 401, "wrong token: 401")
    check(request("POST", "/admin/channels/live/dateranges", raw=b"{nope")[0] == 400, "invalid JSON: 400")
    check(request("POST", "/admin/channels/live/dateranges", {"id": "u", "what": 1})[0] == 400, "unknown field: 400")
    check(request("POST", "/admin/channels/live/dateranges", {"id": "u", "duration": -1})[0] == 400, "negative: 400")
    check(request("POST", "/admin/channels/live/dateranges",
                  raw=b'{"id": "big", "class": "' + b"x" * 70000 + b'"}')[0] == 413, "body over 64 KiB: 413")
    check(request("PUT", "/ingest/live/hi/x.ts", token="wrong", raw=b"x")[0] == 401, "ingest with a wrong token: 401")

    now = datetime.now(timezone.utc)
    raw_out = "0xFC302F000000000000FFFFF014054800008F7FEFFE7369C02EFE0052CCF500000000000A0008435545490000013562DBA30A"
    bodies = []
    for i in range(5):
        bodies.append({"id": f"open-{i}", "class": "ad", "startDate": iso(now - timedelta(seconds=i)),
                       "plannedDuration": 20, "scte35": "out"})
    for i in range(5):
        bodies.append({"id": f"fixed-{i}", "startDate": iso(now - timedelta(seconds=2 - i * 0.5)),
                       "duration": 6 + i, "scte35": "out", "clientAttributes": {"X-AD-ID": f"ad{i}", "X-N": i}})
    for i in range(4):
        bodies.append({"id": f"ahead-{i}", "startDate": iso(now + timedelta(seconds=10 + 5 * i)), "duration": 4})
    for i in range(4):
        bodies.append({"id": f"chapter-{i}", "class": "chapter", "startDate": iso(now + timedelta(seconds=6 * i)),
                       "endOnNext": True})
    for i in range(2):
        bodies.append({"id": f"raw-{i}", "duration": 8, "scte35": {"out": raw_out},
                       "clientAttributes": {"X-BLOB": {"hex": "0x0A0B"}}})
    acknowledged = {}
    for body in bodies:
        status, text = request("POST", "/admin/channels/live/dateranges", body)
        check(status == 201, f"POST {body['id']}: {status} {text[:200]}")
        if status == 201:
            acknowledged[body["id"]] = json.loads(text)["tag"]
    status, _ = request("POST", "/admin/channels/live/dateranges", bodies[5])
    check(status == 200, "the same body again: 200")
    status, _ = request("POST", "/admin/channels/live/dateranges", dict(bodies[5], duration=99))
    check(status == 409, "a different body with an existing id: 409")

    seen = {}  # id -> list of tag texts in the order seen
    seen_in = {}  # id -> renditions
    closed = False
    start = time.time()
    snapshots = 0
    while time.time() - start < SECONDS:
        if not closed and time.time() - start > 10:
            for i in range(5):
                status, text = request("PATCH", f"/admin/channels/live/dateranges/open-{i}",
                                       {"endDate": iso(datetime.now(timezone.utc))})
                check(status == 200, f"PATCH open-{i}: {status} {text[:200]}")
                if status == 200:
                    acknowledged[f"open-{i}"] = json.loads(text)["tag"]
            closed = True
        for rendition in ("hi", "lo"):
            text = playlist(rendition)
            if not text:
                continue
            snapshots += 1
            lines = text.splitlines()
            segments = [line for line in lines if line and not line.startswith("#")]
            pdts = [line for line in lines if line.startswith("#EXT-X-PROGRAM-DATE-TIME:")]
            tags = [line for line in lines if line.startswith("#EXT-X-DATERANGE:")]
            if tags:
                check(len(pdts) == len(segments), f"{rendition}: PDT on every segment with DATERANGE present")
            for tag in tags:
                marker = attributes(tag)["ID"].strip('"')
                history = seen.setdefault(marker, [])
                if not history or history[-1] != tag:
                    if history:
                        old, new = attributes(history[-1]), attributes(tag)
                        check(all(new.get(k) == v for k, v in old.items()),
                              f"{marker}: shown attributes never change ({history[-1]} -> {tag})")
                    history.append(tag)
                seen_in.setdefault(marker, set()).add(rendition)
        time.sleep(1)
    print(f"read {snapshots} playlists", flush=True)
    for marker in acknowledged:
        check(seen_in.get(marker) == {"hi", "lo"}, f"{marker} appeared in both renditions ({seen_in.get(marker)})")

    # kill -9 and restart: every acknowledged marker not pruned is back with the same tag.
    before = json.loads(request("GET", "/admin/channels/live/dateranges")[1])
    before_tags = {m["marker"]["id"]: m["tag"] for m in before["markers"]}
    for marker, tag in before_tags.items():
        check(acknowledged.get(marker) == tag, f"{marker}: the stored tag is the acknowledged one")
    origin.send_signal(signal.SIGKILL)
    origin.wait()
    origin = start_origin(data)
    after = json.loads(request("GET", "/admin/channels/live/dateranges")[1])
    after_tags = {m["marker"]["id"]: m["tag"] for m in after["markers"]}
    check(after_tags == before_tags, f"after kill -9 the same markers are back ({len(after_tags)}/{len(before_tags)})")
    for index, encoder in enumerate(encoders):
        if encoder.poll() is not None:
            encoders[index] = start_ffmpeg(["hi", "lo"][index], ["640x360", "320x180"][index], ["600k", "200k"][index])
    deadline = time.time() + 30
    listed = set()
    while time.time() < deadline:
        for rendition in ("hi", "lo"):
            text = playlist(rendition) or ""
            listed |= {attributes(l)["ID"].strip('"') + "@" + rendition for l in text.splitlines()
                       if l.startswith("#EXT-X-DATERANGE:")}
            for line in text.splitlines():
                if line.startswith("#EXT-X-DATERANGE:"):
                    marker = attributes(line)["ID"].strip('"')
                    check(line == before_tags.get(marker), f"{marker}: same tag after the restart")
        time.sleep(1)
    open_markers = [m for m in after_tags if m.startswith("chapter-3")]
    for marker in open_markers:
        check(f"{marker}@hi" in listed and f"{marker}@lo" in listed, f"{marker} is listed again after the restart")
finally:
    for encoder in encoders:
        encoder.terminate()
    origin.terminate()
    for process in encoders + [origin]:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
