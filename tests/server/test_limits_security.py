"""Keys, limits and bad input: a missing or wrong key is refused on every
endpoint but /health and the page; each limit, when hit, is answered with one
JSON error (an HTTP status, or on a WebSocket one {"error"} message and a
close code); names from clients never reach the file system; malformed
frames and requests get one error each while another connection's stream
goes on untouched."""
import asyncio
import json
import os
import socket
import struct
import time

import websockets

import harness as h
from harness import Server


def raw_request(server, data, read_timeout=10):
    """Bytes sent on a fresh socket; the whole answer until the server closes."""
    with socket.create_connection((server.host, server.port), timeout=read_timeout) as s:
        s.sendall(data)
        out = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return out
            out += chunk


def status_and_body(answer):
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body


def ws_refused(url, **kw):
    """The HTTP status a WebSocket handshake is refused with."""
    async def go():
        try:
            async with websockets.connect(url, **kw):
                return 101
        except websockets.InvalidStatusCode as e:
            return e.status_code
    return asyncio.run(go())


def test_api_keys():
    keys = os.path.join(h.WORK, "keys.txt")
    with open(keys, "w") as f:
        f.write("# the second key\n\nsecond-key   # a comment\n")
    with Server("--api-key", "first-key", "--api-key-file", keys) as server:
        u = server.url
        assert h.http("GET", u + "/health")[0] == 200
        assert h.http("GET", u + "/")[0] == 200 and h.http("GET", u + "/app.js")[0] == 200
        body = b'{"seed": 1}'
        for headers, query, want in (({}, "", 401), ({"Authorization": "Bearer wrong"}, "", 401),
                                     ({"Authorization": "Bearer first-key"}, "", 200),
                                     ({"Authorization": "bearer second-key"}, "", 200),
                                     ({}, "?api_key=second-key", 200), ({}, "?api_key=first-key%20", 401),
                                     ({}, "?api_key=first", 401)):
            status, hdrs, b = h.http("POST", u + "/v1/images" + query, body, headers)
            assert status == want, (headers, query, status, b)
            if want == 401:
                assert "key" in h.error_of(b) and hdrs.get("WWW-Authenticate") == "Bearer"
        status, _, b = h.http("GET", u + "/metrics")
        assert status == 401 and h.error_of(b)
        assert h.http("GET", u + "/metrics", headers={"Authorization": "Bearer second-key"})[0] == 200
        status, _, b = h.post_form(u + "/inference", {"file": ("a.wav", b"RIFF", "audio/wav")})
        assert status == 401 and h.error_of(b)
        # A WebSocket: refused without a key; a browser's subprotocol, a
        # program's header or the query is accepted.
        ws = server.ws_url + "/asr"
        assert ws_refused(ws) == 401
        assert ws_refused(ws, subprotocols=["lt", "lt-key.nope"]) == 401
        assert ws_refused(server.ws_url + "/images/stream") == 401

        async def accepted(url, **kw):
            async with websockets.connect(url, **kw) as c:
                await c.send('{"eof": 1}')
                reply = json.loads(await c.recv())
                return c.subprotocol, reply

        assert asyncio.run(accepted(ws, subprotocols=["lt", "lt-key.first-key"])) == ("lt", {"text": "", "phones": []})
        assert asyncio.run(accepted(ws, subprotocols=["lt-key.second-key"]))[0] == "lt-key.second-key"
        assert asyncio.run(accepted(ws, extra_headers={"Authorization": "Bearer first-key"}))[0] is None
        assert asyncio.run(accepted(ws + "?api_key=second-key"))[0] is None


def test_connection_and_stream_limits():
    with Server("--max-connections", "2", "--max-streams", "1") as server:
        held = [socket.create_connection((server.host, server.port)) for _ in range(2)]
        time.sleep(0.2)
        status, body = status_and_body(raw_request(server, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"))
        assert status == 503 and "connections" in h.error_of(body), body
        for s in held:
            s.close()
        time.sleep(0.2)
        assert h.http("GET", server.url + "/health")[0] == 200

        async def two_streams():
            async with websockets.connect(server.ws_url + "/asr") as first:
                try:
                    async with websockets.connect(server.ws_url + "/asr"):
                        return "second accepted"
                except websockets.InvalidStatusCode as e:
                    second = e.status_code
                await first.send('{"eof": 1}')
                await first.recv()
            return second

        assert asyncio.run(two_streams()) == 503
        # The slot came back.
        assert asyncio.run(h.vosk_transcribe(server.ws_url, h.espeak("yes", "yes.wav")))[-1]["text"] == "YES"


def test_size_and_length_limits():
    path = h.espeak("this recording is longer than one second of audio", "long.wav")
    with Server("--max-message-bytes", "4096", "--max-upload-bytes", "20000", "--max-stream-seconds", "1") as server:
        async def big_message():
            async with websockets.connect(server.ws_url + "/asr", max_size=None) as ws:
                await ws.send(b"\0" * 5000)
                return await h.expect_ws_error(ws, 1009)
        assert "4096" in asyncio.run(big_message())
        status, _, b = h.http("POST", server.url + "/v1/images", b'{"seed": 1, "x": "' + b"a" * 5000 + b'"}')
        assert status == 413 and "limit" in h.error_of(b)
        status, _, b = h.post_form(server.url + "/inference", {"file": ("big.wav", b"\0" * 30000, "audio/wav")})
        assert status == 413 and "limit" in h.error_of(b)

        async def too_long():
            rate, _, _, pcm = h.read_wav(path)
            async with websockets.connect(server.ws_url + "/asr") as ws:
                await ws.send(json.dumps({"config": {"sample_rate": rate}}))
                step = int(rate * 0.05) * 2  # under --max-message-bytes
                for at in range(0, len(pcm), step):
                    await ws.send(pcm[at:at + step])
                    reply = json.loads(await ws.recv())
                    if "error" in reply:
                        try:
                            await ws.recv()
                        except websockets.ConnectionClosed:
                            pass
                        return reply["error"], ws.close_code, at
            return None
        error, code, at = asyncio.run(too_long())
        assert code == 1008 and "1 s" in error and 0.95 * 22050 * 2 <= at <= 1.05 * 22050 * 2, (error, code, at)


def test_idle_and_rate_limits():
    with Server("--idle-seconds", "1", "--requests-per-second", "2") as server:
        async def idle():
            async with websockets.connect(server.ws_url + "/asr") as ws:
                await ws.send('{"config": {"sample_rate": 16000}}')
                t0 = time.time()
                error = await h.expect_ws_error(ws, 1008)
                return error, time.time() - t0
        error, waited = asyncio.run(idle())
        assert "idle" in error and 0.8 < waited < 5, (error, waited)
        # An HTTP connection that sends nothing is closed.
        t0 = time.time()
        assert raw_request(server, b"") == b"" and time.time() - t0 < 5
        time.sleep(2.5)  # the bucket refills
        statuses = [h.http("GET", server.url + "/metrics")[0] for _ in range(8)]
        assert statuses[:4] == [200] * 4 and 429 in statuses[4:], statuses
        status, headers, b = h.http("POST", server.url + "/v1/images", b'{"seed": 2}')
        assert status == 429 and headers["Retry-After"] == "1" and "too many requests" in h.error_of(b)
        assert h.http("GET", server.url + "/health")[0] == 200  # never limited


def test_bad_input_leaves_other_streams_alone():
    good = h.espeak("nothing that happens elsewhere changes this stream", "good.wav")
    want = h.lt_asr([good], stream=True)[good]
    bad_frames = [
        (["not json at all"], "not JSON"),
        (['{"config": {"sample_rate": 16000}, "eof": 1}'], "expected"),
        (['{"config": {"sample_rate": 0}}'], "sample_rate"),
        (['{"config": {"sample_rate": "16000"}}'], "sample_rate"),
        (['{"config": {"format": "mp3"}}'], "format"),
        (['{"config": {"model": "/etc/passwd"}}'], "unknown model"),
        (['{"config": {"model": "../weights/asr-stream.safetensors"}}'], "unknown model"),
        ([b"\x01\x02\x03"], "whole 16-bit samples"),
        (['{"config": {"format": "f32le"}}', struct.pack("<3f", 0.1, float("nan"), 0.2)], "NaN"),
        (['{"config": {"format": "f32le"}}', struct.pack("<2f", 0.1, float("inf"))], "infinite"),
        (['{"config": {"format": "f32le"}}', struct.pack("<2f", 0.1, 7.0)], "beyond"),
        ([b"\0\0" * 100, '{"config": {"sample_rate": 8000}}'], "after audio"),
        (['{"reset": 1}', '{"config": {"sample_rate": 8000}}'], "after audio or a reset"),
        (['{"config": {"sample_rate": 384001}}'], "sample_rate"),
        (['{"eof": 1}', b"\0\0"], "after eof"),
        (['{"eof": 0}'], "eof"),
        (['{"config": []}'], "object"),
        (['"\xff\xfe"'], "expected"),
    ]

    async def bad(url, frames):
        async with websockets.connect(url + "/asr") as ws:
            for f in frames:
                await ws.send(f)
            msgs = []
            while True:
                m = json.loads(await ws.recv())
                if "error" in m:
                    break
                msgs.append(m)  # an eof's final result comes before "after eof"
            try:
                await ws.recv()
                raise AssertionError("a message after the error")
            except websockets.ConnectionClosed:
                pass
            assert set(m) == {"error"} and ws.close_code == 1007, (m, ws.close_code)
            return m["error"]

    async def everything(url):
        stream = asyncio.ensure_future(h.vosk_transcribe(url, good, pace=0.05))
        errors = []
        for frames, contains in bad_frames:
            errors.append((await bad(url, frames), contains))
        return await stream, errors

    with Server() as server:
        replies, errors = asyncio.run(everything(server.ws_url))
        for error, contains in errors:
            assert contains in error, (contains, error)
        words, phones = h.stream_outcome(replies)
        assert words == h.words_of(want["words"]) and phones == h.phones_of(want["phones"])
        # Requests that are not HTTP, and paths that try to leave the page's folder.
        status, body = status_and_body(raw_request(server, b"NOT HTTP AT ALL\r\n\r\n"))
        assert status == 400 and "malformed" in h.error_of(body)
        status, body = status_and_body(raw_request(server, b"GET / HTTP/1.1\r\n" + b"X: " + b"a" * 20000 + b"\r\n\r\n"))
        assert status == 431 and h.error_of(body)
        for path in (b"/../../etc/passwd", b"/%2e%2e/%2e%2e/etc/passwd", b"/web/../app.js", b"//etc/passwd",
                     b"/app.js/..", b"/index.html%00"):
            status, body = status_and_body(raw_request(server, b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n\r\n"))
            assert status in (400, 404) and h.error_of(body), (path, status, body)
        status, _, b = h.http("DELETE", server.url + "/health")
        assert status == 405 and h.error_of(b)
        status, _, b = h.http("GET", server.url + "/asr")
        assert status == 400 and "WebSocket" in h.error_of(b)
        assert h.http("GET", server.url + "/health")[0] == 200
        assert server.stop() == 0


if __name__ == "__main__":
    h.main(globals())
