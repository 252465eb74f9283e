"""The Python package against liblt: the same numbers as the C API's own
paths (a chunk equals its steps, a fork or a saved state continues as the
original), images drawn by hand through the state equal sample_images, and
failures raise lt.Error with liblt's message. Run by ctest (python-api):
LT_LIBRARY names the built library, LT_TEST_MODEL and LT_OTHER_MODEL two
shipped image models."""
import os
import subprocess

import numpy as np
import pytest

import lt

MODEL = os.environ.get("LT_TEST_MODEL", "weights/fashion-mnist.safetensors")
WEIGHTS = os.path.dirname(os.path.abspath(MODEL))
OTHER = os.environ.get("LT_OTHER_MODEL", "weights/mnist.safetensors")


@pytest.fixture(scope="module")
def model():
    return lt.Model(MODEL)


@pytest.fixture
def rng():
    seed = int.from_bytes(os.urandom(4), "little")
    print("seed", seed)
    return np.random.default_rng(seed)


def test_version_and_info(model):
    assert lt.version().startswith("0.")
    assert model.family == "image"
    assert model.shape == (28, 28, 1)
    assert model.positions == 28 * 28 - 1
    assert model.head_width > 0 and model.parameters > 0


def test_images_by_hand_through_the_state_equal_sample_images(model, rng):
    seed = int(rng.integers(1 << 30))
    images = model.sample_images(2, seed)
    assert images.shape == (2, 28, 28, 1) and images.dtype == np.uint8
    assert np.array_equal(images, model.sample_images(2, seed))
    # lt-sample-image's first batch draws with splitmix64(seed); the first
    # subpixel comes from the data's histogram, the rest from the heads.
    draw_seed = _splitmix64(seed)
    flat = images.reshape(2, -1)
    state = model.state(batch=2)
    pixels = flat[:, 0].astype(np.int32)
    for t in range(model.positions):
        heads = state.step(pixels)
        pixels = model.draw(heads, draw_seed, t + 1)
        assert np.array_equal(pixels, flat[:, t + 1]), t
    assert state.position == model.positions


def test_batches_draw_from_their_own_seeds_and_bits_per_dim_is_each_image_s_likelihood(model, rng):
    seed = int(rng.integers(1 << 30))
    images, bits = model.sample_images(3, seed, batch=2, bits_per_dim=True)
    # lt-sample-image -b 2: batch j from seed + j, a last smaller batch computed at full size.
    assert np.array_equal(images[:2], model.sample_images(2, seed))
    assert np.array_equal(images[2:], model.sample_images(2, seed + 1)[:1])
    # Each image's bits/dim against a float64 mixture of logistics over the heads it was drawn from.
    flat = images.reshape(3, -1).astype(np.int32)
    state = model.state(batch=3)
    nats = np.zeros(3)
    for t in range(model.positions):
        nats -= _mol_log_prob(state.step(flat[:, t]).astype(np.float64), flat[:, t + 1])
    expected = nats / model.positions / np.log(2)
    assert np.allclose(bits, expected, rtol=1e-4), (bits, expected)


def _mol_log_prob(heads, byte):
    """log P(byte) under PixelCNN++'s discretized mixture of logistics [logits|means|log-scales]."""
    k = heads.shape[1] // 3
    logits, means, log_s = heads[:, :k], heads[:, k:2 * k], np.maximum(heads[:, 2 * k:], -7.0)
    y = (byte / 255.0 * 2 - 1)[:, None]
    inv = np.exp(-log_s)
    plus, minus, mid = inv * (y - means + 1 / 255), inv * (y - means - 1 / 255), inv * (y - means)
    softplus = lambda x: np.logaddexp(0, x)  # noqa: E731
    delta = 1 / (1 + np.exp(-plus)) - 1 / (1 + np.exp(-minus))
    with np.errstate(divide="ignore"):
        inner = np.where(delta > 1e-5, np.log(np.maximum(delta, 1e-300)), mid - log_s - 2 * softplus(mid) - np.log(127.5))
    log_p = np.where(y < -0.999, plus - softplus(plus), np.where(y > 0.999, -softplus(minus), inner))
    log_pi = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
    return np.logaddexp.reduce(log_pi + log_p, axis=1)


def test_precision_is_chosen_at_load_and_one_the_device_cannot_run_is_an_error(model):
    assert model.precision == "products fp32, state fp32, head fp32"
    with pytest.raises(lt.Error, match="--tf32 is a CUDA option"):
        lt.Model(MODEL, precision="tf32")
    with pytest.raises(lt.Error, match="not a precision"):
        lt.Model(MODEL, precision="fp8")
    with pytest.raises(lt.Error, match="no option 'beem'"):
        lt.Recognizer(os.path.join(WEIGHTS, "asr.safetensors"), beem=4)


def test_completions_keep_what_is_known(model, rng):
    image = model.sample_images(1, int(rng.integers(1 << 30)))[0]
    known = np.zeros(model.shape, dtype=bool)
    known[:10] = True
    out = model.complete(image, known, 3, seed=5)
    assert out.shape == (3,) + model.shape
    assert (out[:, :10] == image[:10]).all()
    assert np.array_equal(out, model.complete(image, known, 3, seed=5))


def test_a_chunk_equals_its_steps_and_a_fork_continues_as_the_original(model, rng):
    tokens = rng.integers(0, 256, size=(3, 40)).astype(np.int32)
    stepped = model.state(batch=3)
    heads = np.stack([stepped.step(tokens[:, t]) for t in range(40)], axis=1)
    chunked = model.state(batch=3)
    assert np.max(np.abs(chunked.extend(tokens) - heads)) < 1e-3
    assert chunked.position == 40

    fork = stepped.fork()
    nxt = rng.integers(0, 256, size=3)
    a = fork.step(nxt)
    fork.step(rng.integers(0, 256, size=3))  # the original does not move
    assert stepped.position == 40 and fork.position == 42
    assert np.array_equal(stepped.step(nxt), a)

    stepped.reset()
    assert stepped.position == 0
    assert np.array_equal(stepped.step(tokens[:, 0]), heads[:, 0])


def test_a_saved_state_continues_and_another_model_refuses_it(model, rng, tmp_path):
    state = model.state(batch=1)
    for t in rng.integers(0, 256, size=10):
        state.step([t])
    path = str(tmp_path / "state.safetensors")
    state.save(path)
    loaded = model.load_state(path)
    assert loaded.position == 10 and loaded.batch == 1
    assert np.array_equal(loaded.step([17]), state.step([17]))
    from_bytes = model.state_from_bytes(state.to_bytes())
    assert np.array_equal(from_bytes.step([3]), state.step([3]))
    other = lt.Model(OTHER)
    with pytest.raises(lt.Error, match="state.safetensors"):
        other.load_state(path)
    with pytest.raises(lt.Error, match="state bytes"):
        model.state_from_bytes(state.to_bytes()[:-9])


def test_failures_raise_lt_error_with_the_library_s_line(model, tmp_path):
    missing = str(tmp_path / "missing.safetensors")
    with pytest.raises(lt.Error, match="missing.safetensors"):
        lt.Model(missing)
    with pytest.raises(lt.Error, match="expected 2 values"):
        model.state(batch=2).step([1, 2, 3])
    with pytest.raises(lt.Error, match="batch must be >= 1"):
        model.state(batch=0)
    with pytest.raises(lt.Error, match="tpu"):
        lt.Model(MODEL, device="tpu")


def _splitmix64(z):
    """lt's splitmix64 (lib/common/random.h), for the seed of a first batch."""
    mask = (1 << 64) - 1
    z = (z + 0x9E3779B97F4A7C15) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    return z ^ (z >> 31)


def test_a_stream_in_random_pieces_settles_the_whole_recording_s_phones(rng, tmp_path):
    wav = str(tmp_path / "a.wav")
    assert subprocess.run(["espeak-ng", "-v", "en-us", "-w", wav, "seven days without rain"]).returncode == 0
    asr = lt.Recognizer(os.path.join(WEIGHTS, "asr-stream.safetensors"))
    from_file = asr.transcribe(wav)
    assert len(from_file["phones"]) > 5 and from_file["seconds"] > 0.5
    assert all(start < end for _, start, end in from_file["phones"])
    samples = _read_wav(wav)
    whole = asr.transcribe(samples)
    stream = asr.stream()
    settled = []
    at = 0
    while at < len(samples):
        n = int(rng.integers(1, 4000))
        stream.push(samples[at:at + n])
        at += n
        settled += stream.take_settled()["phones"]
        stream.tentative()
    stream.finish()
    settled += stream.take_settled()["phones"]
    assert [p for p, _, _ in settled] == [p for p, _, _ in whole["phones"]]
    with pytest.raises(lt.Error, match="missing.wav"):
        asr.transcribe(str(tmp_path / "missing.wav"))


def _read_wav(path):
    """espeak-ng's 22.05 kHz mono 16-bit WAV as 16 kHz floats (linear
    interpolation: the stream and the whole recording get the same samples)."""
    import wave
    with wave.open(path) as w:
        rate = w.getframerate()
        x = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.float32) / 32768
    t = np.arange(0, len(x) / rate, 1 / 16000)
    return np.interp(t, np.arange(len(x)) / rate, x).astype(np.float32)


def _turn_the_light_on(tmp_path):
    """A training voice saying a command, and a lexicon of a few command words."""
    wav = str(tmp_path / "a.wav")
    assert subprocess.run(["espeak-ng", "-v", "en-us", "-w", wav, "turn the light on"]).returncode == 0
    lexicon = tmp_path / "words.dict"
    lexicon.write_text("TURN T ER N\nTHE DH AH\nLIGHT L AY T\nON AA N\nOFF AO F\nOPEN OW P AH N\nDOOR D AO R\n")
    return wav, str(lexicon)


def test_a_word_list_limits_the_words_to_its_own(tmp_path):
    wav, lexicon = _turn_the_light_on(tmp_path)
    words = tmp_path / "commands.txt"
    words.write_text("turn the light on off  # the lights\nopen door\n")
    asr = lt.Recognizer(os.path.join(WEIGHTS, "asr.safetensors"), lexicon=lexicon, word_list=str(words))
    heard = asr.transcribe(wav)
    assert [w for w, _, _ in heard["words"]] == ["TURN", "THE", "LIGHT", "ON"]
    bad = tmp_path / "bad.txt"
    bad.write_text("turn zxq\n")
    with pytest.raises(lt.Error, match="bad.txt:1: 'ZXQ' has no pronunciation"):
        lt.Recognizer(os.path.join(WEIGHTS, "asr.safetensors"), lexicon=lexicon, word_list=str(bad))


def test_a_grammar_gives_one_of_its_phrases_whole(tmp_path):
    wav, lexicon = _turn_the_light_on(tmp_path)
    grammar = tmp_path / "commands.txt"
    grammar.write_text("turn the light on\nturn the light off\nopen the door\n")
    asr = lt.Recognizer(os.path.join(WEIGHTS, "asr.safetensors"), lexicon=lexicon, grammar=str(grammar))
    assert [w for w, _, _ in asr.transcribe(wav)["words"]] == ["TURN", "THE", "LIGHT", "ON"]
    with pytest.raises(lt.Error, match="takes the place of a word list"):
        lt.Recognizer(os.path.join(WEIGHTS, "asr.safetensors"), lexicon=lexicon, grammar=str(grammar),
                      word_list=str(grammar))
