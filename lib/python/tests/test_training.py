"""lt.train, lt.evaluate and lt.export through liblt: a run stopped by its
progress function and resumed ends where a straight run ends (the same test
score), evaluation gives lt-train --eval's JSON, export drops the optimizer,
and a bad option raises lt.Error with liblt's message."""
import json

import pytest

import lt

TINY = dict(layers=1, d_model=16, heads=2, batch=4, schedule="step", quiet=True)


def test_a_stopped_run_resumed_ends_as_a_straight_run(tmp_path):
    events = []

    def progress(event):
        events.append(event)
        return event["kind"] == "step" and event["step"] == 3

    part = str(tmp_path / "part.safetensors")
    stopped = lt.train("copy", progress=progress, steps=6, output=part, **TINY)
    assert stopped == {"finished": False, "step": 3, "score": None}
    assert [e["step"] for e in events if e["kind"] == "step"] == [1, 2, 3]
    assert [e["path"] for e in events if e["kind"] == "checkpoint"] == [part]
    resumed = lt.train("copy", output=part, resume=True, quiet=True)
    straight = lt.train("copy", steps=6, output=str(tmp_path / "straight.safetensors"), **TINY)
    assert resumed["finished"] and resumed["step"] == 6
    assert resumed["score"].replace(part, "X") == straight["score"].replace(str(tmp_path / "straight.safetensors"), "X")

    scored = json.loads(lt.evaluate("copy", model=part, format="json", batch=4))
    assert 0 <= scored["accuracy"] <= 1
    report = lt.export("copy", model=part, output=str(tmp_path / "export.safetensors"), batch=4,
                       note=["source=python", "run=test"])
    assert "test loss" in report


def test_bad_options_raise_liblt_s_message(tmp_path):
    with pytest.raises(lt.Error, match="'bogus' is not an option of lt-train"):
        lt.train("copy", bogus=1)
    with pytest.raises(lt.Error, match="--steps: 'ten' is not a whole number"):
        lt.train("copy", steps="ten")
    with pytest.raises(lt.Error, match="--task: 'poetry' is not one of image, copy, asr"):
        lt.train("poetry")
