// Compute-thread policy shared by every engine entry point (trainer, benchmarks, nodes).
#pragma once

#include <string>

namespace tw {

// Gives `n` threads to the work that dominates a step.
// With OpenBLAS (Debian's LibTorch does its fp32 GEMM there) the n threads go to OpenBLAS and
// torch's OpenMP intra-op pool gets 1: OpenMP workers spin between parallel regions and starve
// OpenBLAS's own pool. Measured on the 2-core CI machine, tiny preset: 6426 tok/s (BLAS 2, OMP 1)
// against 4029 tok/s (BLAS 2, OMP 2, the default). Without OpenBLAS, torch gets n threads.
// Returns a description such as "openblas 2 + torch intra-op 1".
std::string configure_compute_threads(int n);

}  // namespace tw
