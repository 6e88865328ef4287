/*
 * block_layouts.cuh — the GGUF block structs of compute/weight_types.h, the
 * same header the CPU kernels read, so that the two cannot drift.  That
 * header is C11: its _Static_assert size checks are C++'s static_assert,
 * its functions (which host-side tests call) have C linkage.
 */
#ifndef ADIL_CUDA_BLOCK_LAYOUTS_CUH
#define ADIL_CUDA_BLOCK_LAYOUTS_CUH

#define _Static_assert static_assert
extern "C" {
#include "compute/weight_types.h"
}
#undef _Static_assert

#endif /* ADIL_CUDA_BLOCK_LAYOUTS_CUH */
