// Fault marks as plot markers; see fault_markers.h.
#include "ui/panels/fault_markers.h"

namespace tw::ui {

ImU32 fault_color(int kind) {
    // In fault_kinds() order: fault, node-lost, member-lost, rejoin, recovery, late, members, spare, leave.
    static const ImU32 kColors[] = {IM_COL32(214, 39, 40, 255),  IM_COL32(255, 127, 14, 255), IM_COL32(255, 127, 14, 255),
                                    IM_COL32(44, 160, 44, 255),  IM_COL32(23, 190, 207, 255), IM_COL32(188, 189, 34, 255),
                                    IM_COL32(127, 127, 127, 255), IM_COL32(44, 160, 44, 255), IM_COL32(214, 39, 40, 255)};
    if (kind < 0 || kind >= static_cast<int>(sizeof kColors / sizeof kColors[0])) return IM_COL32(127, 127, 127, 255);
    return kColors[kind];
}

void append_markers(const std::vector<FaultMark>& marks, std::vector<PlotMarker>& out) {
    for (const FaultMark& m : marks) out.push_back({m.x, fault_color(m.kind), m.label, m.text});
}

}  // namespace tw::ui
