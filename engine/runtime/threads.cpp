// Thread policy; see threads.h for the measurement behind it.
#include "engine/runtime/threads.h"

#include <dlfcn.h>
#include <torch/utils.h>

namespace tw {

std::string configure_compute_threads(int n) {
    using SetThreads = void (*)(int);
    // Already loaded by LibTorch's libblas.so.3 when it is OpenBLAS; RTLD_DEFAULT finds it.
    auto set_blas = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
    if (set_blas) {
        set_blas(n);
        torch::set_num_threads(1);
        return "openblas " + std::to_string(n) + " + torch intra-op 1";
    }
    torch::set_num_threads(n);
    return "torch intra-op " + std::to_string(n);
}

}  // namespace tw
