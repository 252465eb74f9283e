"""The Python package checks what it is given before liblt sees it (issue
45): tokens are integers within the vocabulary, images uint8, audio float32
in [-1, 1] or int16 read as x / 32768, and each refusal is one lt.Error line
that leaves the state as it was; an exception in a training progress
function stops the run and comes out of lt.train; the import names
LT_LIBRARY and where it looked when liblt cannot be loaded, and checks the
library's version against lt.__version__."""
import json
import os
import re
import struct
import subprocess
import sys

import numpy as np
import pytest

import lt

MODEL = os.environ.get("LT_TEST_MODEL", "weights/fashion-mnist.safetensors")
WEIGHTS = os.path.dirname(os.path.abspath(MODEL))
PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(lt.__file__)))  # lib/python (or dist-packages)
SOURCE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))


@pytest.fixture(scope="module")
def model():
    return lt.Model(MODEL)


@pytest.fixture
def rng():
    seed = int.from_bytes(os.urandom(4), "little")
    print("seed", seed)
    return np.random.default_rng(seed)


def refused(call, *patterns):
    """call() raises one lt.Error line matching every pattern."""
    with pytest.raises(lt.Error) as e:
        call()
    line = str(e.value)
    assert "\n" not in line
    for p in patterns:
        assert re.search(p, line), (p, line)
    return line


def test_tokens_are_integers_within_the_vocabulary(model, rng):
    state = model.state(batch=2)
    good = rng.integers(0, model.vocabulary, size=2)
    before = state.fork()
    # Floats, booleans, values past int32 or outside the vocabulary: refused, the state unmoved.
    for bad, pattern in [(np.array([3.7, 1.0], np.float32), "State.step: tokens must be integers.*float32"),
                         (np.array([1.0, 2.0]), "tokens must be integers.*float64"),
                         ([1.5, 2], "tokens must be integers"),
                         (np.array([True, False]), "tokens must be integers.*bool"),
                         (np.array([2 ** 32 + 5, 1]), r"token 4294967301 is outside the vocabulary 0\.\.255"),
                         (np.array([2 ** 31, 0], np.uint64), "token 2147483648 is outside"),
                         ([-1, 0], "token -1 is outside"),
                         ([0, model.vocabulary], "token %d is outside" % model.vocabulary),
                         (["a", "b"], "tokens must be integers")]:
        refused(lambda: state.step(bad), pattern)
        assert state.position == 0
    # Fresh random out-of-range values.
    for _ in range(20):
        value = int(rng.choice([rng.integers(-2 ** 40, 0), rng.integers(model.vocabulary, 2 ** 40)]))
        refused(lambda: state.step([good[0], value]), "token %d is outside" % value)
    assert state.position == 0
    # Any integer type within the vocabulary is the same tokens.
    heads = state.step(good.astype(np.int32))
    for kind in (np.uint8, np.int16, np.int64, np.uint64):
        again = before.fork()
        assert np.array_equal(again.step(good.astype(kind)), heads)
    assert np.array_equal(before.fork().step([int(good[0]), int(good[1])]), heads)
    # extend: the same rules.
    chunk = rng.integers(0, model.vocabulary, size=(2, 5))
    refused(lambda: state.extend(chunk.astype(np.float64)), "State.extend: tokens must be integers.*float64")
    refused(lambda: state.extend(chunk + 2 ** 31), "State.extend: token %d is outside" % (chunk.flat[0] + 2 ** 31))
    assert state.position == 1
    assert state.extend(chunk).shape == (2, 5, model.head_width)


def test_images_are_uint8(model, rng):
    image = rng.integers(0, 256, size=model.shape).astype(np.uint8)
    known = np.zeros(model.shape, dtype=bool)
    known[:10] = True
    # The case: img / 255.0 once became zeros.
    refused(lambda: model.complete(image / 255.0, known, 1, 1),
            r"Model\.complete: the image must be uint8 \(0\.\.255\), got an array of float64", r"\* 255")
    refused(lambda: model.complete(image.astype(np.float32), known, 1, 1), "must be uint8.*float32")
    refused(lambda: model.complete(image.astype(np.int64), known, 1, 1), "must be uint8.*int64", r"astype\(np\.uint8\)")
    refused(lambda: model.complete(image.tolist(), known, 1, 1), "must be uint8.*int64")
    batch = model.image_batch()
    refused(lambda: batch.add(1, image=image / 255.0, known=known), r"ImageBatch\.add: the image must be uint8.*float64")
    out = model.complete(image, known, 1, 1)
    assert out.dtype == np.uint8 and np.array_equal(out[0][:10], image[:10])


@pytest.fixture(scope="module")
def speech(tmp_path_factory):
    """A recording of espeak-ng at 16 kHz as int16, and the streaming recognizer."""
    tmp = tmp_path_factory.mktemp("speech")
    wav = str(tmp / "a.wav")
    assert subprocess.run(["espeak-ng", "-v", "en-us", "-w", wav, "seven days without rain"]).returncode == 0
    import wave
    with wave.open(wav) as w:
        rate = w.getframerate()
        x = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.float64)
    t = np.arange(0, len(x) / rate, 1 / 16000)
    pcm = np.round(np.interp(t, np.arange(len(x)) / rate, x)).astype(np.int16)
    return pcm, lt.Recognizer(os.path.join(WEIGHTS, "asr-stream.safetensors"))


def _phones(t):
    return [p for p, _, _ in t["phones"]]


def test_audio_is_float32_in_one_or_int16_read_as_x_over_32768(speech, rng):
    pcm, asr = speech
    floats = pcm.astype(np.float32) / np.float32(32768)
    whole = asr.transcribe(floats)
    assert len(whole["phones"]) > 5
    # int16 is read as x / 32768: the same phones, at the same times.
    from_pcm = asr.transcribe(pcm)
    assert (from_pcm["phones"], from_pcm["words"]) == (whole["phones"], whole["words"])
    stream = asr.stream()
    at = 0
    settled = []
    while at < len(pcm):  # the case: stream.push(int16_pcm) once gave no words and no error
        n = int(rng.integers(1, 4000))
        stream.push(pcm[at:at + n])
        at += n
        settled += _phones(stream.take_settled())
    stream.finish()
    settled += _phones(stream.take_settled())
    assert settled == _phones(whole)
    # Anything else is refused, in one line naming the call, and nothing is pushed.
    stream = asr.stream()
    for bad, pattern in [(floats.astype(np.float64), "must be float32 samples in \\[-1, 1\\] or int16.*float64"),
                         (pcm.astype(np.int32), "must be float32.*int32"),
                         (pcm.tolist(), "must be float32.*int64"),
                         (floats + np.float32(2), r"float32 audio must be in \[-1, 1\], got"),
                         (np.array([0.1, np.nan], np.float32), r"must be in \[-1, 1\], got nan"),
                         (np.array([0.1, -np.inf], np.float32), r"must be in \[-1, 1\], got -inf"),
                         (np.stack([floats, floats]), "one channel, a 1-d array, got shape")]:
        refused(lambda: stream.push(bad), "^Stream.push: ", pattern)
        refused(lambda: asr.transcribe(bad), "^Recognizer.transcribe: ", pattern)
    stream.finish()
    assert stream.take_settled()["phones"] == []
    # Random samples in range are taken as they are, out of range refused.
    noise = rng.uniform(-1, 1, 1600).astype(np.float32)
    asr.stream().push(noise)
    noise[int(rng.integers(0, 1600))] = np.float32(rng.choice([-1, 1]) * rng.uniform(1.001, 100))
    refused(lambda: asr.stream().push(noise), "must be in \\[-1, 1\\]")


def _step_of(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return int(json.loads(f.read(n))["__metadata__"]["lt.train.step"])


def test_an_exception_in_a_progress_function_stops_the_run_and_is_raised(tmp_path, rng):
    stop_at = int(rng.integers(1, 5))
    calls = []

    class Stop(Exception):
        pass

    def progress(event):
        calls.append(event)
        if event["kind"] == "step" and event["step"] == stop_at:
            raise Stop("at step %d" % stop_at)

    out = str(tmp_path / "run.safetensors")
    with pytest.raises(Stop, match="at step %d" % stop_at):
        lt.train("copy", progress=progress, steps=50, output=out, layers=1, d_model=16, heads=2, batch=4, quiet=True)
    # Called once per event until it raised, never after; the run stopped at that step with its checkpoint.
    assert calls[-1]["kind"] == "step" and calls[-1]["step"] == stop_at
    assert [e["step"] for e in calls if e["kind"] == "step"] == list(range(1, stop_at + 1))
    assert _step_of(out) == stop_at
    resumed = lt.train("copy", output=out, resume=True, steps=stop_at + 1, quiet=True)
    assert resumed["finished"] and resumed["step"] == stop_at + 1


def test_the_version_is_cmake_s_project_version_and_the_library_s():
    assert lt.__version__ == lt.version().split(" ")[0]
    cmake = open(os.path.join(SOURCE, "CMakeLists.txt")).read()
    assert re.search(r"project\(lt VERSION ([0-9.]+)", cmake).group(1) == lt.__version__
    pyproject = open(os.path.join(SOURCE, "lib", "python", "pyproject.toml")).read()
    assert re.search(r'^version = "([0-9.]+)"', pyproject, re.M).group(1) == lt.__version__
    # A library of another major or minor version is refused at import, naming both.
    major, minor, patch = (int(x) for x in lt.__version__.split("."))
    lt._check_library_version("%d.%d.%d (abc1234)" % (major, minor, patch + 3))
    for other in ["%d.%d.0 (abc1234)" % (major, minor + 1, ), "%d.%d.%d" % (major + 1, minor, patch), "garbage"]:
        with pytest.raises(ImportError) as e:
            lt._check_library_version(other)
        assert "\n" not in str(e.value)
        assert ("needs liblt %d.%d.x" % (major, minor)) in str(e.value) and other in str(e.value)


def _import_lt(env):
    code = "import lt"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)


def test_an_import_that_cannot_load_liblt_names_lt_library_and_where_it_looked(tmp_path):
    env = dict(os.environ, PYTHONPATH=PACKAGE)
    env["LT_LIBRARY"] = str(tmp_path / "nowhere" / "liblt.so.0")
    r = _import_lt(env)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: lt: cannot load liblt.so.0")
    assert "$LT_LIBRARY=" + env["LT_LIBRARY"] in last and "set LT_LIBRARY" in last
    # Without LT_LIBRARY, from a copy of the package outside any prefix: the places it looked.
    import shutil
    copy = tmp_path / "site"
    shutil.copytree(os.path.join(PACKAGE, "lt"), str(copy / "lt"))
    env = dict(os.environ, PYTHONPATH=str(copy))
    env.pop("LT_LIBRARY", None)
    env.pop("LD_LIBRARY_PATH", None)
    import ctypes.util
    if ctypes.util.find_library("lt"):
        pytest.skip("a liblt is installed on the system's library path")
    r = _import_lt(env)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert "$LT_LIBRARY is not set" in last
    assert os.path.normpath(str(copy / ".." / ".." / "liblt.so.0")) in last
    assert "the system's library path" in last
