// Training curves on an axis that moves once per round (cumulative bytes sent): every step of a
// round ran at the same x, so the steps are drawn as one point, their mean, instead of a vertical
// stroke. Pure; no ImGui.
#pragma once

#include "ui/logic/mean_band.h"
#include "ui/logic/series.h"

#include <vector>

namespace tw::ui {

// Where each training step of a round sits on the bytes axis: the bytes sent once its round is over.
// `before[i]` and `at[i]` are the cumulative bytes before and after step i (NaN before the first
// counter: that step joins the round of the steps after it). Steps with equal `before` form a round;
// each gets `at` of its round's last step. Same length as the inputs.
std::vector<double> round_end_bytes(const std::vector<double>& before, const std::vector<double>& at);

// Consecutive points with the same x as one point at that x: the mean of their non-NaN ys (NaN
// when all are NaN). x stays non-decreasing; a series whose xs all differ comes back unchanged.
Series round_means(const Series& s);

// The same for a member curve; each point keeps the step of its round's first point, so members
// whose rounds start at the same steps still average point by point (mean_band).
MemberCurve round_means(const MemberCurve& m);

}  // namespace tw::ui
