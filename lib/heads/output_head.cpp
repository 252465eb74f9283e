// OutputHead: the head a model was built with, dispatched to its functions.
#include "lt/heads.h"

#include <string>

#include "lt/error.h"

namespace lt {
namespace {
void check_per_position(const OutputHead& head) {
  check(head.per_position(), std::string("the ") + head.name() + " head scores whole sequences (lt/ctc.h)");
}
}  // namespace

double OutputHead::loss_forward(const Tensor& head, const Tensor& targets, Tensor& nll) const {
  check_per_position(*this);
  return kind == HeadKind::categorical ? categorical_loss_forward(head, targets, nll)
                                       : mol_loss_forward(head, targets, nll);
}

void OutputHead::loss_backward(const Tensor& head, const Tensor& targets, float scale, Tensor& dhead) const {
  check_per_position(*this);
  if (kind == HeadKind::categorical)
    categorical_loss_backward(head, targets, scale, dhead);
  else
    mol_loss_backward(head, targets, scale, dhead);
}

void OutputHead::sample(const Tensor& head, uint64_t seed, int64_t step, Tensor& out) const {
  check_per_position(*this);
  if (kind == HeadKind::categorical)
    categorical_sample(head, seed, step, out);
  else
    mol_sample(head, seed, step, out);
}

}  // namespace lt
