"""Speech corpora and scores as lt-asr --ref reads and reports them, and
audio read as lt-asr reads its inputs (lt.h's lt_corpus_read,
lt_score_tokens, lt_audio_read_format).

    import lt
    for u in lt.read_corpus("data/speech/valid.tsv"):      # or a LibriSpeech folder
        heard = asr.transcribe(u["audio"])
        counts = lt.score(u["phones"], [p for p, _, _ in heard["phones"]], counts)
    counts["rate"]                                         # the PER, summed over the corpus
    samples = lt.read_audio("x.raw", rate=8000, channels=2, sample="s16le")  # float32, 16 kHz mono
"""
import ctypes
import os

import numpy as np

from . import Error, _check, _declare, _i64, _p, _status


class _AudioFormat(ctypes.Structure):
    _fields_ = [("sample_rate", ctypes.c_int), ("channels", ctypes.c_int), ("sample", ctypes.c_char_p)]


class _Utterance(ctypes.Structure):
    _fields_ = [("audio", ctypes.c_char_p), ("duration", ctypes.c_double), ("speaker", ctypes.c_char_p),
                ("transcript", ctypes.c_char_p), ("phones", ctypes.POINTER(ctypes.c_char_p)), ("phone_count", _i64),
                ("words", ctypes.POINTER(ctypes.c_char_p)), ("word_count", _i64)]


class _Counts(ctypes.Structure):
    _fields_ = [("errors", _i64), ("reference", _i64), ("substitutions", _i64), ("deletions", _i64),
                ("insertions", _i64)]


_corpus_read = _declare("lt_corpus_read", _status, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(_p))
_corpus_size = _declare("lt_corpus_size", _i64, _p)
_corpus_utterance = _declare("lt_corpus_utterance", _Utterance, _p, _i64)
_corpus_free = _declare("lt_corpus_free", None, _p)
_score_tokens = _declare("lt_score_tokens", _status, ctypes.POINTER(ctypes.c_char_p), _i64,
                         ctypes.POINTER(ctypes.c_char_p), _i64, ctypes.POINTER(_Counts))
_error_rate = _declare("lt_error_rate", ctypes.c_double, ctypes.POINTER(_Counts))
_audio_read_format = _declare("lt_audio_read_format", _status, ctypes.c_char_p, ctypes.POINTER(_AudioFormat),
                              ctypes.POINTER(ctypes.POINTER(ctypes.c_float)), ctypes.POINTER(_i64))
_audio_free = _declare("lt_audio_free", None, ctypes.POINTER(ctypes.c_float))

_COUNTS = ("errors", "reference", "substitutions", "deletions", "insertions")


def _texts(values, count):
    return [values[i].decode("utf-8", "replace") for i in range(count)]


def read_corpus(path, lexicon=None):
    """A manifest TSV or a LibriSpeech folder as lt-train --data and lt-asr
    --ref read it: a list of dicts with "audio" (a path this program can
    open), "duration" (seconds, 0 when not given), "speaker", "transcript",
    "phones" (ARPAbet without stress) and "words" (upper case). Words
    without phones are pronounced through lexicon (default: the CMU
    dictionary when installed). lt.Error names the file and line of a
    malformed one."""
    handle = _p()
    _check(_corpus_read(os.fsencode(path), None if lexicon is None else os.fsencode(lexicon), ctypes.byref(handle)))
    try:
        out = []
        for i in range(_corpus_size(handle)):
            u = _corpus_utterance(handle, i)
            out.append({"audio": os.fsdecode(u.audio), "duration": u.duration,
                        "speaker": u.speaker.decode("utf-8", "replace"),
                        "transcript": u.transcript.decode("utf-8", "replace"),
                        "phones": _texts(u.phones, u.phone_count), "words": _texts(u.words, u.word_count)})
        return out
    finally:
        _corpus_free(handle)


def score(reference, hypothesis, counts=None):
    """The edit distance that turns reference into hypothesis (sequences of
    strings: phones, words), added to counts (a dict as this returns, or
    None): {"errors", "reference", "substitutions", "deletions",
    "insertions", "rate"}, rate being errors / reference tokens, lt-asr's
    PER or WER."""
    def strings(tokens, what):
        if isinstance(tokens, (str, bytes)):
            raise Error("lt.score: %s must be a sequence of strings, not one string" % what)
        out = []
        for t in tokens:
            if not isinstance(t, str):
                raise Error("lt.score: %s holds %r, not a string" % (what, t))
            out.append(t.encode())
        return (ctypes.c_char_p * max(len(out), 1))(*out), len(out)

    ref, n = strings(reference, "reference")
    hyp, m = strings(hypothesis, "hypothesis")
    c = _Counts(*[int((counts or {}).get(k, 0)) for k in _COUNTS])
    _check(_score_tokens(ref, n, hyp, m, ctypes.byref(c)))
    out = {k: getattr(c, k) for k in _COUNTS}
    out["rate"] = _error_rate(ctypes.byref(c))
    return out


def read_audio(path, rate=0, channels=1, sample="s16le"):
    """An audio file as float32 samples, mono at 16 kHz in [-1, 1]: any file
    libsndfile reads, or with rate > 0 raw PCM of that rate, channels and
    sample ("s16le", "s24le", "s32le", "f32le" or "u8"), as lt-asr
    --raw-rate reads it."""
    fmt = _AudioFormat(int(rate), int(channels), sample.encode())
    samples = ctypes.POINTER(ctypes.c_float)()
    count = _i64()
    _check(_audio_read_format(os.fsencode(path), ctypes.byref(fmt), ctypes.byref(samples), ctypes.byref(count)))
    try:
        return np.ctypeslib.as_array(samples, shape=(count.value,)).copy()
    finally:
        _audio_free(samples)
