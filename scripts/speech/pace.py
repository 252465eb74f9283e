#!/usr/bin/env python3
"""Writes WAV files to stdout as a live source delivers audio: one WAV header
(its data size left open, as streaming writers leave it), then the samples in
pieces of --piece-ms at real-time pace. Several files play one after another
as one stream (they must share rate, channels and sample width).

    scripts/speech/pace.py a.wav b.wav | build/bin/lt-asr --stream -f json -

lt-asr's latency (latency_mean_ms, latency_max_ms) is then that of a live
stream: the time from the piece that completes a phone's audio to its
printing."""
import argparse
import struct
import sys
import time
import wave


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", help="WAV files (PCM)")
    ap.add_argument("--piece-ms", type=float, default=100.0, help="audio per write")
    ap.add_argument("--speed", type=float, default=1.0, help="pace: 1 is real time, 2 twice as fast")
    a = ap.parse_args()
    readers = []
    for path in a.files:
        try:
            readers.append(wave.open(path, "rb"))
        except OSError as e:
            sys.exit(f"pace.py: {path}: cannot open it ({e.strerror})")
        except (wave.Error, EOFError) as e:
            sys.exit(f"pace.py: {path}: not a PCM WAV file" + (f" ({e})" if str(e) else ""))
    rate, channels, width = readers[0].getframerate(), readers[0].getnchannels(), readers[0].getsampwidth()
    for path, r in zip(a.files, readers):
        if (r.getframerate(), r.getnchannels(), r.getsampwidth()) != (rate, channels, width):
            sys.exit(f"pace.py: {path}: rate, channels or sample width differ from {a.files[0]}'s")
    out = sys.stdout.buffer
    block = channels * width
    # RIFF and data sizes 0xFFFFFFFF: read to the end of the stream.
    out.write(b"RIFF" + struct.pack("<I", 0xFFFFFFFF) + b"WAVEfmt " +
              struct.pack("<IHHIIHH", 16, 1, channels, rate, rate * block, block, 8 * width) +
              b"data" + struct.pack("<I", 0xFFFFFFFF))
    out.flush()
    piece = max(1, int(rate * a.piece_ms / 1000))
    start, sent = time.monotonic(), 0
    for r in readers:
        while True:
            data = r.readframes(piece)
            if not data:
                break
            sent += len(data) // block
            delay = start + sent / rate / a.speed - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            out.write(data)
            out.flush()


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:
        sys.exit(1)
