"""The image endpoints against the image tools: POST /v1/images draws
lt-sample-image -n 1 -s SEED's image (image j of a request: seed + j),
/images/stream sends every subpixel of the same images as it is decided,
POST /v1/images/completions makes lt-complete -n 1 -s SEED's completion
(by keep_rows or by the PNG's alpha); bad requests get one JSON error each."""
import asyncio
import base64
import json
import os
import subprocess

import websockets

import harness as h
from harness import Server


def sample(seed, count=1):
    """lt-sample-image's images for seeds seed .. seed + count - 1 (batches of one)."""
    folder = os.path.join(h.WORK, f"samples-{seed}-{count}")
    subprocess.run([h.bin_path("lt-sample-image"), "-q", "-n", str(count), "-b", "1", "-s", str(seed),
                    "--out-dir", folder], check=True, capture_output=True)
    out = []
    for i in range(count):
        with open(os.path.join(folder, "sample_%04d.png" % i), "rb") as f:
            out.append(h.png_pixels(f.read()))
    return out


def complete(png_path, seed, keep_rows=None):
    out = os.path.join(h.WORK, f"completed-{seed}-{keep_rows}.png")
    cmd = [h.bin_path("lt-complete"), "-q", png_path, "-n", "1", "-s", str(seed), "-o", out]
    if keep_rows is not None:
        cmd += ["--keep-rows", str(keep_rows)]
    subprocess.run(cmd, check=True, capture_output=True)
    with open(out, "rb") as f:
        return h.png_pixels(f.read())


def test_images_equal_lt_sample_image():
    with Server() as server:
        status, headers, body = h.http("POST", server.url + "/v1/images", json.dumps({"seed": 7}).encode())
        assert status == 200 and headers["Content-Type"] == "image/png" and headers["X-LT-Seed"] == "7", (status, body)
        assert h.png_pixels(body) == sample(7)[0]
        status, headers, body = h.http("POST", server.url + "/v1/images",
                                       json.dumps({"count": 3, "seed": 20, "model": "mnist"}).encode())
        assert status == 200 and headers["Content-Type"] == "application/json", (status, body)
        j = json.loads(body)
        assert j["model"] == "mnist" and [d["seed"] for d in j["data"]] == [20, 21, 22]
        assert [h.png_pixels(base64.b64decode(d["b64_json"])) for d in j["data"]] == sample(20, 3)
        # Without a seed, the server draws one and says which.
        status, headers, body = h.http("POST", server.url + "/v1/images", b"")
        assert status == 200 and h.png_pixels(body) == sample(int(headers["X-LT-Seed"]))[0]


def test_image_stream_sends_every_subpixel():
    async def draw(url):
        messages = []
        async with websockets.connect(url + "/images/stream", max_size=None) as ws:
            await ws.send(json.dumps({"count": 2, "seed": 30}))
            async for m in ws:
                messages.append(json.loads(m))
            assert ws.close_code == 1000
        return messages

    with Server() as server:
        messages = asyncio.run(draw(server.ws_url))
    start, steps, done = messages[0], messages[1:-1], messages[-1]
    assert start == {"model": "mnist", "seed": 30, "count": 2, "height": 28, "width": 28, "channels": 1}, start
    size = 28 * 28
    images = [bytearray(size), bytearray(size)]
    seen = [0, 0]
    for m in steps:
        for run in m["decided"]:
            i = run["image"]
            assert run["subpixel"] == seen[i], "subpixels out of order or repeated"
            images[i][run["subpixel"]:run["subpixel"] + len(run["values"])] = bytes(run["values"])
            seen[i] += len(run["values"])
    assert seen == [size, size] and len(steps) >= size // 2, (seen, len(steps))
    assert done["done"] is True and [d["seed"] for d in done["data"]] == [30, 31]
    want = sample(30, 2)
    for i in range(2):
        assert (28, 28, 1, bytes(images[i])) == want[i]
        assert h.png_pixels(base64.b64decode(done["data"][i]["b64_json"])) == want[i]


def test_completions_equal_lt_complete():
    digit = sample(99)[0]
    source = os.path.join(h.WORK, "digit.png")
    with open(source, "wb") as f:
        f.write(h.png_bytes(*digit))
    # The lower half transparent: alpha says what is known.
    w, hgt, _, px = digit
    alpha = bytes(v for i, p in enumerate(px) for v in (p, 255 if i < 14 * w else 0))
    masked = os.path.join(h.WORK, "masked.png")
    with open(masked, "wb") as f:
        f.write(h.png_bytes(w, hgt, 2, alpha))
    with Server() as server:
        url = server.url + "/v1/images/completions"
        with open(source, "rb") as f:
            png = ("digit.png", f.read(), "image/png")
        status, _, body = h.post_form(url, {"image": png, "keep_rows": "14", "seed": "5"})
        assert status == 200, body
        assert h.png_pixels(body) == complete(source, 5, keep_rows=14)
        status, _, body = h.post_form(url, {"image": png, "keep_rows": "10", "seed": "8", "count": "2"})
        assert status == 200, body
        got = [h.png_pixels(base64.b64decode(d["b64_json"])) for d in json.loads(body)["data"]]
        assert got == [complete(source, 8, keep_rows=10), complete(source, 9, keep_rows=10)]
        with open(masked, "rb") as f:
            status, _, body = h.post_form(url, {"image": ("masked.png", f.read(), "image/png"), "seed": "3"})
        assert status == 200, body
        assert h.png_pixels(body) == complete(masked, 3)


def test_bad_image_requests_get_one_error():
    with Server("--max-images", "4") as server:
        def refused(status, body, path="/v1/images", contains=""):
            s, _, b = h.http("POST", server.url + path, body)
            assert s == status, (body, s, b)
            assert contains in h.error_of(b), (contains, b)

        refused(400, b'{"count": 0}', contains="count")
        refused(400, b'{"count": 5}', contains="count")
        refused(400, b'{"count": 1.5}', contains="count")
        refused(400, b'{"seed": -1}', contains="seed")
        refused(400, b'{"n": 2}', contains="unknown field")
        refused(400, b'{"model": "../weights/mnist.safetensors"}', contains="unknown model")
        refused(400, b'[1, 2]', contains="JSON object")
        refused(400, b'{"count": ', contains="JSON object")
        s, _, b = h.http("GET", server.url + "/v1/images")
        assert s == 405 and "POST" in h.error_of(b)
        url = server.url + "/v1/images/completions"
        small = h.png_bytes(8, 8, 1, bytes(64))
        for fields, contains in (({"image": ("x.png", small, "image/png"), "keep_rows": "3"}, "28x28"),
                                 ({"image": ("x.png", b"GIF89a not a png", "image/png"), "keep_rows": "3"}, "PNG"),
                                 ({"keep_rows": "3"}, "'image'"),
                                 ({"image": ("x.png", h.png_bytes(28, 28, 1, bytes(784)), "image/png")}, "keep_rows"),
                                 ({"image": ("x.png", h.png_bytes(28, 28, 1, bytes(784)), "image/png"),
                                   "keep_rows": "29"}, "keep_rows")):
            s, _, b = h.post_form(url, fields)
            assert s == 400, (fields.keys(), s, b)
            assert contains in h.error_of(b), (contains, b)
        # /images/stream: a bad request is one error, then a close (1007).
        async def bad_stream():
            async with websockets.connect(server.ws_url + "/images/stream") as ws:
                await ws.send('{"count": "many"}')
                return await h.expect_ws_error(ws, 1007)
        assert "count" in asyncio.run(bad_stream())


if __name__ == "__main__":
    h.main(globals())
