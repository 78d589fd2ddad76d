// Learning-rate schedule: linear warm-up, then cosine decay to lr·min_lr_frac at the last step.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace tw {

// step is 0-based (the step about to run); total is train.steps.
inline double lr_at(int64_t step, int64_t total, double lr, int64_t warmup, double min_frac) {
    if (warmup > 0 && step < warmup) return lr * static_cast<double>(step + 1) / static_cast<double>(warmup);
    const double span = static_cast<double>(std::max<int64_t>(1, total - warmup));
    const double progress = std::min(1.0, static_cast<double>(step - warmup) / span);
    const double min_lr = lr * min_frac;
    return min_lr + 0.5 * (lr - min_lr) * (1.0 + std::cos(M_PI * progress));
}

}  // namespace tw
