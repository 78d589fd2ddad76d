// Tests of core/platform_info.h: the BLAS read from a maps listing, and labels from other processes.
#include <gtest/gtest.h>

#include <sstream>

#include "core/platform_info.h"

namespace tw {
namespace {

TEST(PlatformInfo, TheImplementationBehindDebiansGenericBlasIsNamed) {
    std::istringstream maps(
        "7f00-7f01 r-xp 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0\n"
        "7f01-7f02 r-xp 00000000 08:01 2 /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3\n"
        "7f02-7f03 r-xp 00000000 08:01 3 /usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblasp-r0.3.21.so\n"
        "7f03-7f04 rw-p 00000000 00:00 0 [heap]\n");
    EXPECT_EQ(blas_from_maps(maps), "libopenblasp-r0.3.21.so (openblas-pthread)");
    std::istringstream reference("7f01-7f02 r-xp 00000000 08:01 2 /usr/lib/x86_64-linux-gnu/blas/libblas.so.3\n");
    EXPECT_EQ(blas_from_maps(reference), "libblas.so.3 (blas)");  // the reference BLAS: generic only
    std::istringstream none("7f03-7f04 rw-p 00000000 00:00 0 [stack]\n");
    EXPECT_EQ(blas_from_maps(none), "");
}

TEST(PlatformInfo, LabelsFromAnotherProcessArePrintableAndBounded) {
    EXPECT_EQ(printable_label("AMD EPYC\n\x1b[2J", 160), "AMD EPYC??[2J");
    EXPECT_EQ(printable_label(std::string(500, 'x'), 160).size(), 160u);
}

TEST(PlatformInfo, ThisMachineReportsItsProcessors) {
    const PlatformInfo p = this_platform();
    EXPECT_GE(p.logical_cpus, 1);
}

}  // namespace
}  // namespace tw
