// Window loader: [B, T+1] token windows for training and validation.
//
// The selected documents are concatenated into one stream; replica r of R reads only the r-th
// contiguous part of it, so replicas' streams are disjoint. A part is cut into non-overlapping
// windows (stride T; each window holds T+1 tokens so targets never cross into the next window's
// inputs); each epoch visits them in an order shuffled by (seed, replica, epoch). batch(step) is a
// pure function of the step, so resuming needs no loader state.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include <torch/types.h>

namespace tw {

class WindowLoader {
public:
    // spans: [offset, length) ranges of `tokens` to read, in order.
    WindowLoader(std::shared_ptr<const std::vector<uint16_t>> tokens,
                 const std::vector<std::pair<int64_t, int64_t>>& spans, int64_t seq_len, int64_t batch_size,
                 uint64_t seed, int64_t replica = 0, int64_t n_replicas = 1);

    // Training batch for `step` (0-based): [B, T+1] int64, shuffled windows.
    torch::Tensor batch(int64_t step);
    // Validation batch `i`: windows taken in stream order (wrapping), the same on every call.
    torch::Tensor sequential_batch(int64_t i) const;

    int64_t num_windows() const { return n_windows_; }
    int64_t stream_tokens() const { return static_cast<int64_t>(stream_.size()); }
    // Index in the full concatenated stream (all replicas) of this replica's first token.
    int64_t stream_begin() const { return begin_; }

private:
    torch::Tensor gather(const std::vector<int64_t>& window_ids) const;
    std::vector<uint16_t> stream_;  // this replica's part
    int64_t begin_ = 0;
    int64_t T_, B_, n_windows_;
    uint64_t seed_;
    int64_t replica_;
    int64_t perm_epoch_ = -1;
    std::vector<int64_t> perm_;
};

}  // namespace tw
