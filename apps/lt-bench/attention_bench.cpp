// lt-bench attention: the paper's Figure 1. Forward + backward time and peak
// memory per sample of softmax, linear and causal-linear attention for
// sequence lengths 2^9 .. 2^16, the batch scaled inversely with the length;
// favor and causal-favor are linear attention with the Performer's FAVOR+
// features (F = the map's default width) in place of elu + 1; lsh-1, lsh-4
// (and causal-) are Reformer's LSH attention as the paper configured it (64
// buckets, chunks of 32; CPU only), its rotations drawn anew every pass.
// --tf32 (cuda): the causal kinds' chunks on the tensor cores.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <random>

#include "attention/attention.h"
#include "attention/feature_map.h"
#include "benchmarks.h"
#include "model/transformer.h"
#include "ops/ops.h"

namespace lt::bench {
namespace {

const std::vector<std::string> kKinds = {"softmax", "causal-softmax", "linear",       "causal-linear",
                                          "favor",   "causal-favor",   "lsh-1",        "lsh-4",
                                          "causal-lsh-1", "causal-lsh-4"};

struct Case {
  std::string kind;  // one of kKinds
  int64_t N, L, H, E;
  int64_t F;  // width of phi(q), phi(k): E for softmax and elu + 1
};

bool is_softmax(const Case& c) { return c.kind.find("softmax") != std::string::npos; }
bool is_lsh(const std::string& kind) { return kind.find("lsh") != std::string::npos; }

LshOptions lsh_options(const std::string& kind) {
  TransformerConfig t;
  t.set_attention(kind);
  t.direction = kind.rfind("causal-", 0) == 0 ? Direction::causal : Direction::bidirectional;
  return t.lsh_options();
}

// Bytes the case will hold at its peak (inputs, outputs, gradients, and the
// L x L probabilities of softmax), to skip what cannot fit.
double planned_bytes(const Case& c) {
  const double tokens = double(c.N) * c.L * c.H;
  double base = tokens * c.E * 4 * 8;  // q k v out dout dq dk dv
  if (is_softmax(c))
    base += double(c.N) * c.H * c.L * c.L * 4 * 2;
  else if (is_lsh(c.kind))
    base += tokens * (lsh_options(c.kind).rounds + 1) * 4;  // orders and log-normalisers
  else
    base += tokens * c.F * 4 * 4;  // fq fk dfq dfk
  return base;
}

// What one forward + backward pass writes, allocated once per case so that
// the timed passes measure arithmetic rather than page faults of fresh
// allocations; the warm-up pass, which allocates them, gives the peak.
struct Buffers {
  Tensor out, dq, dk, dv, probs, fq, fk, dfq, dfk, order, lse, rotations;
  Buffers(const Case& c, Device dev) {
    const Shape s{c.N, c.L, c.H, c.E}, f{c.N, c.L, c.H, c.F};
    out = Tensor::empty(s, dev), dq = Tensor::empty(s, dev), dv = Tensor::empty(s, dev);
    if (!is_lsh(c.kind)) dk = Tensor::empty(s, dev);  // LSH keys are the queries: no dk
    if (is_lsh(c.kind)) {
      const LshOptions o = lsh_options(c.kind);
      order = Tensor::empty({c.N, c.H, o.rounds, c.L}, dev, DType::i32);
      lse = Tensor::empty({c.N, c.H, c.L}, dev);
      rotations = Tensor::empty({o.rounds, c.E, o.buckets / 2}, dev);
    } else if (is_softmax(c)) {
      probs = Tensor::empty({c.N, c.H, c.L, c.L}, dev);
    } else {
      fq = Tensor::empty(f, dev), fk = Tensor::empty(f, dev), dfq = Tensor::empty(f, dev), dfk = Tensor::empty(f, dev);
    }
  }
};

void run_case(const Case& c, Device dev, bool tf32, const Tensor& q, const Tensor& k, const Tensor& v,
              const Tensor& dout, const FeatureMap& phi, Buffers& b) {
  if (is_lsh(c.kind)) {  // shared QK: q serves as keys, k is not read
    const Tensor no_lengths;
    const LshOptions o = lsh_options(c.kind);
    draw_lsh_rotations(uint64_t(c.L), b.rotations);
    lsh_attention_forward(q, v, b.rotations, no_lengths, o, b.order, b.lse, b.out);
    lsh_attention_backward(q, v, no_lengths, o, b.order, b.lse, b.out, dout, b.dq, b.dv);
  } else if (is_softmax(c)) {
    const Tensor no_lengths;
    softmax_attention_forward(q, k, v, no_lengths, c.kind == "causal-softmax", b.probs, b.out);
    softmax_attention_backward(q, k, v, no_lengths, b.probs, dout, b.dq, b.dk, b.dv);
  } else {
    const Tensor no_lengths;
    phi.forward(q, b.fq);
    phi.forward(k, b.fk);
    if (c.kind == "linear" || c.kind == "favor") {
      linear_attention_forward(b.fq, b.fk, v, no_lengths, b.out);
      linear_attention_backward(b.fq, b.fk, v, no_lengths, dout, b.dfq, b.dfk, b.dv);
    } else {
      causal_linear_attention_forward(b.fq, b.fk, v, no_lengths, b.out, tf32);
      causal_linear_attention_backward(b.fq, b.fk, v, no_lengths, dout, b.dfq, b.dfk, b.dv, tf32);
    }
    phi.backward(q, b.dfq, b.dq);
    phi.backward(k, b.dfk, b.dk);
  }
  synchronize(dev);
}

}  // namespace

void run_attention_bench(const AttentionBenchOptions& o, Writer& out) {
  std::vector<std::string> kinds = o.kinds;
  if (kinds.empty() || (kinds.size() == 1 && kinds[0] == "all")) kinds = kKinds;
  for (const std::string& k : kinds)
    if (std::find(kKinds.begin(), kKinds.end(), k) == kKinds.end())
      throw Error("unknown attention '" + k +
                  "' (expected softmax, causal-softmax, linear, causal-linear, favor, causal-favor, lsh-1, lsh-4, "
                  "causal-lsh-1, causal-lsh-4 or all)");
  for (const std::string& dname : o.devices) {
    Device dev = parse_device(dname);
    require_device(dev);
    std::mt19937 gen(1234);
    FeatureMapOptions favor_options;
    favor_options.head_dim = o.head_dim;
    favor_options.device = dev;
    const bool any_favor = std::any_of(kinds.begin(), kinds.end(),
                                       [](const std::string& k) { return k.find("favor") != std::string::npos; });
    const std::unique_ptr<FeatureMap> elu = make_feature_map("elu"),
                                      favor = any_favor ? make_feature_map("favor", favor_options) : nullptr;
    for (int64_t L = o.min_length; L <= o.max_length; L *= 2) {
      for (const std::string& kind : kinds) {
        const FeatureMap& phi = kind.find("favor") != std::string::npos ? *favor : *elu;
        Case c{kind, std::max<int64_t>(1, o.tokens / L), L, o.heads, o.head_dim, phi.feature_dim(o.head_dim)};
        Row row = environment_row(dname, num_threads());
        row.set("attention", kind).set("N", L).set("batch", c.N).set("heads", c.H).set("head_dim", c.E);
        row.set("features", c.F).set("tf32", o.tf32);
        if (is_lsh(kind) && dev != Device::cpu) {
          std::cerr << kind << " on " << dname << ": skipped, LSH attention runs on the CPU only\n";
          continue;
        }
        if (planned_bytes(c) > o.max_memory_gb * 1e9) {
          if (o.verbose) std::cerr << kind << " N=" << L << ": skipped, needs ~" << planned_bytes(c) / 1e9 << " GB\n";
          continue;
        }
        const Shape s{c.N, c.L, c.H, c.E};
        Tensor q = random_tensor(s, dev, gen), kk = random_tensor(s, dev, gen), v = random_tensor(s, dev, gen),
               dout = random_tensor(s, dev, gen);
        // Warm-up: allocates the outputs, plans scratch, faults pages in. Its
        // peak, inputs included (the pass cannot run without them), is the
        // memory the pass needs.
        memory_reset_peak(dev);
        const size_t before = memory_in_use(dev);
        Buffers buffers(c, dev);
        run_case(c, dev, o.tf32, q, kk, v, dout, phi, buffers);
        const size_t inputs = is_lsh(kind) ? 3 : 4;  // q, k, v, dout; LSH reads no k
        const double peak_mb = double(memory_peak(dev) - before + inputs * q.nbytes()) / double(c.N) / 1e6;
        std::vector<double> ms;
        for (int r = 0; r < o.repetitions; ++r) {
          auto t0 = std::chrono::steady_clock::now();
          run_case(c, dev, o.tf32, q, kk, v, dout, phi, buffers);
          double dt = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
          ms.push_back(dt / double(c.N));
        }
        Stats t = Stats::of(ms);
        row.set("ms_per_sample", t.mean).set("ms_per_sample_std", t.stddev);
        row.set("us_per_token", t.mean * 1e3 / double(L));
        row.set("peak_mb_per_sample", peak_mb);
        row.set("repetitions", o.repetitions);
        out.add(row);
        if (o.verbose)
          std::cerr << kind << " N=" << L << " batch=" << c.N << ": " << Writer::plus_minus(t.mean, t.stddev)
                    << " ms/sample, " << peak_mb << " MB/sample\n";
      }
    }
  }
}

}  // namespace lt::bench
