// The codecs' common decode path (codec.h): a decoded tensor's memory and the sparse fallback. The
// codecs themselves are one per file (dense_wire_codec.cpp, int8_codec.cpp, fp4_codec.cpp,
// sparseloco_codec.cpp); SparseLoCo's kernels are topk_kernels.h.
#include "engine/codec/codec_internal.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace tw {

using namespace codec_detail;

namespace {

// A decoded tensor of `shape` (n elements). Past glibc's mmap threshold (32 MiB at most, the
// setting app/main.cpp uses) every allocation is a fresh mapping, and its 4 KiB page faults cost
// more than decoding itself (~35 ms per 64 MiB on the CI machine, against ~10 ms for the whole
// decode with 2 MiB pages). Such outputs are therefore 2 MiB-aligned and advised for transparent
// huge pages (an advice: no effect where THP is off). The tensor frees its memory when it dies;
// its storage is not resizable.
torch::Tensor new_output(at::IntArrayRef shape, int64_t n, bool zero) {
    const auto bytes = static_cast<size_t>(n) * 4;
    constexpr size_t kHuge = size_t{2} << 20;
    if (bytes >= (size_t{32} << 20)) {
        const size_t size = (bytes + kHuge - 1) / kHuge * kHuge;
        if (void* p = std::aligned_alloc(kHuge, size)) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
            madvise(p, size, MADV_HUGEPAGE);
#endif
            if (zero) std::memset(p, 0, bytes);
            return torch::from_blob(
                p, shape, [](void* q) { std::free(q); }, torch::kFloat32);
        }
    }
    return zero ? torch::zeros(shape, torch::kFloat32) : torch::empty(shape, torch::kFloat32);
}

}  // namespace

Status Codec::decode(const uint8_t* in, size_t size, size_t& offset, at::IntArrayRef shape, torch::Tensor& out) const {
    auto n = numel_of(name(), shape);
    if (!n) return n.status();
    if (const auto* direct = dynamic_cast<const DirectDecoder*>(this)) {
        auto t = new_output(shape, *n, direct->needs_zeros());
        size_t off = offset;
        if (Status s = direct->decode_into(in, size, off, shape, t.data_ptr<float>()); !s) return s;
        out = std::move(t);
        offset = off;
        return Status::ok();
    }
    SparsePayload sp;
    size_t off = offset;
    if (Status s = decode_sparse(in, size, off, shape, sp); !s) return s;
    auto t = new_output(shape, *n, true);
    float* dst = t.data_ptr<float>();
    for (size_t i = 0; i < sp.index.size(); ++i) {
        if (sp.index[i] < 0 || sp.index[i] >= *n)
            return Status::error(name() + ": decoded index " + std::to_string(sp.index[i]) + " out of range");
        dst[sp.index[i]] = sp.value[i];
    }
    out = std::move(t);
    offset = off;
    return Status::ok();
}

}  // namespace tw
