"""Samples digits from an lt image model, then completes the top half of the
first one in several ways, printing them as text: NumPy arrays in and out of
the installed package.

    PYTHONPATH=<prefix>/lib/python3.11/dist-packages python3 sample_and_complete.py \\
        <prefix>/share/lt/weights/mnist.safetensors 7
"""
import sys

import numpy as np

import lt


def show(images):
    ramp = np.array(list(" .:-=+*#%@"))
    for row in np.concatenate([img[:, :, 0] for img in images], axis=1):
        print("".join(ramp[row.astype(int) * 10 // 256]))


model = lt.Model(sys.argv[1])
seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
print("lt", lt.version(), file=sys.stderr)
images = model.sample_images(2, seed)
show(images)
known = np.zeros(model.shape, dtype=bool)
known[: model.shape[0] // 2] = True
show(model.complete(images[0], known, 3, seed))
