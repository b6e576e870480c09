"""What the Python scripts share (scripts/torture, scripts/soak, scripts/simulate-outage): a free port, the origin
started and waited for, a process stopped, and ffmpeg's arguments for a test-pattern encoder pushing HLS with PUT.

A script beside this file imports it with `sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))`.
Standard library only.
"""
import os
import re
import socket
import subprocess
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RELEASE_BINARY = os.path.join(ROOT, ".build", "release", "hlsorigin")


def free_port():
    """A TCP port on 127.0.0.1 nobody listens on (the kernel's choice; free until someone binds it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_origin(binary, config, data_dir, port, stderr, failure, cwd=None, host="127.0.0.1", deadline=30.0,
                 pause=0.2):
    """Starts `binary` and waits for its `hlsorigin listening on HOST:PORT` line; returns (process, port).

    A start that exits without that line is tried again every `pause` seconds (after a kill -9 the port or the data
    directory may be held a moment) until `deadline` seconds have passed, then SystemExit(failure). Port 0 lets the
    origin choose; the port it listens on is returned. Its stdout is drained in the background after that line."""
    began = time.monotonic()
    while True:
        process = subprocess.Popen(
            [binary, "--config", config, "--host", host, "--port", str(port), "--data-dir", data_dir],
            stdout=subprocess.PIPE, stderr=stderr, cwd=cwd)
        line = process.stdout.readline().decode(errors="replace")
        match = re.search(r"listening on \S*:(\d+)", line)
        if match:
            threading.Thread(target=process.stdout.read, daemon=True).start()
            return process, int(match.group(1))
        process.wait()
        if time.monotonic() - began > deadline:
            raise SystemExit(failure)
        time.sleep(pause)


def stop_process(process, timeout=10):
    """SIGTERM, then SIGKILL after `timeout` seconds; the exit status, or None if it had to be killed."""
    if process is None or process.poll() is not None:
        return process.returncode if process else None
    process.terminate()
    try:
        return process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return None


def test_pattern_input(size, rate):
    """ffmpeg input arguments: lavfi's testsrc2 picture (`size` as WxH, `rate` frames a second) and a 440 Hz tone."""
    return ["-f", "lavfi", "-i", f"testsrc2=size={size}:rate={rate}",
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000"]


def hls_put_output(url, segment_seconds, list_size=6, persistent=False):
    """ffmpeg output arguments: the HLS muxer pushing segments and playlist to `url` (`.../index.m3u8`) with PUT."""
    persistence = ["-http_persistent", "1"] if persistent else []
    return ["-f", "hls", "-hls_time", str(segment_seconds), "-hls_list_size", str(list_size), "-method", "PUT",
            *persistence, url]
