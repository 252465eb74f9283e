// TerminalGrid: see terminal_grid.h. Only lines that changed since the last
// frame are rewritten, so a frame while sampling costs one or two lines.
#include "terminal_grid.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace lt::app {

ColorMode detect_color_mode() {
  const char* no_color = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  if ((no_color && *no_color) || !term || !*term || std::strcmp(term, "dumb") == 0) return ColorMode::ascii;
  const char* colorterm = std::getenv("COLORTERM");
  if (colorterm && (std::strcmp(colorterm, "truecolor") == 0 || std::strcmp(colorterm, "24bit") == 0))
    return ColorMode::truecolor;
  return ColorMode::ansi256;
}

void terminal_size(int& columns, int& rows) {
  columns = 80;
  rows = 24;
  winsize ws{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
    columns = ws.ws_col;
    rows = ws.ws_row;
  }
}

TerminalGrid::TerminalGrid(int64_t count, int64_t height, int64_t width, int64_t channels, ColorMode mode)
    : count_(count), height_(height), width_(width), channels_(channels), mode_(mode) {
  int cols = 80, rows = 24;
  terminal_size(cols, rows);
  columns_ = std::max<int64_t>(1, std::min<int64_t>(count, (cols + 1) / (width + 1)));
  lines_per_image_ = (height + 1) / 2;
  // As many rows of images as fit, keeping a line for the status below.
  int64_t grid_rows = std::max<int64_t>(1, (rows - 1) / (lines_per_image_ + 1));
  grid_rows = std::min(grid_rows, (count + columns_ - 1) / columns_);
  shown_ = std::min(count, grid_rows * columns_);
  total_lines_ = grid_rows * lines_per_image_ + (grid_rows - 1);
  drawn_.assign(total_lines_, std::string());
}

void TerminalGrid::cell_color(const uint8_t* pixels, int64_t decided, int64_t image, int64_t y,
                              int64_t x, int& r, int& g, int& b, bool& pending) const {
  const int64_t S = height_ * width_ * channels_, base = image * S + (y * width_ + x) * channels_;
  const bool known = known_.empty() ? base + channels_ - 1 < decided
                                    : known_[base + channels_ - 1] || base + channels_ - 1 < decided;
  pending = !known;
  if (pending) {
    r = 40, g = 40, b = 56;  // not generated yet: dark slate, distinct from black
    return;
  }
  r = pixels[base];
  g = channels_ == 3 ? pixels[base + 1] : r;
  b = channels_ == 3 ? pixels[base + 2] : r;
}

static int to_ansi256(int r, int g, int b) {
  if (r == g && g == b) {
    if (r < 8) return 16;
    if (r > 248) return 231;
    return 232 + (r - 8) / 10;
  }
  auto q = [](int v) { return (v * 5 + 127) / 255; };
  return 16 + 36 * q(r) + 6 * q(g) + q(b);
}

static void append_color(std::string& s, bool fg, int r, int g, int b, ColorMode mode) {
  char buf[32];
  if (mode == ColorMode::truecolor)
    std::snprintf(buf, sizeof buf, "\033[%d;2;%d;%d;%dm", fg ? 38 : 48, r, g, b);
  else
    std::snprintf(buf, sizeof buf, "\033[%d;5;%dm", fg ? 38 : 48, to_ansi256(r, g, b));
  s += buf;
}

std::string TerminalGrid::render_line(const uint8_t* pixels, int64_t decided, int64_t line) const {
  const int64_t grid_row = line / (lines_per_image_ + 1), within = line % (lines_per_image_ + 1);
  std::string s;
  if (within == lines_per_image_) return s;  // blank line between rows of images
  static const char ramp[] = " .:-=+*#%@";
  for (int64_t c = 0; c < columns_; ++c) {
    const int64_t image = grid_row * columns_ + c;
    if (image >= shown_) break;
    if (c > 0) s += ' ';
    const int64_t top = 2 * within, bottom = top + 1;
    for (int64_t x = 0; x < width_; ++x) {
      int r1, g1, b1, r2 = 0, g2 = 0, b2 = 0;
      bool p1, p2 = true;
      cell_color(pixels, decided, image, top, x, r1, g1, b1, p1);
      if (bottom < height_) cell_color(pixels, decided, image, bottom, x, r2, g2, b2, p2);
      if (mode_ == ColorMode::ascii) {
        int n = 0, sum = 0;
        if (!p1) sum += (r1 * 299 + g1 * 587 + b1 * 114) / 1000, ++n;
        if (!p2) sum += (r2 * 299 + g2 * 587 + b2 * 114) / 1000, ++n;
        s += n == 0 ? ' ' : ramp[std::min(9, (sum / n) * 10 / 256)];
        continue;
      }
      append_color(s, true, r1, g1, b1, mode_);
      if (bottom < height_)
        append_color(s, false, r2, g2, b2, mode_);
      else
        s += "\033[49m";
      s += "\u2580";
    }
    if (mode_ != ColorMode::ascii) s += "\033[0m";
  }
  return s;
}

void TerminalGrid::draw(const uint8_t* pixels, int64_t decided, bool force) {
  const auto now = std::chrono::steady_clock::now();
  if (started_ && !force && now - last_ < std::chrono::milliseconds(33)) return;
  last_ = now;
  std::string out;
  for (int64_t i = 0; i < total_lines_; ++i) {
    std::string line = render_line(pixels, decided, i);
    if (started_ && line == drawn_[i]) continue;
    if (!started_) {
      out += line + "\n";
    } else {
      const std::string up = std::to_string(total_lines_ - i);
      out += "\033[" + up + "A\r" + line + "\033[K\033[" + up + "B\r";
    }
    drawn_[i] = std::move(line);
  }
  started_ = true;
  if (!out.empty()) {
    std::fwrite(out.data(), 1, out.size(), stderr);
    std::fflush(stderr);
  }
}

void TerminalGrid::finish(const uint8_t* pixels) {
  draw(pixels, count_ * height_ * width_ * channels_, true);
}

}  // namespace lt::app
