"""What lt-server's tests share: starting build/bin/lt-server on a free port
(read from its "listening on" line), recordings made with espeak-ng, lt-asr's
and the image tools' own answers to compare with, and clients written from
the protocols' documentation (Vosk's WebSocket protocol, RFC 7578 forms),
not from the server's code.

Each test file is a script: its test_* functions run in order, and it exits
1 if any failed. ctest passes --bin BUILD/bin (tests/CMakeLists.txt)."""
import argparse
import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request
import uuid
import wave

import websockets

ARGS = None
WORK = None
# One CPU thread for the server and the tools: the suite runs tests side by
# side on few cores, where OpenMP's spinning threads make every process
# many times slower (docs/benchmarks.md, "Under CPU contention").
os.environ.setdefault("OMP_NUM_THREADS", "1")


def bin_path(tool):
    return os.path.join(ARGS.bin, tool)


class Server:
    """build/bin/lt-server --port 0 ARGS..., stopped on leaving a with."""

    def __init__(self, *args, timeout=120):
        self.log = []
        self.proc = subprocess.Popen([bin_path("lt-server"), "--port", "0", "--host", "127.0.0.1", *args],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + timeout
        while True:
            line = self.proc.stderr.readline()
            if not line:
                raise RuntimeError("lt-server exited before listening: " + "".join(self.log))
            self.log.append(line)
            m = re.search(r"listening on (https?)://([^\s]+):(\d+)", line)
            if m:
                self.scheme, self.host, self.port = m.group(1), m.group(2), int(m.group(3))
                break
            if time.time() > deadline:
                raise RuntimeError("lt-server did not start: " + "".join(self.log))
        self.url = f"{self.scheme}://{self.host}:{self.port}"
        self.ws_url = ("wss" if self.scheme == "https" else "ws") + f"://{self.host}:{self.port}"
        self._drain = threading.Thread(target=self._read_log, daemon=True)
        self._drain.start()

    def _read_log(self):
        for line in self.proc.stderr:
            self.log.append(line)

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        finally:
            self._drain.join(5)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


# ---- recordings ----

def espeak(text, name, voice="en-us", speed=175, pitch=50):
    """espeak-ng's 22,050 Hz 16-bit mono WAV of text, in the work folder."""
    path = os.path.join(WORK, name)
    subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-p", str(pitch), "-w", path, text], check=True)
    return path


def read_wav(path):
    with wave.open(path, "rb") as w:
        return w.getframerate(), w.getnchannels(), w.getsampwidth(), w.readframes(w.getnframes())


def write_wav(path, rate, pcm, channels=1, width=2):
    with wave.open(path, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(width)
        w.setframerate(rate)
        w.writeframes(pcm)
    return path


def resampled(path, rate, name):
    """A copy of a 16-bit mono WAV at another rate by linear interpolation
    (crude, but lt-asr hears the same file as the server)."""
    import array
    src_rate, _, _, pcm = read_wav(path)
    x = array.array("h", pcm)
    n = int((len(x) - 1) * rate / src_rate)
    y = array.array("h", [0] * n)
    for i in range(n):
        t = i * src_rate / rate
        j = int(t)
        f = t - j
        y[i] = int(round((1 - f) * x[j] + f * x[j + 1]))
    return write_wav(os.path.join(WORK, name), rate, y.tobytes())


# ---- what the tools say ----

def lt_asr(paths, stream, extra=()):
    """lt-asr [--stream] --words -f json [extra...] on each path: {path: result}."""
    cmd = [bin_path("lt-asr"), "--words", "-f", "json", "-q"] + (["--stream"] if stream else []) + list(extra) + list(paths)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    results = [json.loads(line) for line in out.splitlines() if line.strip()]
    return {r["path"]: r for r in results}


def words_of(tokens):
    return [(t["word"], t["start"], t["end"]) for t in tokens]


def phones_of(tokens):
    return [(t["phone"], t["start"], t["end"]) for t in tokens]


# ---- HTTP, as urllib does it ----

def http(method, url, body=None, headers=None, timeout=60):
    """(status, headers, body bytes); HTTP errors are answers too."""
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=HTTP_CONTEXT) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


HTTP_CONTEXT = None  # an ssl.SSLContext for https (test_tls sets it)


def form(fields):
    """multipart/form-data (RFC 7578): fields are name -> str, or name ->
    (filename, bytes, content type). Returns (body, content type)."""
    boundary = "----lt-test-" + uuid.uuid4().hex
    out = b""
    for name, value in fields.items():
        out += b"--" + boundary.encode() + b"\r\n"
        if isinstance(value, tuple):
            filename, data, ctype = value
            out += f'Content-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'.encode()
            out += f"Content-Type: {ctype}\r\n\r\n".encode() + data + b"\r\n"
        else:
            out += f'Content-Disposition: form-data; name="{name}"\r\n\r\n'.encode() + value.encode() + b"\r\n"
    out += b"--" + boundary.encode() + b"--\r\n"
    return out, "multipart/form-data; boundary=" + boundary


def post_form(url, fields, headers=None):
    body, ctype = form(fields)
    return http("POST", url, body, {"Content-Type": ctype, **(headers or {})})


def error_of(body):
    """The one error of a refusal: a JSON object with exactly the key "error"."""
    j = json.loads(body)
    assert set(j) == {"error"} and isinstance(j["error"], str) and j["error"], f"not one JSON error: {body!r}"
    return j["error"]


# ---- Vosk's protocol, as its documentation and example clients speak it ----

async def vosk_transcribe(ws_url, path, chunk_seconds=0.2, words=True, pace=0.0, extra=None, **connect):
    """vosk-server's test client: config, binary 16-bit frames each answered,
    then {"eof": 1} and its final result. Returns every reply (parsed)."""
    rate, channels, width, pcm = read_wav(path)
    assert channels == 1 and width == 2
    replies = []
    async with websockets.connect(ws_url + "/asr", max_size=None, **connect) as ws:
        config = {"sample_rate": rate, "words": words}
        config.update(extra or {})
        await ws.send(json.dumps({"config": config}))
        step = int(rate * chunk_seconds) * 2
        for at in range(0, len(pcm), step):
            await ws.send(pcm[at:at + step])
            replies.append(json.loads(await ws.recv()))
            if pace:
                await asyncio.sleep(pace)
        await ws.send('{"eof" : 1}')
        replies.append(json.loads(await ws.recv()))
    return replies


def stream_outcome(replies):
    """The words of every result and the phones of every reply, in order."""
    words, phones = [], []
    for r in replies:
        assert "error" not in r, r
        words += r.get("result", [])
        phones += r.get("phones", [])
    return words_of(words), phones_of(phones)


async def expect_ws_error(ws, code):
    """The next message is one JSON error, then the server closes with code."""
    msg = json.loads(await asyncio.wait_for(ws.recv(), 30))
    assert set(msg) == {"error"}, msg
    try:
        extra = await asyncio.wait_for(ws.recv(), 30)
        raise AssertionError(f"a message after the error: {extra!r}")
    except websockets.ConnectionClosed:
        pass
    assert ws.close_code == code, f"closed with {ws.close_code} ({ws.close_reason!r}), expected {code}"
    return msg["error"]


# ---- running ----

def main(tests):
    global ARGS, WORK
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True, help="the build's bin folder (lt-server, lt-asr, ...)")
    parser.add_argument("names", nargs="*", help="run only these tests")
    ARGS = parser.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory(prefix="lt-server-test-") as work:
        WORK = work
        for name, fn in tests.items():
            if not name.startswith("test_") or not callable(fn) or (ARGS.names and name not in ARGS.names):
                continue
            t0 = time.time()
            try:
                fn()
                print(f"PASS {name} ({time.time() - t0:.1f} s)", flush=True)
            except Exception:
                failed += 1
                print(f"FAIL {name} ({time.time() - t0:.1f} s)", flush=True)
                traceback.print_exc()
    sys.exit(1 if failed else 0)


# ---- PNG, as the format's specification says (8-bit, not interlaced) ----

def png_pixels(data):
    """(width, height, channels, bytes) of an 8-bit PNG (grey, grey+alpha, RGB, RGBA)."""
    import struct
    import zlib
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    at, idat, width = 8, b"", None
    while at < len(data):
        n, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + n]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and interlace == 0
            channels = {0: 1, 4: 2, 2: 3, 6: 4}[colour]
        elif kind == b"IDAT":
            idat += body
        at += 12 + n
    raw = zlib.decompress(idat)
    stride = width * channels
    out, prev = bytearray(), bytearray(stride)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out += line
        prev = line
    return width, height, channels, bytes(out)


def png_bytes(width, height, channels, pixels):
    """An 8-bit PNG of the pixels (filter 0 on every row)."""
    import struct
    import zlib

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    colour = {1: 0, 2: 4, 3: 2, 4: 6}[channels]
    stride = width * channels
    raw = b"".join(b"\x00" + pixels[y * stride:(y + 1) * stride] for y in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
