// OuterState to bytes and back; see outer_state_io.h for the layout.
#include "engine/algo/outer_state_io.h"

#include <cstring>
#include <string>

#include <torch/torch.h>

namespace tw {
namespace {

constexpr char kMagic[4] = {'T', 'W', 'O', 'S'};

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));  // the platforms built for are little-endian (core/model_size.h)
    out.insert(out.end(), b, b + sizeof(T));
}

struct Reader {
    const uint8_t* p;
    size_t n, at = 0;
    template <typename T>
    bool get(T& v) {
        if (n - at < sizeof(T)) return false;
        std::memcpy(&v, p + at, sizeof(T));
        at += sizeof(T);
        return true;
    }
};

}  // namespace

std::vector<uint8_t> encode_outer_state(const OuterState& s) {
    std::vector<uint8_t> out(kMagic, kMagic + 4);
    put<uint32_t>(out, static_cast<uint32_t>(s.size()));
    for (auto& [name, t0] : s) {
        const torch::Tensor t = t0.detach().to(torch::kCPU).contiguous();
        put<uint16_t>(out, static_cast<uint16_t>(name.size()));
        out.insert(out.end(), name.begin(), name.end());
        put<uint8_t>(out, t.scalar_type() == torch::kLong ? 1 : 0);
        put<uint8_t>(out, static_cast<uint8_t>(t.dim()));
        for (int64_t d : t.sizes()) put<int64_t>(out, d);
        const auto* b = static_cast<const uint8_t*>(t.data_ptr());
        out.insert(out.end(), b, b + t.numel() * t.element_size());
    }
    return out;
}

Result<OuterState> decode_outer_state(const uint8_t* data, size_t n) {
    using R = Result<OuterState>;
    if (n < 8 || std::memcmp(data, kMagic, 4) != 0) return R::error("outer state: not a TWOS block");
    Reader r{data, n, 4};
    uint32_t count = 0;
    r.get(count);
    OuterState s;
    for (uint32_t k = 0; k < count; ++k) {
        const std::string at = "outer state: entry " + std::to_string(k);
        uint16_t len = 0;
        if (!r.get(len) || n - r.at < len) return R::error(at + ": truncated name");
        std::string name(reinterpret_cast<const char*>(data + r.at), len);
        r.at += len;
        uint8_t dtype = 0, ndim = 0;
        if (!r.get(dtype) || !r.get(ndim)) return R::error(at + " (" + name + "): truncated header");
        if (dtype > 1) return R::error(at + " (" + name + "): unknown dtype " + std::to_string(dtype));
        if (ndim > 8) return R::error(at + " (" + name + "): " + std::to_string(ndim) + " dimensions");
        std::vector<int64_t> dims(ndim);
        uint64_t numel = 1;
        for (auto& d : dims) {
            if (!r.get(d) || d < 0 || d > (int64_t{1} << 40)) return R::error(at + " (" + name + "): bad dimension");
            numel *= static_cast<uint64_t>(d);
            if (numel > (uint64_t{1} << 40)) return R::error(at + " (" + name + "): too many elements");
        }
        const uint64_t bytes = numel * (dtype == 1 ? 8 : 4);
        if (n - r.at < bytes) return R::error(at + " (" + name + "): " + std::to_string(bytes) + " bytes of data, " +
                                             std::to_string(n - r.at) + " left");
        auto t = torch::empty(dims, dtype == 1 ? torch::kLong : torch::kFloat32);
        std::memcpy(t.data_ptr(), data + r.at, bytes);
        r.at += bytes;
        s.emplace_back(std::move(name), std::move(t));
    }
    if (r.at != n) return R::error("outer state: " + std::to_string(n - r.at) + " bytes after the last entry");
    return s;
}

}  // namespace tw
