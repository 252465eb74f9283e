// Images drawn in the terminal while they are generated: a grid of images
// side by side, two pixel rows per character cell (the upper half block
// U+2580 with 24-bit or 256-colour foreground and background), redrawn in
// place line by line as pixels arrive. With NO_COLOR or a dumb terminal, an
// ASCII grey ramp instead. Everything goes to stderr.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace lt::app {

enum class ColorMode { truecolor, ansi256, ascii };

// NO_COLOR set or TERM empty/dumb: ascii; COLORTERM truecolor/24bit: truecolor; else ansi256.
ColorMode detect_color_mode();
// Columns and rows of the terminal on stderr (80 x 24 when unknown).
void terminal_size(int& columns, int& rows);

class TerminalGrid {
 public:
  // count images of height x width x channels (1 or 3), as many side by side
  // as fit the terminal's width, as many rows of them as fit its height.
  TerminalGrid(int64_t count, int64_t height, int64_t width, int64_t channels, ColorMode mode);
  // pixels [count, subpixels]; subpixels at index >= decided are not known yet
  // and drawn as a placeholder. Redraws at most ~30 times a second unless force.
  void draw(const uint8_t* pixels, int64_t decided, bool force = false);
  // Per-subpixel mask (count x subpixels) of what is decided, for completions
  // whose known pixels are not a prefix; overrides `decided` where set.
  void set_known(std::vector<uint8_t> known) { known_ = std::move(known); }
  // Final frame; the cursor ends below the grid.
  void finish(const uint8_t* pixels);
  int64_t shown() const { return shown_; }  // images that fit on screen

 private:
  std::string render_line(const uint8_t* pixels, int64_t decided, int64_t line) const;
  void cell_color(const uint8_t* pixels, int64_t decided, int64_t image, int64_t y, int64_t x,
                  int& r, int& g, int& b, bool& pending) const;

  int64_t count_, height_, width_, channels_;
  ColorMode mode_;
  int64_t columns_ = 1, shown_ = 0, lines_per_image_ = 0, total_lines_ = 0;
  std::vector<std::string> drawn_;  // what is on screen, line by line
  std::vector<uint8_t> known_;
  bool started_ = false;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace lt::app
