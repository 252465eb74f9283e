"""SIGTERM and SIGINT: the server stops accepting, lets a stream in flight
finish with its final result (equal to lt-asr --stream --words's), ends the
streams still open at --drain-seconds with the final result of what they
sent (then closes 1001), and exits 0."""
import asyncio
import json
import os
import signal
import socket
import time

import websockets

import harness as h
from harness import Server


async def send_frames(ws, pcm, rate, start, end, pace):
    step = int(rate * 0.1) * 2
    replies = []
    for at in range(start, end, step):
        await ws.send(pcm[at:min(at + step, end)])
        replies.append(json.loads(await ws.recv()))
        await asyncio.sleep(pace)
    return replies


def refused(server):
    try:
        socket.create_connection((server.host, server.port), timeout=5).close()
        return False
    except OSError:
        return True


def test_stream_in_flight_gets_its_final_result():
    path = h.espeak("the server is asked to stop while this is being said", "stop.wav")
    want = h.lt_asr([path], stream=True)[path]
    rate, _, _, pcm = h.read_wav(path)
    half = len(pcm) // 4 * 2
    with Server("--drain-seconds", "30") as server:
        async def client():
            async with websockets.connect(server.ws_url + "/asr") as ws:
                await ws.send(json.dumps({"config": {"sample_rate": rate, "words": True}}))
                replies = await send_frames(ws, pcm, rate, 0, half, 0.02)
                server.proc.send_signal(signal.SIGTERM)
                await asyncio.sleep(0.5)
                assert refused(server), "still accepting after SIGTERM"
                replies += await send_frames(ws, pcm, rate, half, len(pcm), 0.02)
                await ws.send('{"eof": 1}')
                replies.append(json.loads(await ws.recv()))
                try:
                    await ws.recv()
                except websockets.ConnectionClosed:
                    pass
                return replies, ws.close_code

        replies, code = asyncio.run(client())
        assert code == 1000
        words, phones = h.stream_outcome(replies)
        assert words == h.words_of(want["words"]) and phones == h.phones_of(want["phones"])
        assert server.proc.wait(30) == 0
        assert any("drained" in line for line in server.log), server.log


def test_drain_deadline_ends_open_streams():
    path = h.espeak("this client goes quiet and never says goodbye", "quiet.wav")
    rate, _, _, pcm = h.read_wav(path)
    part = len(pcm) // 3 * 2
    sent = h.write_wav(os.path.join(h.WORK, "sent.wav"), rate, pcm[:part])
    want = h.lt_asr([sent], stream=True)[sent]
    with Server("--drain-seconds", "1") as server:
        async def client():
            async with websockets.connect(server.ws_url + "/asr") as ws:
                await ws.send(json.dumps({"config": {"sample_rate": rate, "words": True}}))
                replies = await send_frames(ws, pcm, rate, 0, part, 0)
                t0 = time.time()
                server.proc.send_signal(signal.SIGTERM)
                while True:
                    try:
                        replies.append(json.loads(await asyncio.wait_for(ws.recv(), 20)))
                    except websockets.ConnectionClosed:
                        return replies, ws.close_code, ws.close_reason, time.time() - t0

        replies, code, reason, waited = asyncio.run(client())
        assert code == 1001 and "shutting down" in reason, (code, reason)
        assert 0.9 < waited < 10, waited
        assert "text" in replies[-1] and "partial" not in replies[-1], replies[-1]
        words, _ = h.stream_outcome(replies)
        assert [w[0] for w in words] == [w["word"] for w in want["words"]], (words, want["text"])
        assert server.proc.wait(30) == 0


def test_second_signal_stops_at_once():
    """A second signal ends everything now: a live stream and images being
    drawn are dropped, and the process still exits 0 (and cleanly: the
    sanitizer builds run this too)."""
    path = h.espeak("interrupted before the end", "cut.wav")
    rate, _, _, pcm = h.read_wav(path)
    with Server("--drain-seconds", "60") as server:
        async def clients():
            async with websockets.connect(server.ws_url + "/asr", close_timeout=1) as ws, \
                    websockets.connect(server.ws_url + "/images/stream", close_timeout=1) as images:
                await images.send(json.dumps({"count": 4, "seed": 1}))
                await images.recv()
                await ws.send(json.dumps({"config": {"sample_rate": rate}}))
                await send_frames(ws, pcm, rate, 0, len(pcm) // 2 // 2 * 2, 0)
                server.proc.send_signal(signal.SIGTERM)
                await asyncio.sleep(0.3)
                t0 = time.time()
                server.proc.send_signal(signal.SIGINT)
                code = await asyncio.get_running_loop().run_in_executor(None, server.proc.wait, 20)
                return code, time.time() - t0

        code, waited = asyncio.run(clients())
        assert code == 0 and waited < 5, (code, waited)
        assert any("second signal" in line for line in server.log), server.log


def test_sigint_when_idle():
    with Server() as server:
        assert h.http("GET", server.url + "/health")[0] == 200
        t0 = time.time()
        assert server.stop(signal.SIGINT) == 0 and time.time() - t0 < 5


if __name__ == "__main__":
    h.main(globals())
