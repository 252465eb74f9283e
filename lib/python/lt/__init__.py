"""lt: linear transformers as RNNs (Katharopoulos et al., 2020) from Python.

A thin layer over the C API of liblt (lt.h) through ctypes: no compiler is
needed, only the installed library. Arrays go in and out as NumPy arrays.

    import lt
    model = lt.Model("mnist.safetensors")
    images = model.sample_images(4, seed=1)          # uint8 [4, 28, 28, 1]
    state = model.state(batch=1)
    heads = state.step([0])                          # float32 [1, head_width]
    pixel = model.draw(heads, seed=1, position=1)    # int32 [1]
    later = state.fork()                             # an independent copy

    asr = lt.Recognizer("asr.safetensors")
    asr.transcribe("utt.wav")["phones"]              # [("HH", 0.12, 0.18), ...]

    live = lt.Recognizer("asr-stream.safetensors").group()   # many streams, one batched step
    a, b = live.open(), live.open()                  # push from any thread
    a.push(samples); live.step(); a.take_settled()

    batch = model.image_batch()                      # continuous batching of images
    job = batch.add(seed=3)                          # joins at the next step
    while not job.done: batch.step()

    lt.train("copy", steps=1000, output="copy.safetensors")   # lt-train's run (lt.training)

The library is found through $LT_LIBRARY, then beside the package in an
installed prefix (PREFIX/lib/liblt.so.0), then the system's library path;
import fails with an ImportError naming where it looked, or a library of
another version (lt.__version__ against lt_version()).

Inputs are checked before they reach the library, each refusal one lt.Error:
tokens are integers within the vocabulary, images uint8, audio float32
samples in [-1, 1] or int16 ones (read as x / 32768).
"""
import ctypes
import ctypes.util
import os

import numpy as np

__version__ = "0.1.0"  # liblt's version this binding is written for (CMakeLists.txt's project version)

__all__ = ["Error", "Model", "State", "Recognizer", "Stream", "StreamGroup", "ImageBatch", "ImageJob", "version",
           "set_threads", "train", "evaluate", "export"]


class Error(RuntimeError):
    """A failure reported by liblt: its one-line message."""


def _load_library():
    """liblt.so.0 from $LT_LIBRARY, else beside the package, else the system's
    library path; an ImportError naming each place looked otherwise."""
    explicit = os.environ.get("LT_LIBRARY")
    if explicit:
        places = [("$LT_LIBRARY=" + explicit, explicit)]
    else:
        here = os.path.dirname(os.path.abspath(__file__))
        # PREFIX/lib/pythonX.Y/dist-packages/lt -> PREFIX/lib
        beside = os.path.normpath(os.path.join(here, "..", "..", "..", "liblt.so.0"))
        system = ctypes.util.find_library("lt") or "liblt.so.0"
        places = [(beside, beside), ("the system's library path (%s)" % system, system)]
    failures = []
    for name, path in places:
        if path.startswith("/") and not os.path.exists(path):
            failures.append("%s: no such file" % name)
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            failures.append("%s: %s" % (name, e))
    unset = [] if explicit else ["$LT_LIBRARY is not set"]
    raise ImportError("lt: cannot load liblt.so.0 (%s); set LT_LIBRARY to its path"
                      % "; ".join(unset + failures).replace("\n", " "))


_lib = _load_library()

_status = ctypes.c_int
_p = ctypes.c_void_p
_i64 = ctypes.c_int64


class _ModelOptions(ctypes.Structure):
    _fields_ = [("device", ctypes.c_char_p), ("precision", ctypes.c_char_p)]


class _Info(ctypes.Structure):
    _fields_ = [("family", ctypes.c_char * 16), ("vocabulary", _i64), ("positions", _i64), ("head_width", _i64),
                ("height", _i64), ("width", _i64), ("channels", _i64), ("parameters", _i64), ("layers", _i64),
                ("attention", ctypes.c_char * 16), ("device", ctypes.c_char * 96), ("precision", ctypes.c_char * 64)]


class _ImageOptions(ctypes.Structure):
    _fields_ = [("seed", ctypes.c_uint64), ("batch", _i64), ("progress", _p), ("user", _p)]


class _RecognizerOptions(ctypes.Structure):
    _fields_ = [("device", ctypes.c_char_p), ("beam", ctypes.c_int), ("phone_lm", ctypes.c_char_p),
                ("lexicon", ctypes.c_char_p), ("word_lm", ctypes.c_char_p), ("max_delay", ctypes.c_double),
                ("prune", ctypes.c_double), ("pause_seconds", ctypes.c_double), ("word_list", ctypes.c_char_p),
                ("grammar", ctypes.c_char_p), ("precision", ctypes.c_char_p), ("phone_lm_weight", ctypes.c_double),
                ("phone_bonus", ctypes.c_double), ("lm_weight", ctypes.c_double), ("word_bonus", ctypes.c_double),
                ("word_beam", ctypes.c_int)]


class _Token(ctypes.Structure):
    _fields_ = [("text", ctypes.c_char_p), ("start", ctypes.c_double), ("end", ctypes.c_double)]


def _declare(name, restype, *argtypes):
    f = getattr(_lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


_version = _declare("lt_version", ctypes.c_char_p)
_last_error = _declare("lt_last_error", ctypes.c_char_p)
_model_load = _declare("lt_model_load", _status, ctypes.c_char_p, ctypes.POINTER(_ModelOptions), ctypes.POINTER(_p))
_model_get_info = _declare("lt_model_get_info", _status, _p, ctypes.POINTER(_Info))
_model_free = _declare("lt_model_free", None, _p)
_state_new = _declare("lt_state_new", _status, _p, _i64, ctypes.POINTER(_p))
_state_fork = _declare("lt_state_fork", _status, _p, ctypes.POINTER(_p))
_state_reset = _declare("lt_state_reset", _status, _p)
_state_position = _declare("lt_state_position", _i64, _p)
_state_batch = _declare("lt_state_batch", _i64, _p)
_state_step = _declare("lt_state_step", _status, _p, _p, _p)
_state_continue = _declare("lt_state_continue", _status, _p, _p, _i64, _p)
_state_save = _declare("lt_state_save", _status, _p, ctypes.c_char_p)
_state_load = _declare("lt_state_load", _status, _p, ctypes.c_char_p, ctypes.POINTER(_p))
_state_free = _declare("lt_state_free", None, _p)
_state_to_bytes = _declare("lt_state_to_bytes", _status, _p, ctypes.POINTER(ctypes.POINTER(ctypes.c_uint8)),
                           ctypes.POINTER(ctypes.c_size_t))
_state_from_bytes = _declare("lt_state_from_bytes", _status, _p, ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(_p))
_bytes_free = _declare("lt_bytes_free", None, ctypes.POINTER(ctypes.c_uint8))
_image_draw = _declare("lt_image_draw", _status, _p, _p, _i64, ctypes.c_uint64, _i64, _p)
_image_sample = _declare("lt_image_sample", _status, _p, _i64, ctypes.POINTER(_ImageOptions), _p, _p)
_image_complete = _declare("lt_image_complete", _status, _p, _p, _p, _i64, ctypes.POINTER(_ImageOptions), _p)
_set_threads = _declare("lt_set_threads", None, ctypes.c_int)
_png_read = _declare("lt_png_read", _status, ctypes.c_char_p, ctypes.POINTER(ctypes.POINTER(ctypes.c_uint8)),
                     ctypes.POINTER(_i64), ctypes.POINTER(_i64), ctypes.POINTER(_i64))
_default_lexicon = _declare("lt_default_lexicon", ctypes.c_char_p)


_recognizer_default_options = _declare("lt_recognizer_default_options", _RecognizerOptions)
_recognizer_tool_options = _declare("lt_recognizer_tool_options", _status, ctypes.c_int,
                                    ctypes.POINTER(_RecognizerOptions))
_find_shipped = _declare("lt_find_shipped", _status, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p))
_string_free = _declare("lt_string_free", None, ctypes.c_void_p)
_recognizer_new = _declare("lt_recognizer_new", _status, ctypes.c_char_p, ctypes.POINTER(_RecognizerOptions),
                           ctypes.POINTER(_p))
_recognizer_free = _declare("lt_recognizer_free", None, _p)
_transcribe = _declare("lt_transcribe", _status, _p, _p, _i64, ctypes.POINTER(_p))
_transcribe_file = _declare("lt_transcribe_file", _status, _p, ctypes.c_char_p, ctypes.POINTER(_p))
_transcript_phones = _declare("lt_transcript_phones", _i64, _p)
_transcript_words = _declare("lt_transcript_words", _i64, _p)
_transcript_phone = _declare("lt_transcript_phone", _Token, _p, _i64)
_transcript_word = _declare("lt_transcript_word", _Token, _p, _i64)
_transcript_seconds = _declare("lt_transcript_seconds", ctypes.c_double, _p)
_transcript_free = _declare("lt_transcript_free", None, _p)
_stream_new = _declare("lt_stream_new", _status, _p, ctypes.POINTER(_p))
_stream_push = _declare("lt_stream_push", _status, _p, _p, _i64)
_stream_finish = _declare("lt_stream_finish", _status, _p)
_stream_take_settled = _declare("lt_stream_take_settled", _status, _p, ctypes.POINTER(_p))
_stream_tentative = _declare("lt_stream_tentative", _status, _p, ctypes.POINTER(_p))
_stream_free = _declare("lt_stream_free", None, _p)
_stream_done = _declare("lt_stream_done", ctypes.c_int, _p)
_stream_set_rate = _declare("lt_stream_set_rate", _status, _p, ctypes.c_double)


class _GroupStats(ctypes.Structure):
    _fields_ = [("streams", _i64), ("stepped", _i64), ("positions", _i64), ("rounds", _i64), ("finished", _i64),
                ("seconds", ctypes.c_double), ("encoder_seconds", ctypes.c_double)]


_stream_group_new = _declare("lt_stream_group_new", _status, _p, ctypes.POINTER(_p))
_stream_group_open = _declare("lt_stream_group_open", _status, _p, ctypes.POINTER(_p))
_stream_group_step = _declare("lt_stream_group_step", _status, _p, ctypes.POINTER(_GroupStats))
_stream_group_free = _declare("lt_stream_group_free", None, _p)
_image_batch_new = _declare("lt_image_batch_new", _status, _p, ctypes.POINTER(_p))
_image_batch_add = _declare("lt_image_batch_add", _status, _p, ctypes.c_uint64, _p, _p, ctypes.POINTER(_p))
_image_batch_step = _declare("lt_image_batch_step", _status, _p, ctypes.POINTER(_i64))
_image_job_decided = _declare("lt_image_job_decided", _i64, _p)
_image_job_pixels = _declare("lt_image_job_pixels", ctypes.POINTER(ctypes.c_uint8), _p)
_image_job_done = _declare("lt_image_job_done", ctypes.c_int, _p)
_image_job_free = _declare("lt_image_job_free", None, _p)
_image_batch_free = _declare("lt_image_batch_free", None, _p)


def _check_library_version(library):
    """ImportError unless liblt's version text ("0.1.0 (f8f481b)") has this
    binding's major and minor version: the declarations above are its API."""
    number = library.split(" ")[0]
    if number.split(".")[:2] != __version__.split(".")[:2]:
        raise ImportError("lt: the Python package %s needs liblt %s.x, but %s is liblt %s; install both from one build "
                          "(or set LT_LIBRARY)" % (__version__, ".".join(__version__.split(".")[:2]), _lib._name,
                                                   library))


_check_library_version(_version().decode("utf-8", "replace"))


def _check(status):
    if status != 0:
        raise Error(_last_error().decode("utf-8", "replace"))


def _array(values, dtype, shape):
    """values as a C-contiguous array of dtype and shape, or Error naming the shape."""
    a = np.ascontiguousarray(values, dtype=dtype)
    if a.size != int(np.prod(shape)):
        raise Error("expected %s values (shape %s), got shape %s" % (int(np.prod(shape)), tuple(shape), a.shape))
    return a.reshape(shape)


def _tokens(values, vocabulary, what):
    """values as a C-contiguous int32 array: integers in 0..vocabulary-1, or
    Error (a float such as 3.7, or 2**32 + 5, is not a token)."""
    a = np.asarray(values)
    if a.size == 0 and a.dtype == np.float64:
        a = a.astype(np.int64)  # [] is no float
    if a.dtype == np.bool_ or not np.issubdtype(a.dtype, np.integer):
        raise Error("%s: tokens must be integers in 0..%d, got an array of %s" % (what, vocabulary - 1, a.dtype))
    outside = (a < 0) | (a >= vocabulary)
    if outside.any():
        raise Error("%s: token %d is outside the vocabulary 0..%d" % (what, int(a[outside].flat[0]), vocabulary - 1))
    return np.ascontiguousarray(a, dtype=np.int32)


def _image(values, shape, what):
    """values as a C-contiguous uint8 image of shape, or Error: a float image
    (0..1 or 0..255) is refused rather than truncated."""
    a = np.asarray(values)
    if a.dtype != np.uint8:
        hint = "; scale and convert it yourself, e.g. (image * 255).round().astype(np.uint8) for one in [0, 1]" \
            if np.issubdtype(a.dtype, np.floating) else "; convert it with .astype(np.uint8) if its values are 0..255"
        raise Error("%s: the image must be uint8 (0..255), got an array of %s%s" % (what, a.dtype, hint))
    return _array(a, np.uint8, shape)


def _samples(audio, what):
    """16 kHz mono samples as a C-contiguous float32 array: float32 in [-1, 1]
    as they are, int16 as x / 32768; Error for anything else."""
    a = np.asarray(audio)
    if a.ndim > 1:
        raise Error("%s: audio must be one channel, a 1-d array, got shape %s" % (what, a.shape))
    if a.dtype == np.int16:
        return np.ascontiguousarray(a.reshape(-1), dtype=np.float32) / np.float32(32768)
    if a.dtype != np.float32:
        raise Error("%s: audio must be float32 samples in [-1, 1] or int16 ones (read as x / 32768), got an array "
                    "of %s" % (what, a.dtype))
    a = np.ascontiguousarray(a.reshape(-1))
    if a.size and not (np.isfinite(a).all() and np.abs(a).max() <= 1):
        bad = a[~(np.abs(a) <= 1)].flat[0]
        raise Error("%s: float32 audio must be in [-1, 1], got %g" % (what, bad))
    return a


def version():
    """liblt's version and commit, e.g. '0.1.0 (16c5801)'."""
    return _version().decode()


def set_threads(threads):
    """Threads of the CPU backend for the whole process (0: every core)."""
    _set_threads(int(threads))


def read_png(path):
    """A PNG file's pixels as uint8 [height, width, channels] (1 grey, 2 grey
    + alpha, 3 RGB, 4 RGBA, as stored), through liblt's checked reader."""
    pixels = ctypes.POINTER(ctypes.c_uint8)()
    height, width, channels = _i64(), _i64(), _i64()
    _check(_png_read(os.fsencode(path), ctypes.byref(pixels), ctypes.byref(height), ctypes.byref(width),
                     ctypes.byref(channels)))
    try:
        shape = (height.value, width.value, channels.value)
        return np.ctypeslib.as_array(pixels, shape=(int(np.prod(shape)),)).reshape(shape).copy()
    finally:
        _bytes_free(pixels)


def default_lexicon():
    """The pronunciations liblt's tools read words with when none is named
    (pocketsphinx's CMU dictionary): a path for Recognizer(lexicon=...)."""
    return _default_lexicon().decode()


def find_shipped(name):
    """The full path of a file lt ships, found as the tools find it when no
    file is named: a file of weights/ ('mnist.safetensors', 'asr.safetensors',
    'asr-stream.safetensors', 'speech-phones.arpa.gz', 'speech-words.arpa.gz')
    from $LT_WEIGHTS when set, else beside liblt or the build, or 'lexicon'
    (the CMU dictionary). lt.Error, naming every place looked, when absent."""
    path = ctypes.c_void_p()
    _check(_find_shipped(os.fsencode(name), ctypes.byref(path)))
    try:
        return os.fsdecode(ctypes.string_at(path))
    finally:
        _string_free(path)


class Model:
    """A checkpoint of an image or copy-task model on 'cpu' or 'cuda', at
    precision 'fp32', 'bf16', 'tf32' or 'bf16+tf32' (lt-sample-image's --bf16 and --tf32)."""

    def __init__(self, path, device="cpu", precision="fp32"):
        handle = _p()
        options = _ModelOptions(device.encode(), precision.encode())
        _check(_model_load(os.fsencode(path), ctypes.byref(options), ctypes.byref(handle)))
        self._handle = handle
        info = _Info()
        _check(_model_get_info(self._handle, ctypes.byref(info)))
        self.family = info.family.decode()
        self.vocabulary = info.vocabulary
        self.positions = info.positions      # a state holds this many positions
        self.head_width = info.head_width    # floats of one position's output
        self.shape = (info.height, info.width, info.channels) if info.height else None
        self.parameters = info.parameters
        self.layers = info.layers
        self.attention = info.attention.decode()
        self.device = info.device.decode()          # the CPU's or GPU's name
        self.precision = info.precision.decode()    # e.g. 'products fp32, state bf16, head fp32'

    def __del__(self):
        if getattr(self, "_handle", None):
            _model_free(self._handle)
            self._handle = None

    def state(self, batch=1):
        """A recurrent state for `batch` sequences at position 0."""
        handle = _p()
        _check(_state_new(self._handle, int(batch), ctypes.byref(handle)))
        return State(self, handle)

    def load_state(self, path):
        """A state saved by State.save for this model (another model's is refused)."""
        handle = _p()
        _check(_state_load(self._handle, os.fsencode(path), ctypes.byref(handle)))
        return State(self, handle)

    def state_from_bytes(self, data):
        """A state from State.to_bytes, for this model (another model's is refused)."""
        data = bytes(data)
        handle = _p()
        _check(_state_from_bytes(self._handle, data, len(data), ctypes.byref(handle)))
        return State(self, handle)

    def draw(self, heads, seed, position):
        """Subpixel values (int32 [rows]) drawn from heads [rows, head_width] for subpixel `position`."""
        heads = np.ascontiguousarray(heads, dtype=np.float32)
        rows = heads.shape[0] if heads.ndim > 1 else 1
        heads = _array(heads, np.float32, (rows, self.head_width))
        out = np.empty(rows, dtype=np.int32)
        _check(_image_draw(self._handle, heads.ctypes.data, rows, int(seed), int(position), out.ctypes.data))
        return out

    def sample_images(self, count, seed, batch=None, bits_per_dim=False):
        """`count` images, uint8 [count, height, width, channels], as lt-sample-image
        -n count -b batch -s seed (batch None: all at once). With bits_per_dim,
        (images, float64 [count]): each image's bits per subpixel, as lt-sample-image prints."""
        if self.shape is None:
            raise Error("a %s model has no images" % self.family)
        out = np.empty((int(count),) + self.shape, dtype=np.uint8)
        bits = np.empty(int(count), dtype=np.float64) if bits_per_dim else None
        options = _ImageOptions(int(seed), int(batch or 0), None, None)
        _check(_image_sample(self._handle, int(count), ctypes.byref(options), out.ctypes.data,
                             bits.ctypes.data if bits_per_dim else None))
        return (out, bits) if bits_per_dim else out

    def complete(self, image, known, count, seed):
        """`count` completions (uint8 [count, height, width, channels]) of image
        [height, width, channels], keeping it where known (same shape, nonzero)
        is set, as lt-complete -n count -s seed."""
        if self.shape is None:
            raise Error("a %s model has no images" % self.family)
        image = _image(image, self.shape, "Model.complete")
        known = _array(np.asarray(known) != 0, np.uint8, self.shape)
        out = np.empty((int(count),) + self.shape, dtype=np.uint8)
        options = _ImageOptions(int(seed), 0, None, None)
        _check(_image_complete(self._handle, image.ctypes.data, known.ctypes.data, int(count), ctypes.byref(options),
                               out.ctypes.data))
        return out

    def image_batch(self):
        """A continuous batch of image requests (ImageBatch)."""
        return ImageBatch(self)


class ImageBatch:
    """Many images sampled or completed at once: a request joins at the next
    step and leaves when its last subpixel is drawn. Each image is the one
    Model.sample_images(1, seed) or Model.complete(image, known, 1, seed)
    gives. Use a batch and its jobs from one thread at a time."""

    def __init__(self, model):
        if model.shape is None:
            raise Error("a %s model has no images" % model.family)
        self.model = model
        handle = _p()
        _check(_image_batch_new(model._handle, ctypes.byref(handle)))
        self._handle = handle

    def __del__(self):
        if getattr(self, "_handle", None):
            _image_batch_free(self._handle)
            self._handle = None

    def add(self, seed, image=None, known=None):
        """An image drawn from seed, or with image and known a completion (as Model.complete)."""
        if (image is None) != (known is None):
            raise Error("ImageBatch.add: give both image and known, or neither")
        values = mask = None
        if image is not None:
            values = _image(image, self.model.shape, "ImageBatch.add")
            mask = _array(np.asarray(known) != 0, np.uint8, self.model.shape)
        handle = _p()
        _check(_image_batch_add(self._handle, int(seed), values.ctypes.data if values is not None else None,
                                mask.ctypes.data if mask is not None else None, ctypes.byref(handle)))
        return ImageJob(self, handle)

    def step(self):
        """Decides the next subpixel of every unfinished job; returns how many are still unfinished."""
        running = _i64()
        _check(_image_batch_step(self._handle, ctypes.byref(running)))
        return running.value


class ImageJob:
    """One request of an ImageBatch; it keeps its batch alive."""

    def __init__(self, batch, handle):
        self.batch = batch
        self._handle = handle

    def __del__(self):
        if getattr(self, "_handle", None):
            _image_job_free(self._handle)
            self._handle = None

    @property
    def decided(self):
        """Subpixels decided so far."""
        return _image_job_decided(self._handle)

    @property
    def done(self):
        return bool(_image_job_done(self._handle))

    @property
    def pixels(self):
        """A copy of the image so far, uint8 [height, width, channels] (undecided subpixels 0)."""
        shape = self.batch.model.shape
        n = int(np.prod(shape))
        return np.ctypeslib.as_array(_image_job_pixels(self._handle), shape=(n,)).copy().reshape(shape)


class State:
    """A model's recurrent state for a batch of sequences: step it, continue it
    over a chunk, fork, reset, save it. It keeps its model alive."""

    def __init__(self, model, handle):
        self.model = model
        self._handle = handle

    def __del__(self):
        if getattr(self, "_handle", None):
            _state_free(self._handle)
            self._handle = None

    @property
    def position(self):
        return _state_position(self._handle)

    @property
    def batch(self):
        return _state_batch(self._handle)

    def step(self, tokens):
        """Consumes tokens [batch] (integers in 0..vocabulary-1); returns heads float32 [batch, head_width]."""
        tokens = _array(_tokens(tokens, self.model.vocabulary, "State.step"), np.int32, (self.batch,))
        heads = np.empty((self.batch, self.model.head_width), dtype=np.float32)
        _check(_state_step(self._handle, tokens.ctypes.data, heads.ctypes.data))
        return heads

    def extend(self, tokens):
        """Consumes tokens [batch, count] in one parallel pass; returns heads float32 [batch, count, head_width]."""
        tokens = _tokens(tokens, self.model.vocabulary, "State.extend")
        count = tokens.size // max(self.batch, 1)
        tokens = _array(tokens, np.int32, (self.batch, count))
        heads = np.empty((self.batch, count, self.model.head_width), dtype=np.float32)
        _check(_state_continue(self._handle, tokens.ctypes.data, count, heads.ctypes.data))
        return heads

    def fork(self):
        """An independent copy at the same position."""
        handle = _p()
        _check(_state_fork(self._handle, ctypes.byref(handle)))
        return State(self.model, handle)

    def reset(self):
        """Back to position 0."""
        _check(_state_reset(self._handle))

    def save(self, path):
        _check(_state_save(self._handle, os.fsencode(path)))

    def to_bytes(self):
        """What save writes, as bytes."""
        data = ctypes.POINTER(ctypes.c_uint8)()
        size = ctypes.c_size_t()
        _check(_state_to_bytes(self._handle, ctypes.byref(data), ctypes.byref(size)))
        try:
            return ctypes.string_at(data, size.value)
        finally:
            _bytes_free(data)


def _transcript(handle):
    """A transcript handle as a dict (and freed): phones and words as (text, start, end)."""
    try:
        def tokens(count, get):
            out = []
            for i in range(count(handle)):
                t = get(handle, i)
                out.append((t.text.decode(), t.start, t.end))
            return out
        return {"phones": tokens(_transcript_phones, _transcript_phone),
                "words": tokens(_transcript_words, _transcript_word),
                "seconds": _transcript_seconds(handle)}
    finally:
        _transcript_free(handle)


class Recognizer:
    """A speech model (lt-train --task asr) with its decoding: transcribes
    recordings and streams to phones (and words, given a lexicon; only a
    word list's words, given word_list; only whole phrases of a grammar,
    one a line, given grammar) with times.
    The defaults are lt-asr's settings with --beam 1."""

    def __init__(self, model, **options):
        """options: any field of lt_recognizer_options (lt.h), e.g. beam=64,
        phone_lm='speech-phones.arpa.gz', lexicon=..., word_lm=..., lm_weight=1.0,
        precision='bf16'; the rest keep the library's defaults."""
        self._open(model, _recognizer_default_options(), options)

    @classmethod
    def like_lt_asr(cls, model=None, words=False, stream=False, **options):
        """A recognizer set up as lt-asr sets one up when given no options
        (lt_recognizer_tool_options): the shipped asr.safetensors
        (asr-stream.safetensors with stream=True) unless model names one,
        lt-asr's beam and the shipped phone model, and with words=True the CMU
        dictionary and the shipped word model (lt-asr --words). It gives
        lt-asr's phones and words; options change any field as in Recognizer()."""
        o = _RecognizerOptions()
        _check(_recognizer_tool_options(1 if words else 0, ctypes.byref(o)))
        if model is None:
            model = find_shipped("asr-stream.safetensors" if stream else "asr.safetensors")
        recognizer = cls.__new__(cls)
        recognizer._open(model, o, options)
        return recognizer

    def _open(self, model, o, options):
        fields = dict((name, kind) for name, kind in _RecognizerOptions._fields_)
        self._keep = []
        for name, value in options.items():
            if name not in fields:
                raise Error("Recognizer: no option %r (lt_recognizer_options has %s)" % (name, ", ".join(fields)))
            if fields[name] is ctypes.c_char_p:
                value = os.fsencode(value) if value is not None else None
                self._keep.append(value)
            elif fields[name] is ctypes.c_int:
                value = int(value)
            else:
                value = float(value)
            setattr(o, name, value)
        handle = _p()
        _check(_recognizer_new(os.fsencode(model), ctypes.byref(o), ctypes.byref(handle)))
        self._handle = handle

    def __del__(self):
        if getattr(self, "_handle", None):
            _recognizer_free(self._handle)
            self._handle = None

    def transcribe(self, audio):
        """A file path (any rate and channels libsndfile reads) or 16 kHz mono
        samples: float32 in [-1, 1], or int16 (read as x / 32768)."""
        out = _p()
        if isinstance(audio, (str, bytes, os.PathLike)):
            _check(_transcribe_file(self._handle, os.fsencode(audio), ctypes.byref(out)))
        else:
            samples = _samples(audio, "Recognizer.transcribe")
            _check(_transcribe(self._handle, samples.ctypes.data, samples.size, ctypes.byref(out)))
        return _transcript(out)

    def stream(self):
        """A stream of audio pushed in pieces (a causal model: asr-stream.safetensors)."""
        handle = _p()
        _check(_stream_new(self._handle, ctypes.byref(handle)))
        return Stream(self, handle)

    def group(self):
        """Streams stepped together (StreamGroup)."""
        return StreamGroup(self)


class StreamGroup:
    """Many streams of one recognizer, decoded together: each step() runs
    every stream's new audio through one batched encoder step per position.
    A stream's results are those it gets alone. Push to its streams from any
    thread, also while another thread steps (the library releases the GIL)."""

    def __init__(self, recognizer):
        self.recognizer = recognizer
        handle = _p()
        _check(_stream_group_new(recognizer._handle, ctypes.byref(handle)))
        self._handle = handle

    def __del__(self):
        if getattr(self, "_handle", None):
            _stream_group_free(self._handle)
            self._handle = None

    def open(self):
        """A stream of the group: push only queues its audio; step() decodes it. It keeps the group alive."""
        handle = _p()
        _check(_stream_group_open(self._handle, ctypes.byref(handle)))
        return Stream(self.recognizer, handle, self)

    def step(self):
        """Decodes everything queued in every stream; returns what the step did
        (streams, stepped, positions, rounds, finished, seconds, encoder_seconds)."""
        stats = _GroupStats()
        _check(_stream_group_step(self._handle, ctypes.byref(stats)))
        return dict((name, getattr(stats, name)) for name, _ in _GroupStats._fields_)


class Stream:
    """Audio pushed in any pieces, decoded as it comes (by its group's steps, in a StreamGroup)."""

    def __init__(self, recognizer, handle, group=None):
        self.recognizer = recognizer
        self.group = group  # freed after its streams
        self._handle = handle

    @property
    def done(self):
        """finish() was called and everything has settled."""
        return bool(_stream_done(self._handle))

    def set_rate(self, sample_rate):
        """The rate of what push receives (16000 until set), resampled to 16 kHz; before the first push."""
        _check(_stream_set_rate(self._handle, float(sample_rate)))

    def __del__(self):
        if getattr(self, "_handle", None):
            _stream_free(self._handle)
            self._handle = None

    def push(self, samples):
        """16 kHz mono samples: float32 in [-1, 1], or int16 (read as x / 32768)."""
        samples = _samples(samples, "Stream.push")
        _check(_stream_push(self._handle, samples.ctypes.data, samples.size))

    def finish(self):
        """The end of the audio: what is left settles."""
        _check(_stream_finish(self._handle))

    def take_settled(self):
        """The phones and words settled since the last call (a dict as Recognizer.transcribe's)."""
        out = _p()
        _check(_stream_take_settled(self._handle, ctypes.byref(out)))
        return _transcript(out)

    def tentative(self):
        """The best guess at what follows the settled tokens; it may still change."""
        out = _p()
        _check(_stream_tentative(self._handle, ctypes.byref(out)))
        return _transcript(out)


from .training import evaluate, export, train  # noqa: E402  (it uses the declarations above)
from .corpus import read_audio, read_corpus, score  # noqa: E402
