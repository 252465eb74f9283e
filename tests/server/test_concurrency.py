"""50 WebSocket streams of 50 different recordings at once: each one's
results equal lt-asr --stream --words's on that recording alone, and the
server's steps really batched them (its /metrics)."""
import asyncio
import re

import harness as h
from harness import Server

WORDS = ["red", "green", "blue", "seven", "apple", "river", "north", "silver", "happy", "window", "garden", "music",
         "yellow", "table", "orange", "coffee", "morning", "paper", "winter", "summer"]
VOICES = ["en-us", "en-gb", "en-gb-scotland", "en-029", "en-gb-x-rp"]
STREAMS = 50


def recordings():
    paths = []
    for i in range(STREAMS):
        text = " ".join(WORDS[(i * k + 3 * k) % len(WORDS)] for k in (1, 2, 3))
        paths.append(h.espeak(text, f"r{i:02d}.wav", voice=VOICES[i % len(VOICES)], speed=150 + 7 * (i % 8),
                              pitch=30 + 5 * (i % 9)))
    return paths


def test_fifty_streams_each_as_alone():
    paths = recordings()
    want = h.lt_asr(paths, stream=True)

    async def all_at_once(url):
        return await asyncio.gather(*(h.vosk_transcribe(url, p, chunk_seconds=0.1) for p in paths))

    with Server("--requests-per-second", "0", "--max-streams", str(STREAMS)) as server:
        outcomes = asyncio.run(all_at_once(server.ws_url))
        _, _, metrics = h.http("GET", server.url + "/metrics")
        assert server.stop() == 0
    for path, replies in zip(paths, outcomes):
        words, phones = h.stream_outcome(replies)
        assert words == h.words_of(want[path]["words"]), (path, words, want[path]["text"])
        assert phones == h.phones_of(want[path]["phones"]), path
    text = metrics.decode()
    ones = int(re.search(r'lt_server_stream_batch_size_bucket\{le="1"\} (\d+)', text).group(1))
    steps = int(re.search(r"lt_server_stream_batch_size_count (\d+)", text).group(1))
    total = float(re.search(r"lt_server_stream_batch_size_sum (\S+)", text).group(1))
    print(f"  {steps} steps, {total / steps:.1f} streams a step on average, {ones} steps of one stream")
    assert steps > 0 and total / steps > 4, "the streams were not batched"


if __name__ == "__main__":
    h.main(globals())
