// OutputHead: the head a model was built with, dispatched to its functions.
#include "lt/heads.h"

namespace lt {

double OutputHead::loss_forward(const Tensor& head, const Tensor& targets, Tensor& nll) const {
  return kind == HeadKind::categorical ? categorical_loss_forward(head, targets, nll)
                                       : mol_loss_forward(head, targets, nll);
}

void OutputHead::loss_backward(const Tensor& head, const Tensor& targets, float scale, Tensor& dhead) const {
  if (kind == HeadKind::categorical)
    categorical_loss_backward(head, targets, scale, dhead);
  else
    mol_loss_backward(head, targets, scale, dhead);
}

void OutputHead::sample(const Tensor& head, uint64_t seed, int64_t step, Tensor& out) const {
  if (kind == HeadKind::categorical)
    categorical_sample(head, seed, step, out);
  else
    mol_sample(head, seed, step, out);
}

}  // namespace lt
