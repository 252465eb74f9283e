// Device dispatch inside an op: `if (d == Device::cuda) LT_ON_CUDA(cuda::op(...));`
// runs the launcher and returns. Without CUDA the call is not even compiled;
// common_device() has already refused the cuda device with a clear message.
#pragma once
#include "common/error.h"
#ifdef LT_WITH_CUDA
#include "backend/cuda_module.h"
#define LT_ON_CUDA(call) \
  do {                   \
    call;                \
    return;              \
  } while (0)
#else
#define LT_ON_CUDA(call) throw ::lt::Error("this lt was built without CUDA")
#endif
