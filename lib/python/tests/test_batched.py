"""lt's batched forms from Python: a stream group's streams, pushed from
threads while another steps, against each recording streamed alone; an
image batch's images against Model.sample_images and Model.complete."""
import os
import subprocess
import threading

import numpy as np
import pytest

import lt
from test_lt import WEIGHTS, _read_wav, model, rng  # noqa: F401  (fixtures)


def _phones(t):
    return [(p, round(s, 6), round(e, 6)) for p, s, e in t["phones"]]


def test_streams_of_a_group_pushed_from_threads_settle_what_each_settles_alone(rng, tmp_path):
    texts = ["seven days without rain", "open the door", "turn the lights off", "nine four two one"]
    samples = []
    for i, text in enumerate(texts):
        wav = str(tmp_path / ("%d.wav" % i))
        assert subprocess.run(["espeak-ng", "-v", "en-us", "-w", wav, text]).returncode == 0
        samples.append(_read_wav(wav))
    asr = lt.Recognizer(os.path.join(WEIGHTS, "asr-stream.safetensors"), beam=8)
    alone = []
    for x in samples:
        s = asr.stream()
        s.push(x)
        s.finish()
        assert s.done
        alone.append(_phones(s.take_settled()))
    group = asr.group()
    streams = [group.open() for _ in samples]
    pieces = [np.split(x, np.sort(rng.integers(1, len(x), 20))) for x in samples]

    def feed(i):
        for p in pieces[i]:
            streams[i].push(p)
        streams[i].finish()

    threads = [threading.Thread(target=feed, args=(i,)) for i in range(len(samples))]
    for t in threads:
        t.start()
    got = [[] for _ in samples]
    most = 0
    while not all(s.done for s in streams) or any(t.is_alive() for t in threads):
        most = max(most, group.step()["stepped"])
        for i, s in enumerate(streams):
            got[i] += _phones(s.take_settled())
    for t in threads:
        t.join()
    assert got == alone
    assert len(alone[0]) > 5
    assert most >= 1


def test_images_joining_a_batch_are_sample_images_and_complete_s(model, rng):
    seeds = [int(s) for s in rng.integers(0, 2**63, 3)]
    batch = model.image_batch()
    jobs = [batch.add(seeds[0])]
    image = model.sample_images(1, seed=seeds[1])[0]
    known = np.zeros(model.shape, dtype=bool)
    known[: model.shape[0] // 2] = True
    steps = 0
    while not all(j.done for j in jobs) or len(jobs) < 3:
        if steps == 50:
            jobs.append(batch.add(seeds[1]))
        if steps == 120:
            jobs.append(batch.add(seeds[2], image=image, known=known))
        batch.step()
        steps += 1
    assert (jobs[0].pixels == model.sample_images(1, seed=seeds[0])[0]).all()
    assert (jobs[1].pixels == image).all()
    completed = jobs[2].pixels
    assert (completed == model.complete(image, known, 1, seeds[2])[0]).all()
    assert (completed[known] == image[known]).all()
    with pytest.raises(lt.Error, match="both"):
        batch.add(1, image=image)
