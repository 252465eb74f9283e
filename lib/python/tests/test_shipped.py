"""The shipped files from Python as the tools find them (lt.find_shipped),
and a recognizer set up as lt-asr sets one up (Recognizer.like_lt_asr),
against lt-asr itself on a fresh sentence: the same phones and words with
the same times. lt-asr is the one beside the library under test
(LT_LIBRARY's ../bin)."""
import json
import os
import subprocess

import pytest

import lt
from test_lt import WEIGHTS, rng  # noqa: F401  (fixtures)

SAID = ("seven days without rain the quick brown fox jumps over lazy dog open window green light turn left "
        "right stop morning").split()


def _lt_asr():
    library = os.environ.get("LT_LIBRARY", "build/lib/liblt.so.0")
    return os.path.join(os.path.dirname(os.path.abspath(library)), "..", "bin", "lt-asr")


def test_find_shipped_names_the_weights_the_tools_read(monkeypatch, tmp_path):
    for name in ("asr.safetensors", "asr-stream.safetensors", "speech-phones.arpa.gz", "mnist.safetensors"):
        assert os.path.samefile(lt.find_shipped(name), os.path.join(WEIGHTS, name))
    assert lt.find_shipped("lexicon") == lt.default_lexicon()
    monkeypatch.setenv("LT_WEIGHTS", str(tmp_path))
    with pytest.raises(lt.Error, match="LT_WEIGHTS=" + str(tmp_path) + " has no asr.safetensors"):
        lt.find_shipped("asr.safetensors")
    with pytest.raises(lt.Error, match="speech-phones.arpa.gz"):
        lt.Recognizer.like_lt_asr()


@pytest.mark.parametrize("words", [False, True])
def test_like_lt_asr_gives_lt_asr_s_phones_and_words(words, rng, tmp_path):  # noqa: F811
    text = " ".join(rng.choice(SAID, size=int(rng.integers(4, 7))))
    print(text)
    wav = str(tmp_path / "a.wav")
    assert subprocess.run(["espeak-ng", "-v", "en-us", "-w", wav, text]).returncode == 0
    got = lt.Recognizer.like_lt_asr(words=words).transcribe(wav)
    tool = subprocess.run([_lt_asr(), "-f", "json", "-q", wav] + (["--words"] if words else []),
                          capture_output=True, text=True)
    assert tool.returncode == 0, tool.stderr
    want = json.loads(tool.stdout)
    assert len(got["phones"]) > 5
    assert got["phones"] == [(p["phone"], pytest.approx(p["start"], abs=1e-9), pytest.approx(p["end"], abs=1e-9))
                             for p in want["phones"]]
    if words:
        assert got["words"] and got["words"] == [
            (w["word"], pytest.approx(w["start"], abs=1e-9), pytest.approx(w["end"], abs=1e-9)) for w in want["words"]]
