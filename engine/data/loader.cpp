// Window loader; see loader.h for the stream layout.
#include "engine/data/loader.h"

#include <algorithm>
#include <numeric>

#include "core/assert.h"

namespace tw {

WindowLoader::WindowLoader(std::shared_ptr<const std::vector<uint16_t>> tokens,
                           const std::vector<std::pair<int64_t, int64_t>>& spans, int64_t seq_len, int64_t batch_size,
                           uint64_t seed, int64_t replica, int64_t n_replicas)
    : T_(seq_len), B_(batch_size), seed_(seed), replica_(replica) {
    TW_ASSERT(n_replicas >= 1 && replica >= 0 && replica < n_replicas);
    int64_t total = 0;
    for (auto& s : spans) total += s.second;
    begin_ = total * replica / n_replicas;
    const int64_t end = total * (replica + 1) / n_replicas;
    stream_.reserve(static_cast<size_t>(end - begin_));
    int64_t pos = 0;  // position in the concatenated stream
    for (auto& [off, len] : spans) {
        const int64_t lo = std::max(pos, begin_), hi = std::min(pos + len, end);
        if (lo < hi) stream_.insert(stream_.end(), tokens->begin() + off + (lo - pos), tokens->begin() + off + (hi - pos));
        pos += len;
    }
    n_windows_ = stream_.size() > 0 ? (static_cast<int64_t>(stream_.size()) - 1) / T_ : 0;
    TORCH_CHECK(n_windows_ > 0, "data: replica ", replica, " of ", n_replicas, " gets ", stream_.size(),
                " tokens, fewer than one window of ", T_ + 1, " (use fewer replicas, a shorter seq_len or more data)");
}

torch::Tensor WindowLoader::gather(const std::vector<int64_t>& ids) const {
    auto out = torch::empty({static_cast<int64_t>(ids.size()), T_ + 1}, torch::kLong);
    auto* p = out.data_ptr<int64_t>();
    for (size_t b = 0; b < ids.size(); ++b) {
        const uint16_t* src = stream_.data() + ids[b] * T_;
        for (int64_t t = 0; t <= T_; ++t) p[b * (T_ + 1) + t] = src[t];
    }
    return out;
}

torch::Tensor WindowLoader::batch(int64_t step) {
    std::vector<int64_t> ids(static_cast<size_t>(B_));
    for (int64_t i = 0; i < B_; ++i) {
        const int64_t g = step * B_ + i;
        const int64_t epoch = g / n_windows_;
        if (epoch != perm_epoch_) {
            perm_.resize(static_cast<size_t>(n_windows_));
            std::iota(perm_.begin(), perm_.end(), 0);
            std::mt19937_64 rng(seed_ * 1000003ull + static_cast<uint64_t>(replica_) * 7919ull +
                                static_cast<uint64_t>(epoch));
            // Fisher–Yates with our own index draw: std::shuffle's use of the engine is unspecified.
            for (int64_t j = n_windows_ - 1; j > 0; --j) std::swap(perm_[j], perm_[rng() % static_cast<uint64_t>(j + 1)]);
            perm_epoch_ = epoch;
        }
        ids[static_cast<size_t>(i)] = perm_[static_cast<size_t>(g % n_windows_)];
    }
    return gather(ids);
}

torch::Tensor WindowLoader::sequential_batch(int64_t i) const {
    std::vector<int64_t> ids(static_cast<size_t>(B_));
    for (int64_t b = 0; b < B_; ++b) ids[static_cast<size_t>(b)] = (i * B_ + b) % n_windows_;
    return gather(ids);
}

}  // namespace tw
