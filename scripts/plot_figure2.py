#!/usr/bin/env python3
"""The paper's Figure 2 from lt-train's JSONL metrics: training loss against
gradient steps, one curve per run, written as a PNG; each run's final test
accuracy on stdout. Standard library only (the PNG is written with zlib).

usage: scripts/plot_figure2.py RUN.jsonl... [-o figure2.png]

A run is named by its file's stem (softmax.jsonl -> softmax). A resumed run
logs the steps after its last checkpoint twice; the last line of a step wins.
Each pixel column of a curve is the mean loss of the steps it covers.
"""
import argparse
import json
import math
import os
import struct
import sys
import zlib

WIDTH, HEIGHT = 800, 500
LEFT, RIGHT, TOP, BOTTOM = 70, 30, 36, 50
COLORS = [(31, 119, 180), (214, 39, 40), (44, 160, 44), (255, 127, 14), (148, 103, 189), (140, 86, 75)]

# A 3x5 bitmap font: five rows of three bits per glyph.
FONT = {
    "0": "111101101101111", "1": "010110010010111", "2": "111001111100111", "3": "111001111001111",
    "4": "101101111001001", "5": "111100111001111", "6": "111100111101111", "7": "111001001010010",
    "8": "111101111101111", "9": "111101111001111", "A": "010101111101101", "B": "110101110101110",
    "C": "011100100100011", "D": "110101101101110", "E": "111100110100111", "F": "111100110100100",
    "G": "011100101101011", "H": "101101111101101", "I": "111010010010111", "J": "001001001101010",
    "K": "101101110101101", "L": "100100100100111", "M": "101111111101101", "N": "110101101101101",
    "O": "010101101101010", "P": "110101110100100", "Q": "010101101110011", "R": "110101110101101",
    "S": "011100010001110", "T": "111010010010010", "U": "101101101101111", "V": "101101101101010",
    "W": "101101111111101", "X": "101101010101101", "Y": "101101010010010", "Z": "111001010100111",
    "-": "000000111000000", ".": "000000000000010", ":": "000010000010000", "_": "000000000000111",
    "+": "000010111010000", "/": "001001010100100", "(": "001010010010001", ")": "100010010010100",
    " ": "000000000000000",
}


def read_run(path):
    """(train losses by step, the last eval line or None) of one JSONL log."""
    losses, final = {}, None
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"plot_figure2: {path}:{number}: not JSON ({e.msg})")
            if event.get("event") == "train" and "loss" in event:
                losses[int(event["step"])] = float(event["loss"])
            elif event.get("event") == "eval" and "test_accuracy" in event:
                if final is None or event["step"] >= final["step"]:
                    final = event
    if not losses:
        sys.exit(f"plot_figure2: {path}: no training losses (expected lt-train --log lines with event train)")
    return losses, final


class Canvas:
    def __init__(self, width, height):
        self.width, self.height = width, height
        self.pixels = bytearray(b"\xff" * (width * height * 3))

    def dot(self, x, y, color, size=1):
        for dy in range(size):
            for dx in range(size):
                px, py = x + dx, y + dy
                if 0 <= px < self.width and 0 <= py < self.height:
                    i = (py * self.width + px) * 3
                    self.pixels[i:i + 3] = bytes(color)

    def line(self, x0, y0, x1, y1, color, size=1):
        steps = max(abs(x1 - x0), abs(y1 - y0), 1)
        for s in range(steps + 1):
            self.dot(round(x0 + (x1 - x0) * s / steps), round(y0 + (y1 - y0) * s / steps), color, size)

    def text(self, x, y, string, color=(0, 0, 0), scale=2):
        for c in string.upper():
            glyph = FONT.get(c, FONT["_"])
            for row in range(5):
                for col in range(3):
                    if glyph[row * 3 + col] == "1":
                        self.dot(x + col * scale, y + row * scale, color, scale)
            x += 4 * scale

    def png(self):
        raw = b"".join(b"\x00" + bytes(self.pixels[y * self.width * 3:(y + 1) * self.width * 3])
                       for y in range(self.height))

        def chunk(kind, data):
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)  # 8-bit RGB
        return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + \
            chunk(b"IEND", b"")


def nice_step(span, ticks=5):
    """A 1, 2 or 5 times a power of ten near span / ticks."""
    raw = span / ticks
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def label(value):
    return f"{value:g}"


def plot(runs, path):
    canvas = Canvas(WIDTH, HEIGHT)
    x1, y1 = WIDTH - RIGHT, HEIGHT - BOTTOM
    max_step = max(max(losses) for _, losses, _ in runs)
    max_loss = max(max(losses.values()) for _, losses, _ in runs)
    y_tick = nice_step(max(max_loss, 1e-6))
    y_top = y_tick * -(-max_loss // y_tick)
    x_tick = nice_step(max(max_step, 1))
    x_right = x_tick * -(-max(max_step, 1) // x_tick)
    to_x = lambda step: LEFT + round((x1 - LEFT) * step / x_right)
    to_y = lambda loss: y1 - round((y1 - TOP) * loss / y_top)

    grey, black = (220, 220, 220), (0, 0, 0)
    for i in range(int(round(y_top / y_tick)) + 1):
        y = to_y(i * y_tick)
        canvas.line(LEFT, y, x1, y, grey)
        canvas.text(LEFT - 8 - 8 * len(label(i * y_tick)), y - 5, label(i * y_tick))
    for i in range(int(round(x_right / x_tick)) + 1):
        x = to_x(i * x_tick)
        canvas.line(x, TOP, x, y1, grey)
        canvas.text(x - 4 * len(label(i * x_tick)), y1 + 8, label(i * x_tick))
    canvas.line(LEFT, TOP, LEFT, y1, black)
    canvas.line(LEFT, y1, x1, y1, black)
    canvas.text((LEFT + x1) // 2 - 56, HEIGHT - 18, "gradient steps")
    canvas.text(LEFT - 16, TOP - 26, "loss")

    for index, (name, losses, _) in enumerate(runs):
        color = COLORS[index % len(COLORS)]
        columns = {}
        for step, loss in losses.items():
            columns.setdefault(to_x(step), []).append(loss)
        points = [(x, to_y(sum(v) / len(v))) for x, v in sorted(columns.items())]
        for (xa, ya), (xb, yb) in zip(points, points[1:] or points):
            canvas.line(xa, ya, xb, yb, color, 2)
        ly = TOP + 10 + 18 * index
        canvas.line(x1 - 200, ly + 4, x1 - 176, ly + 4, color, 3)
        canvas.text(x1 - 168, ly, name)
    with open(path, "wb") as f:
        f.write(canvas.png())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", nargs="+", help="lt-train --log files, one per run")
    parser.add_argument("-o", "--output", default="figure2.png", help="the PNG to write")
    args = parser.parse_args()
    runs = []
    for path in args.logs:
        if not os.path.isfile(path):
            sys.exit(f"plot_figure2: {path}: no such file")
        losses, final = read_run(path)
        runs.append((os.path.splitext(os.path.basename(path))[0], losses, final))
    plot(runs, args.output)
    for name, losses, final in runs:
        last = max(losses)
        if final is None:
            print(f"{name}: no test accuracy logged; last training loss {losses[last]:.4f} at step {last}")
        else:
            print(f"{name}: final test accuracy {final['test_accuracy']:.4f} (test loss {final['test_loss']:.4f}) "
                  f"at step {final['step']}; last training loss {losses[last]:.4f}")
    print(f"plot_figure2: wrote {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
