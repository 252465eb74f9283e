"""/asr against lt-asr --stream --words: a client written from Vosk's
protocol (config, 16-bit PCM frames each answered, eof) gets, over all its
results, lt-asr's words with their times, and over all its replies lt-asr's
settled phones, at the recordings' own rates (resampled by the stream,
lt_stream_set_rate, as lt resamples a file); partials come while the audio
is still being sent."""
import asyncio
import os
import random

import harness as h
from harness import Server


def recordings():
    a = h.espeak("hello world, this is a test of the server", "a.wav")
    b = h.espeak("seven green apples fell from the old tree", "b.wav", voice="en-gb", speed=160)
    return [a, b, h.resampled(a, 16000, "a16.wav"), h.resampled(b, 8000, "b8.wav"), h.resampled(a, 44100, "a44.wav")]


def test_results_equal_lt_asr_stream():
    paths = recordings()
    want = h.lt_asr(paths, stream=True)
    with Server() as server:
        for path in paths:
            replies = asyncio.run(h.vosk_transcribe(server.ws_url, path))
            words, phones = h.stream_outcome(replies)
            ref = want[path]
            assert words == h.words_of(ref["words"]), f"{os.path.basename(path)}: {words} != {ref['words']}"
            assert phones == h.phones_of(ref["phones"]), f"{os.path.basename(path)}: phones differ"
            # One reply per frame and one for eof; a result's text is its words.
            rate, _, _, pcm = h.read_wav(path)
            frames = -(-len(pcm) // (int(rate * 0.2) * 2))
            assert len(replies) == frames + 1, (len(replies), frames)
            for r in replies:
                assert ("partial" in r) != ("text" in r), r
                if "result" in r:
                    assert r["text"] == " ".join(w["word"] for w in r["result"])
                    assert all(w["conf"] == 1.0 for w in r["result"])
            # Results come as it speaks: words appear in partials before the end.
            assert any(r.get("partial") for r in replies[:-1]), "no partial words before eof"
        assert server.stop() == 0


def test_bf16_products_equal_lt_asr_bf16():
    """--bf16: the stream model's products in bf16, as lt-asr --bf16 (on AMX
    where the CPU has it), and /health says so; a CPU without AVX512_BF16
    refuses both alike."""
    path = h.espeak("seven green apples fell from the old tree", "bf16.wav", voice="en-gb", speed=160)
    try:
        want = h.lt_asr([path], stream=True, extra=["--bf16"])[path]
    except h.subprocess.CalledProcessError as e:
        assert "AVX512_BF16" in e.stderr, e.stderr
        try:
            with Server("--bf16"):
                raise AssertionError("lt-server --bf16 started where lt-asr --bf16 refused")
        except RuntimeError as refused:
            assert "AVX512_BF16" in str(refused), refused
        return
    with Server("--bf16") as server:
        status, _, body = h.http("GET", server.url + "/health")
        assert status == 200 and h.json.loads(body)["precision"] == "bf16", body
        words, phones = h.stream_outcome(asyncio.run(h.vosk_transcribe(server.ws_url, path)))
        assert server.stop() == 0
    assert words == h.words_of(want["words"]), (words, want["words"])
    assert phones == h.phones_of(want["phones"])


def test_any_frame_sizes():
    """Frames of random whole-sample sizes give the same results."""
    path = h.espeak("the quick brown fox jumps over the lazy dog", "fox.wav")
    want = h.lt_asr([path], stream=True)[path]
    rng = random.Random(5)
    rate, _, _, pcm = h.read_wav(path)

    async def client(url):
        replies = []
        import websockets
        async with websockets.connect(url + "/asr") as ws:
            await ws.send('{"config": {"sample_rate": %d, "words": 1}}' % rate)
            at = 0
            while at < len(pcm):
                n = 2 * rng.randint(0, 3000)
                await ws.send(pcm[at:at + n])
                at += n
                replies.append(h.json.loads(await ws.recv()))
            await ws.send('{"eof": 1}')
            replies.append(h.json.loads(await ws.recv()))
        return replies

    with Server() as server:
        words, phones = h.stream_outcome(asyncio.run(client(server.ws_url)))
    assert words == h.words_of(want["words"])
    assert phones == h.phones_of(want["phones"])


def test_without_words_and_reset():
    """Without "words" a result is {"text"} alone (Vosk's form); a reset is
    answered with a result, and the stream goes on."""
    path = h.espeak("one two three four five six", "count.wav")
    want = h.lt_asr([path], stream=True)[path]

    async def client(url):
        import websockets
        rate, _, _, pcm = h.read_wav(path)
        replies = []
        async with websockets.connect(url + "/asr") as ws:
            await ws.send('{"config": {"sample_rate": %d}}' % rate)
            half = len(pcm) // 4 * 2
            await ws.send(pcm[:half])
            replies.append(h.json.loads(await ws.recv()))
            await ws.send('{"reset": 1}')
            reset = h.json.loads(await ws.recv())
            await ws.send(pcm[half:])
            replies.append(h.json.loads(await ws.recv()))
            await ws.send('{"eof": 1}')
            final = h.json.loads(await ws.recv())
        return replies, reset, final

    with Server() as server:
        replies, reset, final = asyncio.run(client(server.ws_url))
    assert "text" in reset and "result" not in reset and "partial" not in reset, reset
    assert "text" in final and "result" not in final, final
    said = (reset["text"] + " " + " ".join(r.get("text", "") for r in replies) + " " + final["text"]).split()
    assert said == [w["word"] for w in want["words"]], (said, want["text"])


if __name__ == "__main__":
    h.main(globals())
