"""POST /inference (whisper.cpp's form) and POST /v1/audio/transcriptions
(OpenAI's) against lt-asr --words on the same files, in formats libsndfile
reads (WAV 16-bit, 8-bit and float, stereo, AIFF, AU), in every response
format; and each bad upload answered with one JSON error."""
import array
import json
import math
import os
import struct

import harness as h
from harness import Server


def files():
    base = h.espeak("please transcribe this short recording", "base.wav")
    rate, _, _, pcm = h.read_wav(base)
    x = array.array("h", pcm)
    out = {"wav": base}
    out["wav-u8"] = h.write_wav(os.path.join(h.WORK, "u8.wav"), rate, bytes((v >> 8) + 128 for v in x), width=1)
    out["wav-stereo"] = h.write_wav(os.path.join(h.WORK, "stereo.wav"), rate,
                                    array.array("h", [v for s in x for v in (s, s // 2)]).tobytes(), channels=2)
    out["wav-float"] = float_wav(os.path.join(h.WORK, "float.wav"), rate, [v / 32768 for v in x])
    big = array.array("h", x)
    big.byteswap()
    out["aiff"] = aiff(os.path.join(h.WORK, "base.aiff"), rate, big.tobytes())
    out["au"] = au(os.path.join(h.WORK, "base.au"), rate, big.tobytes())
    return out


def aiff(path, rate, big_endian_pcm):
    """AIFF: FORM, a COMM chunk (the rate as an 80-bit extended float), SSND."""
    exponent = math.frexp(rate)[1]  # rate = m * 2^exponent, 0.5 <= m < 1
    mantissa = int(rate * 2 ** (64 - exponent))
    rate80 = struct.pack(">HQ", 16383 + exponent - 1, mantissa)
    frames = len(big_endian_pcm) // 2
    comm = b"COMM" + struct.pack(">IhIh", 18, 1, frames, 16) + rate80
    ssnd = b"SSND" + struct.pack(">III", 8 + len(big_endian_pcm), 0, 0) + big_endian_pcm
    with open(path, "wb") as f:
        f.write(b"FORM" + struct.pack(">I", 4 + len(comm) + len(ssnd)) + b"AIFF" + comm + ssnd)
    return path


def au(path, rate, big_endian_pcm):
    """Sun/NeXT .au: a 24-byte header, 16-bit linear PCM (encoding 3)."""
    with open(path, "wb") as f:
        f.write(b".snd" + struct.pack(">IIIII", 24, len(big_endian_pcm), 3, rate, 1) + big_endian_pcm)
    return path


def float_wav(path, rate, samples):
    """A WAV of 32-bit float samples (format 3), written by hand."""
    data = struct.pack("<%df" % len(samples), *samples)
    header = b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE" + b"fmt " + struct.pack(
        "<IHHIIHH", 16, 3, 1, rate, 4 * rate, 4, 32) + b"data" + struct.pack("<I", len(data))
    with open(path, "wb") as f:
        f.write(header + data)
    return path


def upload(path):
    with open(path, "rb") as f:
        return (os.path.basename(path), f.read(), "application/octet-stream")


def test_both_endpoints_equal_lt_asr():
    paths = files()
    want = h.lt_asr(paths.values(), stream=False)
    with Server() as server:
        for kind, path in paths.items():
            ref = want[path]
            for endpoint, extra in (("/inference", {}), ("/v1/audio/transcriptions", {"model": "whisper-1"})):
                status, headers, body = h.post_form(server.url + endpoint, {"file": upload(path), **extra})
                assert status == 200, (kind, endpoint, status, body)
                j = json.loads(body)
                assert j["text"] == ref["text"], (kind, endpoint, j["text"], ref["text"])
                assert h.words_of(j["words"]) == h.words_of(ref["words"]), (kind, endpoint)
                assert h.phones_of(j["phones"]) == h.phones_of(ref["phones"]), (kind, endpoint)
        assert server.stop() == 0


def test_response_formats():
    path = h.espeak("one sentence here. and after a long pause, another one", "two.wav")
    ref = h.lt_asr([path], stream=False)[path]
    with Server() as server:
        url = server.url + "/v1/audio/transcriptions"
        got = {}
        for fmt in ("json", "text", "verbose_json", "srt", "vtt"):
            status, headers, body = h.post_form(url, {"file": upload(path), "model": "asr", "response_format": fmt})
            assert status == 200, (fmt, status, body)
            got[fmt] = (headers["Content-Type"], body.decode())
    assert got["text"] == ("text/plain; charset=utf-8", ref["text"] + "\n")
    v = json.loads(got["verbose_json"][1])
    assert v["task"] == "transcribe" and v["text"] == ref["text"] and abs(v["duration"] - ref["duration"]) < 1e-9
    assert h.words_of(v["words"]) == h.words_of(ref["words"])
    assert [w for s in v["segments"] for w in h.words_of(s["words"])] == h.words_of(ref["words"])
    assert " ".join(s["text"] for s in v["segments"]) == ref["text"]
    for s in v["segments"]:
        assert s["start"] == s["words"][0]["start"] and s["end"] == s["words"][-1]["end"]
    srt, vtt = got["srt"][1], got["vtt"][1]
    assert vtt.startswith("WEBVTT\n\n") and got["vtt"][0].startswith("text/vtt")
    cues = [c for c in srt.strip().split("\n\n")]
    assert len(cues) == len(v["segments"])
    for i, (cue, seg) in enumerate(zip(cues, v["segments"])):
        number, times, text = cue.split("\n")
        assert number == str(i + 1) and text == seg["text"]
        start, end = times.split(" --> ")
        assert start == stamp(seg["start"], ",") and end == stamp(seg["end"], ",")
        assert f"{stamp(seg['start'], '.')} --> {stamp(seg['end'], '.')}\n{seg['text']}\n" in vtt


def stamp(seconds, mark):
    ms = round(seconds * 1000)
    return "%02d:%02d:%02d%s%03d" % (ms // 3600000, ms // 60000 % 60, ms // 1000 % 60, mark, ms % 1000)


def test_bad_uploads_get_one_error():
    rate = 16000
    nan = float_wav(os.path.join(h.WORK, "nan.wav"), rate, [0.0] * 800 + [float("nan")] + [0.0] * 800)
    good = h.espeak("fine", "fine.wav")
    with Server() as server:
        url = server.url + "/inference"

        def refused(status, fields=None, body=None, ctype=None, contains=""):
            if body is None:
                s, _, b = h.post_form(url, fields)
            else:
                s, _, b = h.http("POST", url, body, {"Content-Type": ctype})
            assert s == status, (status, s, b)
            error = h.error_of(b)
            assert contains in error, (contains, error)

        refused(400, {"file": upload(nan)}, contains="NaN")
        refused(400, {"file": ("x.wav", b"this is not audio at all" * 10, "audio/wav")})
        refused(400, {"response_format": "json"}, contains="'file'")
        refused(400, {"file": upload(good), "response_format": "mp3"}, contains="response_format")
        refused(400, {"file": upload(good), "model": "../../weights/asr.safetensors"}, contains="unknown model")
        refused(400, {"file": upload(good), "model": "/etc/passwd"}, contains="unknown model")
        refused(400, {"file": upload(good), "language": "fr"}, contains="English")
        body, ctype = h.form({"file": upload(good)})
        refused(400, body=body[:len(body) // 2], ctype=ctype, contains="truncated")
        refused(400, body=body, ctype="multipart/form-data", contains="boundary")
        refused(415, body=b"{}", ctype="application/json", contains="multipart/form-data")
        # The server goes on: the good file still transcribes.
        status, _, b = h.post_form(url, {"file": upload(good)})
        assert status == 200 and json.loads(b)["text"], b


if __name__ == "__main__":
    h.main(globals())
