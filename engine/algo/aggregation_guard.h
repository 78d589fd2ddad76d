// Bounds on replicas' contributions to an average (the outer algorithms' pseudo-gradients), shared by
// SparseLoCo's median-norm clipping and the aggregation guard of every outer algorithm.
//
// The round hash (Collective::agree) catches members that end a round holding different states; it
// cannot catch a keyed participant that sends one poisoned contribution to everyone alike, since all
// members then average the same poison. The guard bounds the damage: contribution r, of L2 norm n_r
// over the whole payload, is scaled by ratio·m_r / n_r when n_r > ratio·m_r, m_r being the LOWER
// median of the OTHER contributions' norms (leave-one-out). Leave-one-out, so the contribution being
// judged never sets its own bound (with two replicas the bound of each is the other's norm: a ×100
// attacker is brought down to ratio × the honest norm, the honest replica is untouched, which a plain
// median of two — their mean — could not do). The lower median, so attackers among the others pull
// the bound up only once they are half of them. A contribution alone (R = 1) is never scaled.
#pragma once

#include <vector>

namespace tw {

enum class NormReference {
    kMedianOfAll,          // SparseLoCo's clip_median: the median of all norms (mean of the middle two)
    kLowerMedianOfOthers,  // the guard: the lower median of the other contributions' norms
};

// The factor (≤ 1, as float: the precision the sums use) by which each contribution is scaled so its
// norm is at most ratio × its reference; exactly 1 where it already is. `clipped` (optional) receives
// how many were scaled. ratio ≤ 0 = no bound.
std::vector<float> norm_clip_scales(const std::vector<double>& norms, double ratio, NormReference ref,
                                    int* clipped = nullptr);

}  // namespace tw
