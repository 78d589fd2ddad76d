// Groups by the user's name; see run_groups.h.
#include "storage/run_groups.h"

#include <algorithm>
#include <set>

namespace tw {

Result<std::vector<int64_t>> runs_in_group(RunStore& store, const std::string& group, const std::string& db_label) {
    using R = Result<std::vector<int64_t>>;
    auto listed = store.list_runs();
    if (!listed) return listed.status();
    const std::vector<RunSummary>& runs = *listed;
    std::string stored = group;
    if (std::none_of(runs.begin(), runs.end(), [&](const RunSummary& r) { return r.group == group; }))
        for (const RunSummary& r : runs)  // oldest first: the last match is the newest launch
            if (r.group.rfind(group + "@", 0) == 0) stored = r.group;
    std::vector<int64_t> ids;
    for (const RunSummary& r : runs)
        if (r.group == stored) ids.push_back(r.id);
    if (!ids.empty()) return ids;
    std::set<std::string> known;
    for (const RunSummary& r : runs)
        if (!r.group.empty()) known.insert(r.group);
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    return R::error("no runs in group \"" + group + "\" in " + db_label +
                    (known.empty() ? " (it has no groups)" : " (groups: " + list + ")"));
}

}  // namespace tw
