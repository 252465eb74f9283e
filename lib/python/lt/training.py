"""Training, evaluation and export as lt-train runs them (lt.h's recipes).

    import lt
    def progress(event):                        # a dict per step, evaluation and checkpoint
        if event["kind"] == "step" and event["step"] % 100 == 0:
            print(event["step"], event["loss"])
    result = lt.train("copy", steps=1000, output="copy.safetensors", quiet=True, progress=progress)
    lt.evaluate("copy", model="copy.safetensors", format="json")  # lt-train --eval's output
    lt.export("copy", model="copy.safetensors", output="copy-export.safetensors")

Options are lt-train's long flags with '_' for '-' (d_model=192,
spec_augment=True); a list gives a repeatable option once per value. A
progress function may return True to stop the run after the step in
progress: its checkpoint is written, and train(..., resume=True) goes on.
An exception raised in a progress function stops the run the same way and
is raised again from train, once the run has stopped.
"""
import ctypes

from . import _check, _declare, _p, _i64, _status, _string_free

_KINDS = {0: "step", 1: "eval", 2: "checkpoint", 3: "micro_batch"}


class _Event(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("step", _i64), ("loss", ctypes.c_double), ("accuracy", ctypes.c_double),
                ("error_rate", ctypes.c_double), ("lr", ctypes.c_double), ("examples_per_s", ctypes.c_double),
                ("epoch", ctypes.c_double), ("path", ctypes.c_char_p), ("rows", _i64)]


class _Result(ctypes.Structure):
    _fields_ = [("finished", ctypes.c_int), ("step", _i64), ("score", ctypes.c_void_p)]


_Progress = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Event), ctypes.c_void_p)
_recipe_new = _declare("lt_recipe_new", _status, ctypes.c_char_p, ctypes.POINTER(_p))
_recipe_set = _declare("lt_recipe_set", _status, _p, ctypes.c_char_p, ctypes.c_char_p)
_recipe_free = _declare("lt_recipe_free", None, _p)
_train = _declare("lt_train", _status, _p, _Progress, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int),
                  ctypes.POINTER(_Result))
_evaluate = _declare("lt_evaluate", _status, _p, ctypes.POINTER(ctypes.c_void_p))
_export = _declare("lt_export", _status, _p, ctypes.POINTER(ctypes.c_void_p))


class _Recipe:
    def __init__(self, task, options):
        self._handle = _p()
        _check(_recipe_new(task.encode(), ctypes.byref(self._handle)))
        for name, value in options.items():
            for v in value if isinstance(value, (list, tuple)) else [value]:
                text = ("true" if v else "false") if isinstance(v, bool) else str(v)
                _check(_recipe_set(self._handle, name.replace("_", "-").encode(), text.encode()))

    def __del__(self):
        if getattr(self, "_handle", None):
            _recipe_free(self._handle)
            self._handle = None


def _take_string(pointer):
    try:
        return ctypes.string_at(pointer).decode("utf-8", "replace")
    finally:
        _string_free(pointer)


def train(task, progress=None, **options):
    """Trains as lt-train --task TASK with these options. Returns a dict:
    finished (False when progress stopped it), step, and score (the trained
    model's test score line, or None). progress(event) gets a dict per event:
    kind (step, eval, checkpoint, micro_batch), step, loss, accuracy,
    error_rate, lr, examples_per_s, epoch, path, rows."""
    recipe = _Recipe(task, options)
    stop = ctypes.c_int(0)
    raised = []  # what progress raised: ctypes would print it and go on

    def relay(event, _user):
        if raised:
            return  # stopping: progress is not called again
        e = event.contents
        out = {"kind": _KINDS.get(e.kind, str(e.kind)), "path": (e.path or b"").decode("utf-8", "replace")}
        for name in ("step", "loss", "accuracy", "error_rate", "lr", "examples_per_s", "epoch", "rows"):
            out[name] = getattr(e, name)
        try:
            if progress(out):
                stop.value = 1
        except BaseException as error:  # KeyboardInterrupt too
            raised.append(error)
            stop.value = 1

    callback = _Progress(relay) if progress else _Progress()
    result = _Result()
    status = _train(recipe._handle, callback, None, ctypes.byref(stop), ctypes.byref(result))
    if raised:
        if result.score:
            _string_free(result.score)
        raise raised[0]
    _check(status)
    return {"finished": bool(result.finished), "step": result.step,
            "score": _take_string(result.score) if result.score else None}


def evaluate(task, **options):
    """lt-train --eval: scores options' model on its test data; lt-train's output (text, or JSON with format='json')."""
    recipe, out = _Recipe(task, options), ctypes.c_void_p()  # the recipe lives through the call
    _check(_evaluate(recipe._handle, ctypes.byref(out)))
    return _take_string(out)


def export(task, **options):
    """lt-train --export: model without its optimizer state to output; a line per score and file written."""
    recipe, out = _Recipe(task, options), ctypes.c_void_p()
    _check(_export(recipe._handle, ctypes.byref(out)))
    return _take_string(out)
