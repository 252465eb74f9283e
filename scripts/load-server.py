#!/usr/bin/env python3
"""Load for lt-server (docs/server.md, "Measured"): N WebSocket clients
replaying recordings into /asr at real-time pace, in Vosk's protocol, each
a recording per connection and then the next, for a given duration. It
measures the lag of every reply (from sending a frame to its answer), late
replies over a bound, the server's memory over time (its /proc status, when
the server's pid is known), and, separately, HTTP file transcriptions per
second. A line of progress on stderr every --sample-seconds; a JSON summary
on stdout.

  scripts/load-server.py --server build/bin/lt-server --streams 20 --duration 60
  scripts/load-server.py --url ws://127.0.0.1:8080 --pid 1234 --streams 50 --duration 3600
  scripts/load-server.py --server build/bin/lt-server --find --max-lag 0.5 --duration 30
  scripts/load-server.py --server build/bin/lt-server --files 40 --concurrency 4

Needs python3-websockets (Debian) and, for the default recordings, espeak-ng."""
import argparse
import asyncio
import concurrent.futures
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
import wave

import websockets

SENTENCES = [
    "the quick brown fox jumps over the lazy dog",
    "please call stella and ask her to bring these things with her from the store",
    "six spoons of fresh snow peas and five thick slabs of blue cheese",
    "we also need a small plastic snake and a big toy frog for the kids",
    "she can scoop these things into three red bags and we will go meet her",
    "a rainbow is a division of white light into many beautiful colors",
]


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def recordings(paths, work):
    """(rate, 16-bit mono PCM) of each WAV; espeak-ng's sentences by default."""
    if not paths:
        paths = []
        for i, s in enumerate(SENTENCES):
            p = os.path.join(work, f"s{i}.wav")
            subprocess.run(["espeak-ng", "-v", ["en-us", "en-gb"][i % 2], "-w", p, s], check=True)
            paths.append(p)
    out = []
    for p in paths:
        with wave.open(p, "rb") as w:
            if w.getnchannels() != 1 or w.getsampwidth() != 2:
                sys.exit(f"load-server: {p}: needs 16-bit mono WAV")
            out.append((w.getframerate(), w.readframes(w.getnframes())))
    return out


def rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            m = re.search(r"VmRSS:\s+(\d+) kB", f.read())
            return int(m.group(1)) / 1024 if m else None
    except OSError:
        return None


def percentile(values, q):
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))]


class Stats:
    def __init__(self):
        self.lags, self.final_lags = [], []
        self.audio_seconds = 0.0
        self.streams_done = self.errors = 0
        self.live = 0


async def client(url, recs, frame_seconds, deadline, stats, rng, headers):
    """One client: a recording per connection, at real-time pace, until the deadline."""
    await asyncio.sleep(rng.uniform(0, 2))  # start apart, as people do
    while time.monotonic() < deadline:
        rate, pcm = recs[rng.randrange(len(recs))]
        step = int(rate * frame_seconds) * 2
        sent = []  # send time of each frame awaiting its reply
        try:
            async with websockets.connect(url + "/asr", max_size=None, extra_headers=headers) as ws:
                stats.live += 1

                async def reader():
                    while True:
                        reply = json.loads(await ws.recv())
                        if "error" in reply:
                            raise RuntimeError(reply["error"])
                        now = time.monotonic()
                        t0 = sent.pop(0)
                        if "partial" in reply or sent:
                            stats.lags.append(now - t0)
                        else:
                            stats.final_lags.append(now - t0)
                            return

                reading = asyncio.ensure_future(reader())
                await ws.send(json.dumps({"config": {"sample_rate": rate, "words": True}}))
                start = time.monotonic()
                for k, at in enumerate(range(0, len(pcm), step)):
                    # Real time: frame k leaves when its audio would have been recorded.
                    delay = start + (k + 1) * frame_seconds - time.monotonic()
                    if delay > 0:
                        await asyncio.sleep(delay)
                    sent.append(time.monotonic())
                    await ws.send(pcm[at:at + step])
                sent.append(time.monotonic())
                await ws.send('{"eof": 1}')
                await asyncio.wait_for(reading, 120)
                stats.audio_seconds += len(pcm) / 2 / rate
                stats.streams_done += 1
        except Exception as e:  # noqa: BLE001 (a load test counts failures, it does not stop on them)
            stats.errors += 1
            log(f"load-server: a stream failed: {e}")
            await asyncio.sleep(1)
        finally:
            stats.live = max(0, stats.live - 1)


async def run_streams(url, recs, n, duration, frame_seconds, pid, sample_seconds, headers, seed, base):
    """base: the server's resident MB before any stream (freed memory stays
    with the process, so each run is measured from the first one's start)."""
    stats = Stats()
    deadline = time.monotonic() + duration
    rng = random.Random(seed)
    tasks = [asyncio.ensure_future(client(url, recs, frame_seconds, deadline, stats, random.Random(rng.random()),
                                          headers)) for _ in range(n)]
    samples = []
    t0 = time.monotonic()
    while not all(t.done() for t in tasks):
        await asyncio.sleep(sample_seconds)
        rss = rss_mb(pid) if pid else None
        p95 = percentile(stats.lags[-2000:], 0.95)
        samples.append({"t": round(time.monotonic() - t0, 1), "live": stats.live, "rss_mb": rss,
                        "p95_lag_s": p95, "streams_done": stats.streams_done, "errors": stats.errors})
        log(f"load-server: {samples[-1]['t']:7.1f} s  {stats.live:4d} live  "
            f"{'' if rss is None else f'{rss:8.1f} MB'}  p95 lag {p95 if p95 is None else f'{p95:.3f} s'}  "
            f"{stats.streams_done} streams done, {stats.errors} failed")
    await asyncio.gather(*tasks)
    peak = max((s["rss_mb"] for s in samples if s["rss_mb"] is not None), default=None)
    return {
        "streams": n, "duration_s": duration, "frame_s": frame_seconds,
        "replies": len(stats.lags), "p50_lag_s": percentile(stats.lags, 0.5), "p95_lag_s": percentile(stats.lags, 0.95),
        "max_lag_s": max(stats.lags, default=None), "p95_final_lag_s": percentile(stats.final_lags, 0.95),
        "audio_s": round(stats.audio_seconds, 1), "streams_done": stats.streams_done, "errors": stats.errors,
        "rss_idle_mb": base, "rss_peak_mb": peak,
        "mb_per_stream": None if base is None or peak is None else round((peak - base) / n, 2),
        "memory": samples,
    }


def transcribe_files(http_url, recs_paths, count, concurrency, headers):
    """count POST /inference of the recordings, concurrency at a time: files a second."""
    bodies = []
    for p in recs_paths:
        with open(p, "rb") as f:
            data = f.read()
        boundary = "lt-load-" + uuid.uuid4().hex
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n"
                f"Content-Type: audio/wav\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
        bodies.append((body, "multipart/form-data; boundary=" + boundary, wave.open(p).getnframes() / wave.open(p).getframerate()))

    def one(i):
        body, ctype, seconds = bodies[i % len(bodies)]
        t = time.monotonic()
        req = urllib.request.Request(http_url + "/inference", data=body, method="POST",
                                     headers={"Content-Type": ctype, **headers})
        with urllib.request.urlopen(req, timeout=600) as r:
            r.read()
        return time.monotonic() - t, seconds

    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        results = list(pool.map(one, range(count)))
    wall = time.monotonic() - t0
    return {"files": count, "concurrency": concurrency, "wall_s": round(wall, 2),
            "files_per_s": round(count / wall, 2), "audio_s_per_s": round(sum(s for _, s in results) / wall, 2),
            "p95_request_s": percentile([t for t, _ in results], 0.95)}


def start_server(binary, extra):
    proc = subprocess.Popen([binary, "--port", "0", "--requests-per-second", "0", "--max-streams", "100000",
                             "--max-connections", "100000", *extra], stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        m = re.search(r"listening on (http|https)://(\S+)", line)
        if m:
            # The rest of its log goes on to ours, so that a full pipe never stops it.
            threading.Thread(target=lambda: [log(l.rstrip("\n")) for l in proc.stderr], daemon=True).start()
            return proc, m.group(1) + "://" + m.group(2)
    sys.exit("load-server: the server did not start")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", help="start this lt-server binary on a free port (stopped at the end)")
    ap.add_argument("--server-arg", action="append", default=[], help="an extra flag for --server (repeatable)")
    ap.add_argument("--url", help="a running server, e.g. http://127.0.0.1:8080 (ws:// works too)")
    ap.add_argument("--pid", type=int, help="the running server's pid, for its memory")
    ap.add_argument("--api-key", help="sent as Authorization: Bearer")
    ap.add_argument("--audio", nargs="*", default=[], help="16-bit mono WAV recordings (default: espeak-ng sentences)")
    ap.add_argument("--streams", type=int, default=10, help="clients streaming at once")
    ap.add_argument("--duration", type=float, default=30, help="seconds of streaming (each run, with --find)")
    ap.add_argument("--frame-seconds", type=float, default=0.1, help="audio per WebSocket frame")
    ap.add_argument("--sample-seconds", type=float, default=5, help="seconds between progress lines")
    ap.add_argument("--max-lag", type=float, default=0.5, help="--find: the p95 lag a run may have")
    ap.add_argument("--find", action="store_true", help="the most streams held with p95 lag under --max-lag")
    ap.add_argument("--files", type=int, default=0, help="also time this many POST /inference")
    ap.add_argument("--concurrency", type=int, default=2, help="--files: requests at once")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if not a.server and not a.url:
        ap.error("give --server BINARY or --url URL")
    headers = {"Authorization": "Bearer " + a.api_key} if a.api_key else {}
    proc = None
    if a.server:
        proc, url = start_server(a.server, a.server_arg)
        pid = proc.pid
    else:
        url, pid = a.url, a.pid
    base = rss_mb(pid) if pid else None
    http_url = url.replace("ws://", "http://").replace("wss://", "https://")
    ws_url = http_url.replace("http://", "ws://").replace("https://", "wss://")
    summary = {"url": http_url}
    try:
        with tempfile.TemporaryDirectory(prefix="lt-load-") as work:
            recs = recordings(a.audio, work)
            paths = a.audio or [os.path.join(work, f"s{i}.wav") for i in range(len(SENTENCES))]
            if a.find:
                held, n, tried = 0, max(1, a.streams), []
                low, high = 0, None
                while True:
                    r = asyncio.run(run_streams(ws_url, recs, n, a.duration, a.frame_seconds, pid, a.sample_seconds,
                                                headers, a.seed, base))
                    ok = r["errors"] == 0 and r["p95_lag_s"] is not None and r["p95_lag_s"] <= a.max_lag
                    tried.append({k: r[k] for k in ("streams", "p95_lag_s", "errors", "mb_per_stream")} | {"held": ok})
                    log(f"load-server: {n} streams: p95 lag {r['p95_lag_s']} s, {r['errors']} failed: "
                        f"{'held' if ok else 'not held'}")
                    if ok:
                        low, held = n, n
                    else:
                        high = n
                    if high is None:
                        n *= 2
                    elif high - low <= max(1, low // 10):
                        break
                    else:
                        n = (low + high) // 2
                summary["find"] = {"max_lag_s": a.max_lag, "streams_held": held, "runs": tried}
            else:
                summary["streams"] = asyncio.run(run_streams(ws_url, recs, a.streams, a.duration, a.frame_seconds,
                                                             pid, a.sample_seconds, headers, a.seed, base))
            if a.files:
                summary["files"] = transcribe_files(http_url, paths, a.files, a.concurrency, headers)
    finally:
        if proc:
            proc.terminate()
            proc.wait(60)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
