// Process-wide settings; see process_limits.h.
#include "app/process_limits.h"

#include <sys/resource.h>

namespace tw::cli {

void raise_descriptor_limit() {
    rlimit r{};
    if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
        r.rlim_cur = r.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &r);
    }
}

}  // namespace tw::cli
