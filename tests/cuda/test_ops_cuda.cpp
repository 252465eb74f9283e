// Every layer op of ops/ops.h (but linear, in test_linear_cuda.cpp): the GPU
// against the CPU on fresh random inputs, forward and backward, with row
// counts above 65535 for the row-wise kernels.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "ops/ops.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {
constexpr Device kGpu = Device::cuda;

std::vector<int32_t> random_ids(Rng& rng, int64_t n, int64_t V) {
  std::vector<int32_t> ids(n);
  for (auto& id : ids) id = static_cast<int32_t>(rng.integer(0, V - 1));
  return ids;
}
}  // namespace

TEST_CASE("cuda layernorm forward and backward match the CPU") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  struct Size {
    int64_t rows, C;
  };
  // C >= 3: below, dx is ~0 (xhat = +-1 whatever x is) and only rounding noise is left to compare.
  // Rows of 256 and 1024 fill the register rows exactly; past 1024 the kernel loops.
  for (Size s : {Size{rng.integer(1, 300), rng.integer(3, 1000)}, Size{rng.integer(65536, 80000), rng.integer(3, 40)},
                 Size{rng.integer(1, 100), 256}, Size{rng.integer(1, 50), 1024},
                 Size{rng.integer(1, 50), rng.integer(1025, 2000)}}) {
    const int64_t rows = s.rows, C = s.C;
    INFO("rows " << rows << " C " << C);
    Tensor x = rng.randn({rows, C}, 2.0), g = rng.randn({C}), b = rng.randn({C}), dy = rng.randn({rows, C});
    Tensor y = Tensor::empty({rows, C}), mean = Tensor::empty({rows}), rstd = Tensor::empty({rows});
    Tensor gy = Tensor::empty({rows, C}, kGpu), gmean = Tensor::empty({rows}, kGpu), grstd = Tensor::empty({rows}, kGpu);
    Tensor gx = x.to(kGpu), gg = g.to(kGpu);
    layernorm_forward(x, g, b, y, mean, rstd);
    layernorm_forward(gx, gg, b.to(kGpu), gy, gmean, grstd);
    CHECK(rel_error(gy, y) < 1e-5);
    CHECK(rel_error(gmean, mean) < 1e-5);
    CHECK(rel_error(grstd, rstd) < 1e-5);

    Tensor dx = Tensor::empty({rows, C}), dg = rng.randn({C}), db = rng.randn({C});
    Tensor gdx = Tensor::empty({rows, C}, kGpu), gdg = dg.to(kGpu), gdb = db.to(kGpu);
    layernorm_backward(x, g, mean, rstd, dy, dx, dg, db);
    layernorm_backward(gx, gg, gmean, grstd, dy.to(kGpu), gdx, gdg, gdb);
    CHECK(rel_error(gdx, dx) < 1e-5);
    CHECK(rel_error(gdg, dg) < 1e-5);
    CHECK(rel_error(gdb, db) < 1e-5);
  }
}

TEST_CASE("cuda residual layernorm matches the CPU") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (auto [rows, C] : {std::pair<int64_t, int64_t>{rng.integer(1, 300), rng.integer(2, 1000)},
                         {rng.integer(65536, 80000), rng.integer(2, 40)}, {rng.integer(1, 100), 256},
                         {rng.integer(1, 50), rng.integer(1025, 2000)}}) {
    INFO("rows " << rows << " C " << C);
    Tensor x = rng.randn({rows, C}), res = rng.randn({rows, C}, 2.0), g = rng.randn({C}), b = rng.randn({C});
    Tensor y = Tensor::empty({rows, C}), gy = Tensor::empty({rows, C}, kGpu);
    residual_layernorm_forward(x, res, g, b, y);
    residual_layernorm_forward(x.to(kGpu), res.to(kGpu), g.to(kGpu), b.to(kGpu), gy);
    CHECK(rel_error(gy, y) < 1e-5);
  }
}

TEST_CASE("cuda activations forward and backward match the CPU") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  using Forward = void (*)(const Tensor&, Tensor&);
  using Backward = void (*)(const Tensor&, const Tensor&, Tensor&);
  struct Activation {
    const char* name;
    Forward forward;
    Backward backward;
  };
  for (Activation a : {Activation{"relu", relu_forward, relu_backward}, Activation{"gelu", gelu_forward, gelu_backward},
                       Activation{"elu_plus_one", elu_plus_one_forward, elu_plus_one_backward}}) {
    INFO(a.name);
    const int64_t n = rng.integer(1, 1 << 20);
    Tensor x = rng.randn({n}, 4.0), dy = rng.randn({n});
    Tensor y = Tensor::empty({n}), dx = Tensor::empty({n});
    Tensor gx = x.to(kGpu), gy = Tensor::empty({n}, kGpu), gdx = Tensor::empty({n}, kGpu);
    a.forward(x, y);
    a.forward(gx, gy);
    CHECK(rel_error(gy, y) < 1e-5);
    a.backward(x, dy, dx);
    a.backward(gx, dy.to(kGpu), gdx);
    CHECK(rel_error(gdx, dx) < 1e-5);
  }
}

TEST_CASE("cuda softmax forward and backward match the CPU") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  struct Size {
    int64_t rows, C;
  };
  for (Size s : {Size{rng.integer(1, 300), rng.integer(1, 2000)}, Size{rng.integer(65536, 80000), rng.integer(1, 40)}}) {
    const int64_t rows = s.rows, C = s.C;
    INFO("rows " << rows << " C " << C);
    std::vector<float> xv = rng.normals(rows * C, 10.0);
    for (int64_t r = 0; r < rows; ++r)  // masked tails, as causal softmax attention has
      for (int64_t c = rng.integer(1, C); c < C; ++c) xv[r * C + c] = -INFINITY;
    Tensor x = Tensor::from_vector(xv, {rows, C}), dy = rng.randn({rows, C});
    Tensor y = Tensor::empty({rows, C}), dx = Tensor::empty({rows, C});
    Tensor gy = Tensor::empty({rows, C}, kGpu), gdx = Tensor::empty({rows, C}, kGpu);
    softmax_forward(x, y);
    softmax_forward(x.to(kGpu), gy);
    CHECK(rel_error(gy, y) < 1e-5);
    softmax_backward(y, dy, dx);
    softmax_backward(gy, dy.to(kGpu), gdx);
    CHECK(rel_error(gdx, dx) < 1e-5);
  }
}

TEST_CASE("cuda embedding matches the CPU and rejects a bad id without faulting") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  // At most ~100 repeats per id: float sums of more drift apart by ~1e-5 in any two orders.
  const int64_t N = rng.integer(1, 8), L = rng.integer(1, 3000), C = rng.integer(1, 300);
  const int64_t V = rng.integer(std::max<int64_t>(1, N * L / 100), 500);
  std::vector<int32_t> idv = random_ids(rng, N * L, V);
  Tensor ids = Tensor::from_vector(idv, {N, L}), table = rng.randn({V, C}), dy = rng.randn({N, L, C});
  Tensor gids = ids.to(kGpu), gtable = table.to(kGpu);
  Tensor y = Tensor::empty({N, L, C}), gy = Tensor::empty({N, L, C}, kGpu);
  embedding_forward(ids, table, y);
  embedding_forward(gids, gtable, gy);
  CHECK(rel_error(gy, y) == 0);

  Tensor dtable = rng.randn({V, C}), gdtable = dtable.to(kGpu);
  embedding_backward(ids, dy, dtable);
  embedding_backward(gids, dy.to(kGpu), gdtable);
  CHECK(rel_error(gdtable, dtable) < 1e-5);

  const int64_t pos = rng.integer(0, N * L - 1);
  idv[pos] = static_cast<int32_t>(V + rng.integer(0, 5));
  Tensor bad = Tensor::from_vector(idv, {N, L}, kGpu);
  const std::string why = "id " + std::to_string(idv[pos]) + " at position " + std::to_string(pos) +
                          " is outside [0, V) for V = " + std::to_string(V);
  CHECK_THROWS_WITH_AS(embedding_forward(bad, gtable, gy), doctest::Contains(why.c_str()), lt::Error);
  idv[pos] = -3;
  Tensor negative = Tensor::from_vector(idv, {N, L}, kGpu);
  CHECK_THROWS_WITH_AS(embedding_backward(negative, dy.to(kGpu), gdtable), doctest::Contains("id -3"), lt::Error);
  embedding_forward(gids, gtable, gy);  // the device is still usable
  CHECK(rel_error(gy, y) == 0);
}

TEST_CASE("cuda add and accumulate match the CPU") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t n = rng.integer(1, 3 << 20);
  Tensor a = rng.randn({n}), b = rng.randn({n}), y = Tensor::empty({n});
  Tensor ga = a.to(kGpu), gb = b.to(kGpu), gy = Tensor::empty({n}, kGpu);
  add(a, b, y);
  add(ga, gb, gy);
  CHECK(rel_error(gy, y) < 1e-5);
  Tensor ga2 = a.to(kGpu);
  add(ga2, gb, ga2);  // in place
  CHECK(rel_error(ga2, y) < 1e-5);
  accumulate(a, b);
  accumulate(ga, gb);
  CHECK(rel_error(ga, a) < 1e-5);
}

TEST_CASE("cuda copy_columns copies the CPU's columns") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t rows = rng.integer(1, 5000), C = rng.integer(1, 800), first = rng.integer(0, C - 1);
  const int64_t c = rng.integer(1, C - first);
  INFO("rows " << rows << " C " << C << " first " << first << " c " << c);
  Tensor src = rng.randn({rows, C}), dst = Tensor::empty({rows, c}), gdst = Tensor::empty({rows, c}, kGpu);
  copy_columns(src, first, dst);
  copy_columns(src.to(kGpu), first, gdst);
  CHECK(gdst.to_vector() == dst.to_vector());
}

TEST_CASE("cuda dropout draws exactly the CPU's mask in forward and backward") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t n = rng.integer(1, 3 << 20);
  const float p = float(rng.uniform(0, 0.9));
  const uint64_t s = uint64_t(rng.integer(0, int64_t(1) << 62));
  INFO("n " << n << " p " << p << " mask seed " << s);
  Tensor x = rng.randn({n}), dy = rng.randn({n}), y = Tensor::empty({n}), dx = Tensor::empty({n});
  Tensor gy = Tensor::empty({n}, kGpu), gdx = Tensor::empty({n}, kGpu);
  dropout_forward(x, p, s, y);
  dropout_forward(x.to(kGpu), p, s, gy);
  CHECK(gy.to_vector() == y.to_vector());
  dropout_backward(dy, p, s, dx);
  dropout_backward(dy.to(kGpu), p, s, gdx);
  CHECK(gdx.to_vector() == dx.to_vector());
  // Batch rows, batch-major and time-major, from a row inside a larger batch.
  const int64_t B = rng.integer(1, 9), L = rng.integer(1, 50), D = rng.integer(1, 90), first = rng.integer(0, 100);
  for (const BatchRows at : {BatchRows{first, B, 1}, BatchRows{first, B, L}}) {
    Tensor xr = rng.randn({B * L, D}), yr = Tensor::empty({B * L, D}), gyr = Tensor::empty({B * L, D}, kGpu);
    dropout_forward(xr, p, s, yr, at);
    dropout_forward(xr.to(kGpu), p, s, gyr, at);
    CHECK(gyr.to_vector() == yr.to_vector());
  }
}

TEST_CASE("cuda position code and its concatenation match the CPU") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t N = rng.integer(1, 5), L = rng.integer(1, 2000), C = rng.integer(1, 100), D = 2 * rng.integer(1, 64);
  const int64_t offset = rng.integer(0, 100000);
  INFO("offset " << offset << " L " << L << " D " << D);
  Tensor pe = Tensor::empty({L, D}), gpe = Tensor::empty({L, D}, kGpu);
  position_code(offset, pe);
  position_code(offset, gpe);
  CHECK(rel_error(gpe, pe) < 1e-5);

  Tensor x = rng.randn({N, L, C}), y = Tensor::empty({N, L, C + D}), gy = Tensor::empty({N, L, C + D}, kGpu);
  concat_position_forward(x, pe, y);
  concat_position_forward(x.to(kGpu), pe.to(kGpu), gy);
  CHECK(rel_error(gy, y) == 0);

  Tensor dy = rng.randn({N, L, C + D}), dx = Tensor::empty({N, L, C}), gdx = Tensor::empty({N, L, C}, kGpu);
  concat_position_backward(dy, dx);
  concat_position_backward(dy.to(kGpu), gdx);
  CHECK(rel_error(gdx, dx) == 0);
}

TEST_CASE("cuda lstm cell forward and backward and swap_leading_axes match the CPU") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t B = rng.integer(1, 40), H = rng.integer(1, 400), W = 2 * H, first = rng.integer(0, 1) * H;
  const int64_t t = rng.integer(0, 20);
  INFO("B " << B << " H " << H << " t " << t);
  std::vector<int32_t> len(B);
  for (auto& l : len) l = int32_t(rng.integer(0, 40));
  const Tensor lengths = Tensor::from_vector(len, {B}), rec = rng.randn({B, 4 * H}), cp = rng.randn({B, H});
  Tensor gates = rng.randn({B, 4 * H}), ggates = gates.to(kGpu);
  Tensor c = Tensor::empty({B, H}), h = Tensor::empty({B, H}), out = rng.randn({B, W});
  Tensor gc = Tensor::empty({B, H}, kGpu), gh = Tensor::empty({B, H}, kGpu), gout = out.to(kGpu);
  lstm_cell_forward(gates, rec, cp, lengths, t, c, h, out, first);
  lstm_cell_forward(ggates, rec.to(kGpu), cp.to(kGpu), lengths.to(kGpu), t, gc, gh, gout, first);
  CHECK(rel_error(ggates, gates) < 1e-5);
  CHECK(rel_error(gc, c) < 1e-5);
  CHECK(rel_error(gh, h) < 1e-5);
  CHECK(rel_error(gout, out) < 1e-5);

  const Tensor dh = rng.randn({B, H}), dout = rng.randn({B, W});
  Tensor dc = rng.randn({B, H}), gdc = dc.to(kGpu), dgates = Tensor::empty({B, 4 * H});
  Tensor gdgates = Tensor::empty({B, 4 * H}, kGpu);
  lstm_cell_backward(gates, c, cp, dh, dout, first, lengths, t, dc, dgates);
  lstm_cell_backward(ggates, gc, cp.to(kGpu), dh.to(kGpu), dout.to(kGpu), first, lengths.to(kGpu), t, gdc, gdgates);
  CHECK(rel_error(gdgates, dgates) < 1e-5);
  CHECK(rel_error(gdc, dc) < 1e-5);

  const int64_t n0 = rng.integer(1, 300), n1 = rng.integer(1, 300), C = rng.integer(1, 5);
  const Tensor src = rng.randn({n0, n1, C});
  Tensor dst = Tensor::empty({n1, n0, C}), gdst = Tensor::empty({n1, n0, C}, kGpu);
  swap_leading_axes(src, dst);
  swap_leading_axes(src.to(kGpu), gdst);
  CHECK(gdst.to_vector() == dst.to_vector());
}

TEST_CASE("cuda depthwise convolution forward, backward and continued match the CPU on padded rows") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (bool causal : {false, true}) {
    // A centred kernel is odd; a causal one may be either (the op refuses nothing else).
    std::vector<int64_t> kernels{1, 2 * rng.integer(1, 4) + 1, 31};
    if (causal) kernels.push_back(2 * rng.integer(1, 4));
    for (int64_t K : kernels) {
      const int64_t B = rng.integer(1, 9), L = rng.integer(1, 300), C = rng.integer(1, 800);
      INFO("B " << B << " L " << L << " C " << C << " K " << K << " causal " << causal);
      std::vector<int32_t> lengths;
      for (int64_t b = 0; b < B; ++b) lengths.push_back(int32_t(b == 0 ? L : rng.integer(0, L)));
      Tensor x = rng.randn({B, L, C}), w = rng.randn({C, K}), bias = rng.randn({C}), dy = rng.randn({B, L, C});
      Tensor dw0 = rng.randn({C, K}), db0 = rng.randn({C}), len = Tensor::from_vector(lengths, {B});
      Tensor y = Tensor::empty({B, L, C}), dx = Tensor::empty({B, L, C}), dw = Tensor::empty({C, K}), db = Tensor::empty({C});
      dw.copy_from(dw0);  // parameter gradients accumulate onto what is there
      db.copy_from(db0);
      depthwise_conv_forward(x, w, bias, len, causal, y);
      depthwise_conv_backward(x, w, len, causal, dy, dx, dw, db);
      Tensor gx = x.to(kGpu), gw = w.to(kGpu), gb = bias.to(kGpu), gdy = dy.to(kGpu), glen = len.to(kGpu);
      Tensor gy = Tensor::empty({B, L, C}, kGpu), gdx = Tensor::empty({B, L, C}, kGpu), gdw = dw0.to(kGpu), gdb = db0.to(kGpu);
      depthwise_conv_forward(gx, gw, gb, glen, causal, gy);
      depthwise_conv_backward(gx, gw, glen, causal, gdy, gdx, gdw, gdb);
      CHECK(rel_error(gy.to(Device::cpu), y) < 1e-5);
      CHECK(rel_error(gdx.to(Device::cpu), dx) < 1e-5);
      CHECK(rel_error(gdw.to(Device::cpu), dw) < 1e-4);
      CHECK(rel_error(gdb.to(Device::cpu), db) < 1e-4);
      if (!causal) continue;
      // Continued from a random window, in a chunk shorter than the window and then the rest.
      const Tensor window0 = rng.randn({B, K - 1, C});
      Tensor window = Tensor::empty({B, K - 1, C}), gwindow = window0.to(kGpu);
      window.copy_from(window0);
      for (auto [t0, t1] : {std::pair<int64_t, int64_t>{0, std::min<int64_t>(L, 2)}, {std::min<int64_t>(L, 2), L}}) {
        if (t1 == t0) continue;
        Tensor xc = Tensor::empty({B, t1 - t0, C});
        for (int64_t b = 0; b < B; ++b)
          xc.reshape({B * (t1 - t0), C}).rows(b * (t1 - t0), (b + 1) * (t1 - t0)).copy_from(x.reshape({B * L, C}).rows(b * L + t0, b * L + t1));
        Tensor yc = Tensor::empty(xc.shape()), gyc = Tensor::empty(xc.shape(), kGpu);
        depthwise_conv_continue(xc, w, bias, window, yc);
        depthwise_conv_continue(xc.to(kGpu), gw, gb, gwindow, gyc);
        CHECK(rel_error(gyc.to(Device::cpu), yc) < 1e-5);
        CHECK(rel_error(gwindow.to(Device::cpu), window) < 1e-6);
      }
    }
  }
}
