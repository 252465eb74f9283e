"""lt.read_png against the bytes written into a PNG by hand (zlib, the
PNG's chunks), its refusal of a file that is not one, and
lt.default_lexicon as the dictionary liblt names."""
import os
import struct
import zlib

import numpy as np
import pytest

import lt


def _png(path, pixels):
    """pixels uint8 [height, width, channels] as an 8-bit PNG, filter 0 on every row."""
    height, width, channels = pixels.shape
    colour = {1: 0, 2: 4, 3: 2, 4: 6}[channels]

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\0" + pixels[y].tobytes() for y in range(height))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_read_png_gives_the_pixels_as_stored(tmp_path, channels):
    seed = int.from_bytes(os.urandom(4), "little")
    print("seed", seed)
    pixels = np.random.default_rng(seed).integers(0, 256, size=(3, 5, channels), dtype=np.uint8)
    path = tmp_path / "in.png"
    _png(path, pixels)
    got = lt.read_png(path)
    assert got.dtype == np.uint8
    assert got.shape == (3, 5, channels)
    assert np.array_equal(got, pixels)


def test_read_png_refuses_what_is_not_a_png(tmp_path):
    path = tmp_path / "text.png"
    path.write_bytes(b"hello")
    with pytest.raises(lt.Error, match="not a PNG file"):
        lt.read_png(path)


def test_default_lexicon_is_a_dictionary_path():
    assert lt.default_lexicon().endswith(".dict")
