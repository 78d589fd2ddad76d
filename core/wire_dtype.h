// The number formats payloads travel in — outer pseudo-gradients (DiLoCo, Streaming DiLoCo) and
// subspace coordinates between pipeline stages — as one vocabulary for the config's strings
// (`outer.dtype`, `pipeline.coord_dtype`) and the engine's codecs. Each user accepts the subset
// it implements and says so (DiLoCo: fp32, bf16; coordinates: fp32, bf16, int8; Streaming DiLoCo:
// all four). Values are stable.
#pragma once

#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>

#include "core/enum_names.h"
#include "core/status.h"

namespace tw {

enum class WireDtype : uint8_t { kFp32 = 0, kBf16 = 1, kInt8 = 2, kFp4 = 3 };

inline constexpr EnumName<WireDtype> kWireDtypeNames[] = {
    {WireDtype::kFp32, "fp32"}, {WireDtype::kBf16, "bf16"}, {WireDtype::kInt8, "int8"}, {WireDtype::kFp4, "fp4"}};
static_assert(enum_table_complete(kWireDtypeNames) && std::size(kWireDtypeNames) == 4);

inline const char* to_string(WireDtype d) { return enum_name(kWireDtypeNames, d); }

// "fp32" | "bf16" | "int8" | "fp4"; anything else is an error naming the text.
inline Result<WireDtype> parse_wire_dtype(std::string_view s) {
    if (auto d = enum_value(kWireDtypeNames, s)) return *d;
    return Result<WireDtype>::error("wire dtype \"" + std::string(s) + "\" is not fp32, bf16, int8 or fp4");
}

}  // namespace tw
