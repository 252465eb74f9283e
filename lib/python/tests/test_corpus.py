"""lt.read_corpus, lt.score and lt.read_audio against references written
here: a manifest of random utterances, an edit distance by the textbook
recurrence, raw PCM decoded with NumPy."""
import os
import random

import numpy as np
import pytest

import lt

PHONES = ("AA AE AH AO AW AY B CH D DH EH ER EY F G HH IH IY JH K L M N NG OW OY P R S SH T TH UH UW V W Y Z "
          "ZH").split()


def distance(a, b):
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        diagonal, row[0] = row[0], i
        for j in range(1, len(b) + 1):
            diagonal, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1]))
    return row[len(b)]


def test_read_corpus_gives_a_manifest_as_written(tmp_path):
    rng = random.Random(os.urandom(8))
    want, lines = [], ["path\tspeaker\twords\tphones"]
    for n in range(rng.randint(1, 20)):
        phones = [rng.choice(PHONES) for _ in range(rng.randint(1, 30))]
        words = ["".join(rng.choice("abcdefgh") for _ in range(rng.randint(1, 6))) for _ in range(rng.randint(1, 5))]
        audio = str(tmp_path / ("%d.flac" % n))
        shown = " ".join(p.lower() + rng.choice(["", "0", "1", "2"]) for p in phones)
        lines.append("%s\tv%d\t%s\t%s" % (audio, n % 3, "  ".join(words), shown))
        want.append({"audio": audio, "speaker": "v%d" % (n % 3), "phones": phones, "words": [w.upper() for w in words]})
    (tmp_path / "m.tsv").write_text("\n".join(lines) + "\n")
    got = lt.read_corpus(str(tmp_path / "m.tsv"))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert {k: g[k] for k in w} == w
        assert g["duration"] == 0
    (tmp_path / "bad.tsv").write_text("path\tphones\nx.wav\tAH QQ\n")
    with pytest.raises(lt.Error, match=r"bad\.tsv:2: 'QQ'"):
        lt.read_corpus(str(tmp_path / "bad.tsv"))


def test_score_is_the_edit_distance_summed():
    rng = random.Random(os.urandom(8))
    counts, errors, reference = None, 0, 0
    for _ in range(100):
        ref = [rng.choice("abc") for _ in range(rng.randint(0, 15))]
        hyp = [rng.choice("abc") for _ in range(rng.randint(0, 15))]
        one = lt.score(ref, hyp)
        assert one["errors"] == distance(ref, hyp)
        assert one["substitutions"] + one["deletions"] + one["insertions"] == one["errors"]
        assert one["deletions"] - one["insertions"] == len(ref) - len(hyp)
        counts = lt.score(ref, hyp, counts)
        errors, reference = errors + distance(ref, hyp), reference + len(ref)
    assert (counts["errors"], counts["reference"]) == (errors, reference)
    assert counts["rate"] == errors / max(reference, 1)
    with pytest.raises(lt.Error, match="one string"):
        lt.score("AH B", ["AH"])
    with pytest.raises(lt.Error, match="not a string"):
        lt.score(["AH", 3], ["AH"])


def test_read_audio_reads_raw_pcm_of_the_layout_given(tmp_path):
    rng = np.random.default_rng(int.from_bytes(os.urandom(4), "little"))
    pcm = rng.integers(-32768, 32767, size=(rng.integers(400, 5000), 2), dtype=np.int16)
    (tmp_path / "x.raw").write_bytes(pcm.astype("<i2").tobytes())
    got = lt.read_audio(str(tmp_path / "x.raw"), rate=16000, channels=2)
    want = (pcm.astype(np.float64) / 32768).mean(axis=1)
    assert got.dtype == np.float32
    assert np.abs(got - want).max() < 1e-6
    with pytest.raises(lt.Error, match="s17le"):
        lt.read_audio(str(tmp_path / "x.raw"), rate=16000, sample="s17le")
