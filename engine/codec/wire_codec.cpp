// The codec of an outer.dtype name; see codec.h.
#include "core/wire_dtype.h"
#include "engine/codec/codec.h"

namespace tw {

Result<std::unique_ptr<Codec>> make_wire_codec(const std::string& dtype) {
    auto d = parse_wire_dtype(dtype);
    if (!d) return Result<std::unique_ptr<Codec>>::error("outer.dtype: " + d.message());
    switch (*d) {
        case WireDtype::kFp32: return make_dense_codec(false);
        case WireDtype::kBf16: return make_dense_codec(true);
        case WireDtype::kInt8: return make_int8_codec();
        case WireDtype::kFp4: return make_fp4_codec();
    }
    return Result<std::unique_ptr<Codec>>::error("outer.dtype \"" + dtype + "\" has no codec");
}

}  // namespace tw
