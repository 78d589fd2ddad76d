// The layout editor's model: RunConfig ⇄ TOML, with every error attached to its key; see layout_model.h.
#include "ui/logic/layout_model.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "core/algorithm.h"
#include "core/config_io.h"
#include "core/layout.h"

namespace tw::ui {
namespace {

// Every dotted key a layout may set, read off the resolved default TOML and the field table, so
// the list cannot drift from core/config_fields.def. The table adds the sections the defaults leave
// out of the TOML ([faults], [hdee]), so their problems land on their fields too.
const std::set<std::string>& known_keys() {
    static const std::set<std::string> keys = [] {
        std::set<std::string> k;
        for (const FieldInfo& f : config_fields()) k.insert(f.key);
        std::istringstream in(tw::to_toml(RunConfig{}));
        std::string line, section;
        while (std::getline(in, line)) {
            if (line.size() > 2 && line.front() == '[')
                section = line.substr(1, line.find(']') - 1);
            else if (const size_t eq = line.find(" = "); eq != std::string::npos && !section.empty())
                k.insert(section + "." + line.substr(0, eq));
        }
        return k;
    }();
    return keys;
}

// The non-empty lines of a message, leading blanks trimmed, without the "N problems in the
// configuration:" header that parse_config puts first.
std::vector<std::string> problem_lines(const std::string& message) {
    std::vector<std::string> out;
    std::istringstream in(message);
    std::string line;
    while (std::getline(in, line)) {
        line.erase(0, line.find_first_not_of(" \t"));
        const bool header = !line.empty() && std::isdigit(static_cast<unsigned char>(line[0])) &&
                            line.find(" in the configuration:") != std::string::npos;
        if (!line.empty() && !header) out.push_back(line);
    }
    return out;
}

// The first token of `line` that is a config key: {position, length}, or {npos, 0}. Paths such as
// "/runs/run.name" stay one token, so a file name is not mistaken for a key.
std::pair<size_t, size_t> find_key(const std::string& line) {
    static const char* kSeparators = " \t:\"'()[],;=";
    for (size_t i = line.find_first_not_of(kSeparators); i != std::string::npos;) {
        size_t j = line.find_first_of(kSeparators, i);
        if (j == std::string::npos) j = line.size();
        size_t len = j - i;
        while (len > 0 && line[i + len - 1] == '.') --len;  // a sentence's full stop
        if (known_keys().count(line.substr(i, len))) return {i, len};
        i = line.find_first_not_of(kSeparators, j);
    }
    return {std::string::npos, 0};
}

// Adds a reason under a key, once: parse_config and validate_config can report the same line.
void add_reason(std::string& reasons, const std::string& reason) {
    if (reasons.empty()) reasons = reason;
    else if (reasons.find(reason) == std::string::npos) reasons += "; " + reason;
}

// How many nodes `thinwire run` would have for this layout when the caller does not know: a remote
// layout's endpoints, or cluster.nodes when set; -1 when the layout brings up what it needs.
int64_t layout_nodes(const RunConfig& c) {
    if (c.cluster.mode == "remote") return static_cast<int64_t>(c.cluster.endpoints.size());
    return c.cluster.nodes > 0 ? c.cluster.nodes : -1;
}

// The checks `thinwire run` makes once its nodes are up (assign_roles in core/layout.h). Only for a
// config that passed parse_config, as there: assign_roles trusts its ranges.
void check_cluster(const RunConfig& c, int64_t nodes, std::map<std::string, std::string>& by_key,
                   std::vector<std::string>& general) {
    const bool short_of_nodes = nodes >= 0 && nodes < nodes_needed(c);
    // With 0 endpoints (or too few) assign_roles always stops at its checks, before building roles.
    std::vector<std::string> endpoints;
    for (int64_t i = 0; short_of_nodes && i < nodes; ++i)
        endpoints.push_back("inproc://layout-check-" + std::to_string(i));
    auto roles = assign_roles(c, endpoints, [] { return 0; });
    if (roles) return;
    std::string msg = roles.message();
    const std::string prefix = "the layout does not fit the cluster: ";
    if (msg.rfind(prefix, 0) == 0) msg.erase(0, prefix.size());
    for (const std::string& line : problem_lines(msg)) {
        // The message names no key; the count it compares against is the cluster's.
        if (line.rfind("too few nodes", 0) == 0) {
            if (short_of_nodes) add_reason(by_key["cluster.nodes"], line);
            continue;
        }
        attach_errors(line, by_key, general);
    }
}

}  // namespace

void attach_errors(const std::string& message, std::map<std::string, std::string>& by_key,
                   std::vector<std::string>& general) {
    for (const std::string& line : problem_lines(message)) {
        const auto [pos, len] = find_key(line);
        if (pos == std::string::npos) {
            if (std::find(general.begin(), general.end(), line) == general.end()) general.push_back(line);
            continue;
        }
        // "file: key: reason" keeps the reason; "key 9 exceeds ..." is a sentence about the key.
        const std::string key = line.substr(pos, len);
        std::string reason = line.substr(pos);
        if (line.compare(pos + len, 1, ":") == 0) {
            reason = line.substr(pos + len + 1);
            reason.erase(0, reason.find_first_not_of(' '));
        }
        add_reason(by_key[key], reason);
    }
}

LayoutModel::LayoutModel() : cfg_(parse_config("", "<default>").value()) {}

bool LayoutModel::validate(int nodes_available) {
    by_key_.clear();
    general_.clear();
    // The TOML round trip runs the same per-key range and choice checks a file goes through.
    auto parsed = parse_config(tw::to_toml(cfg_), "layout");
    if (parsed) {
        check_cluster(cfg_, nodes_available >= 0 ? nodes_available : layout_nodes(cfg_), by_key_, general_);
    } else {
        attach_errors(parsed.message(), by_key_, general_);
        // parse_config stops before its cross-field checks when a key is out of range; run them
        // too so every problem shows at once. n_head < 1 would divide by zero (its range error shows).
        if (cfg_.model.n_head >= 1)
            if (Status s = validate_config(cfg_); !s) attach_errors(s.message(), by_key_, general_);
    }
    return by_key_.empty() && general_.empty();
}

const std::string& LayoutModel::error(const std::string& key) const {
    static const std::string kNone;
    auto it = by_key_.find(key);
    return it == by_key_.end() ? kNone : it->second;
}

std::string LayoutModel::to_toml() const { return tw::to_toml(cfg_); }

Status LayoutModel::load_file(const std::string& path) {
    if (path.empty()) return Status::error("no layout file given");
    std::ifstream in(path);
    if (!in) return Status::error("cannot read layout file " + path);
    auto plan = load_run_plan(path);  // as `thinwire run` reads it: variants, sweep, report
    if (!plan) {
        by_key_.clear();
        general_ = problem_lines(plan.message());
        return plan.status();
    }
    if (plan->runs.empty()) return Status::error(path + ": the file makes no run");
    file_runs_ = std::move(plan->runs);
    file_path_ = path;
    chosen_ = 0;
    cfg_ = file_runs_.front().second;
    by_key_.clear();
    general_.clear();
    validate();
    return Status::ok();
}

void LayoutModel::choose_run(size_t i) {
    if (i >= file_runs_.size()) return;
    chosen_ = i;
    cfg_ = file_runs_[i].second;
    validate();
}

LayoutModel::SaveTarget LayoutModel::save_target(const std::string& path) {
    std::ifstream in(path);
    if (!in) return SaveTarget::kNew;
    std::string first;
    std::getline(in, first);
    return first == kEditorMark ? SaveTarget::kEditorFile : SaveTarget::kOtherFile;
}

Status LayoutModel::load_toml_text(const std::string& text, const std::string& source) {
    auto parsed = parse_config(text, source);
    by_key_.clear();
    general_.clear();
    if (!parsed) {
        // The problems are the file's, not the fields' on screen (those keep their values), so they
        // all go to the general list, each naming the file.
        general_ = problem_lines(parsed.message());
        return parsed.status();
    }
    cfg_ = std::move(parsed.value());
    file_runs_ = {{"", cfg_}};
    file_path_.clear();
    chosen_ = 0;
    validate();
    return Status::ok();
}

namespace {

bool write_all(int fd, const std::string& text) {
    for (size_t done = 0; done < text.size();) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return false;
        done += static_cast<size_t>(n);
    }
    return true;
}

}  // namespace

Status LayoutModel::save_file(const std::string& path) const {
    // A temp file in the same directory, then rename: a crash leaves the old file or the new one.
    std::string tmp = path + ".tmp-XXXXXX";
    const int fd = ::mkstemp(tmp.data());
    if (fd < 0) return Status::error("cannot write layout file " + path + ": " + std::strerror(errno));
    bool ok = write_all(fd, std::string(kEditorMark) + "\n" + tw::to_toml(cfg_)) && ::fchmod(fd, 0644) == 0 &&
              ::fsync(fd) == 0;
    int err = errno;
    if (::close(fd) != 0 && ok) ok = false, err = errno;
    if (ok && std::rename(tmp.c_str(), path.c_str()) == 0) return Status::ok();
    if (ok) err = errno;
    ::unlink(tmp.c_str());
    return Status::error("cannot write layout file " + path + ": " + std::strerror(err));
}

std::vector<const FieldInfo*> algorithm_fields(const RunConfig& cfg) {
    std::vector<const FieldInfo*> out;
    const auto algo = named_algorithm(cfg);
    if (!algo) return out;
    for (auto& f : config_fields())
        if (std::find(f.algorithms.begin(), f.algorithms.end(), *algo) != f.algorithms.end()) out.push_back(&f);
    return out;
}

}  // namespace tw::ui
