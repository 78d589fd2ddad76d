// outer.topology: how the payloads of an outer round travel among its members.
//   ring — a ring all-reduce (core/ring_schedule.h, engine/algo/ring_allreduce.h): reduce-scatter
//          then all-gather, 2·(R−1) hops, each member sending ≈ 2·(R−1)/R of the payload; the
//          payloads are summed hop by hop, so only dense ones can take it.
//   mesh — an all-gather: every member sends its whole payload to every other member in one hop,
//          (R−1)·payload bytes, and every member aggregates all of them itself.
//   hub  — every member uploads its payload once to a relay (remote/hub_relay.h) and downloads the
//          others': payload sent, (R−1)·payload received, 2 hops; the aggregation is the mesh's.
// Which algorithm accepts which, and its default, is its row of core/algorithm.h. Values are stable
// (they reach stored configs as these names).
#pragma once

#include <cstdint>
#include <iterator>
#include <optional>
#include <string_view>

#include "core/enum_names.h"

namespace tw {

enum class Topology : uint8_t { kRing = 0, kMesh = 1, kHub = 2 };

inline constexpr EnumName<Topology> kTopologyNames[] = {
    {Topology::kRing, "ring"}, {Topology::kMesh, "mesh"}, {Topology::kHub, "hub"}};
static_assert(enum_table_complete(kTopologyNames) && std::size(kTopologyNames) == 3);

inline const char* to_string(Topology t) { return enum_name(kTopologyNames, t); }
// nullopt for a name no topology has.
inline std::optional<Topology> parse_topology(std::string_view s) { return enum_value(kTopologyNames, s); }

}  // namespace tw
