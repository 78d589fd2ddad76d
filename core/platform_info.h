// What a node computes on, for the record ("honest reproducibility"): re-runs on one
// machine are bit-identical, but across CPUs the BLAS kernels differ, so a stored run says which
// CPU and which BLAS library produced its numbers. Torch-free: the BLAS is the shared library the
// process actually mapped (Debian's alternatives decide it at run time, not at build time).
// Thread-safe (reads /proc only).
#pragma once

#include <cstdint>
#include <istream>
#include <string>

namespace tw {

struct PlatformInfo {
    std::string cpu;           // /proc/cpuinfo's "model name" (or "" when unknown)
    int64_t logical_cpus = 0;  // processors the OS reports online
    std::string blas;          // the BLAS library mapped into this process, file name and folder
                               // ("libopenblasp-r0.3.21.so (openblas-pthread)"), "" when none is loaded
};

PlatformInfo this_platform();

// The BLAS named by a /proc/PID/maps listing: the first implementation library mapped (OpenBLAS,
// MKL, BLIS, ATLAS) over the generic libblas.so that Debian's alternatives point at it; "" if none.
std::string blas_from_maps(std::istream& maps);

// `text` from another process made safe to store and print: printable ASCII only (others become
// '?'), at most `max` characters.
std::string printable_label(const std::string& text, size_t max = 160);

}  // namespace tw
