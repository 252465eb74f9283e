#include <tuple>
#include <utility>

#include "backend/device.h"
#include "ops/ops.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

TEST_CASE("cuda linear forward and backward match the CPU") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  // Few rows, and enough that the bias gradient sums hundreds of row chunks.
  for (auto [max_rows, max_width] : {std::pair<int64_t, int64_t>{300, 300}, {100000, 40}}) {
    const int64_t rows = rng.integer(1, max_rows), in = rng.integer(1, max_width), out = rng.integer(1, max_width);
    INFO("rows " << rows << " in " << in << " out " << out);
    Tensor x = rng.randn({rows, in}), W = rng.randn({out, in}, 0.1), b = rng.randn({out}), dy = rng.randn({rows, out});
    Tensor y = Tensor::empty({rows, out}), dx = Tensor::empty({rows, in});
    Tensor dW = rng.randn({out, in}), db = rng.randn({out});
    Tensor gy = Tensor::empty({rows, out}, Device::cuda), gdx = Tensor::empty({rows, in}, Device::cuda);
    Tensor gdW = dW.to(Device::cuda), gdb = db.to(Device::cuda);

    linear_forward(x, W, b, y);
    linear_forward(x.to(Device::cuda), W.to(Device::cuda), b.to(Device::cuda), gy);
    CHECK(rel_error(gy, y) < 1e-5);

    linear_backward(x, W, dy, dx, dW, db);
    linear_backward(x.to(Device::cuda), W.to(Device::cuda), dy.to(Device::cuda), gdx, gdW, gdb);
    CHECK(rel_error(gdx, dx) < 1e-5);
    CHECK(rel_error(gdW, dW) < 1e-5);
    CHECK(rel_error(gdb, db) < 1e-5);
  }
}

TEST_CASE("cuda linear forward with the bias and ReLU in the product's epilogue matches the CPU") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  // Widths that are multiples of 4 (16-byte rows: cuBLASLt) and odd ones
  // (a view one row in is misaligned: the sgemm path), and generation's shape.
  for (auto [rows, in, out] : {std::tuple<int64_t, int64_t, int64_t>{rng.integer(1, 300), 4 * rng.integer(1, 80), 4 * rng.integer(1, 80)},
                               {rng.integer(1, 300), rng.integer(1, 300) | 1, rng.integer(1, 300)},
                               {10000, 256, 1024}}) {
    INFO("rows " << rows << " in " << in << " out " << out);
    Tensor xs = rng.randn({rows + 1, in}), W = rng.randn({out, in}, 0.1), b = rng.randn({out});
    Tensor gxs = xs.to(Device::cuda), gW = W.to(Device::cuda), gb = b.to(Device::cuda);
    for (int64_t first : {0, 1})
      for (bool bias : {true, false})
        for (bool relu : {true, false}) {
          INFO("first row " << first << " bias " << bias << " relu " << relu);
          Tensor x = xs.rows(first, first + rows), gx = gxs.rows(first, first + rows);
          Tensor y = Tensor::empty({rows, out}), gy = Tensor::empty({rows, out}, Device::cuda);
          auto forward = [relu](const Tensor& x, const Tensor& W, const Tensor& b, Tensor& y, Products p) {
            relu ? linear_relu_forward(x, W, b, y, p) : linear_forward(x, W, b, y, p);
          };
          forward(x, W, bias ? b : Tensor(), y, Products::fp32);
          forward(gx, gW, bias ? gb : Tensor(), gy, Products::fp32);
          CHECK(rel_error(gy, y) < 1e-5);
          // TF32 keeps 10 bits of each operand: products within about 1e-3.
          forward(gx, gW, bias ? gb : Tensor(), gy, Products::tf32);
          CHECK(rel_error(gy, y) < 5e-3);
          // and the next fp32 product is full fp32 again
          forward(gx, gW, bias ? gb : Tensor(), gy, Products::fp32);
          CHECK(rel_error(gy, y) < 1e-5);
        }
  }
}
