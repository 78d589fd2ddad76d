// OuterState to bytes and back; see outer_state_io.h for the layout.
#include "engine/algo/outer_state_io.h"

#include <cstring>
#include <string>

#include <torch/torch.h>

#include "core/little_endian.h"

namespace tw {
namespace {

constexpr char kMagic[4] = {'T', 'W', 'O', 'S'};
// Tensor elements are copied as they lie in memory: little-endian on every platform built for.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "outer state bytes are little-endian");

}  // namespace

std::vector<uint8_t> encode_outer_state(const OuterState& s) {
    std::vector<uint8_t> out(kMagic, kMagic + 4);
    le::Appender w{out};
    w.u32(static_cast<uint32_t>(s.size()));
    for (auto& [name, t0] : s) {
        const torch::Tensor t = t0.detach().to(torch::kCPU).contiguous();
        w.u16(static_cast<uint16_t>(name.size()));
        w.bytes(name.data(), name.size());
        w.u8(t.scalar_type() == torch::kLong ? 1 : 0);
        w.u8(static_cast<uint8_t>(t.dim()));
        for (int64_t d : t.sizes()) w.i64(d);
        w.bytes(t.data_ptr(), static_cast<size_t>(t.numel() * t.element_size()));
    }
    return out;
}

Result<OuterState> decode_outer_state(const uint8_t* data, size_t n) {
    using R = Result<OuterState>;
    if (n < 8 || std::memcmp(data, kMagic, 4) != 0) return R::error("outer state: not a TWOS block");
    le::Reader r{data, n, 4};
    uint32_t count = 0;
    r.u32(count);
    OuterState s;
    for (uint32_t k = 0; k < count; ++k) {
        const std::string at = "outer state: entry " + std::to_string(k);
        uint16_t len = 0;
        if (!r.u16(len) || r.left() < len) return R::error(at + ": truncated name");
        std::string name(reinterpret_cast<const char*>(data + r.at), len);
        r.at += len;
        uint8_t dtype = 0, ndim = 0;
        if (!r.u8(dtype) || !r.u8(ndim)) return R::error(at + " (" + name + "): truncated header");
        if (dtype > 1) return R::error(at + " (" + name + "): unknown dtype " + std::to_string(dtype));
        if (ndim > 8) return R::error(at + " (" + name + "): " + std::to_string(ndim) + " dimensions");
        std::vector<int64_t> dims(ndim);
        uint64_t numel = 1;
        for (auto& d : dims) {
            if (!r.i64(d) || d < 0 || d > (int64_t{1} << 40)) return R::error(at + " (" + name + "): bad dimension");
            numel *= static_cast<uint64_t>(d);
            if (numel > (uint64_t{1} << 40)) return R::error(at + " (" + name + "): too many elements");
        }
        const uint64_t bytes = numel * (dtype == 1 ? 8 : 4);
        if (r.left() < bytes) return R::error(at + " (" + name + "): " + std::to_string(bytes) + " bytes of data, " +
                                             std::to_string(r.left()) + " left");
        auto t = torch::empty(dims, dtype == 1 ? torch::kLong : torch::kFloat32);
        std::memcpy(t.data_ptr(), data + r.at, bytes);
        r.at += bytes;
        s.emplace_back(std::move(name), std::move(t));
    }
    if (r.at != n) return R::error("outer state: " + std::to_string(n - r.at) + " bytes after the last entry");
    return s;
}

}  // namespace tw
