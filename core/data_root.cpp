// Data root resolution and path confinement; see data_root.h.
#include "core/data_root.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>

#include <filesystem>
#include <system_error>
#include <vector>

namespace tw {

namespace fs = std::filesystem;

namespace {

struct PathKey {
    const char* key;
    std::string* value;
};

// Every path-valued key of RunConfig (core/config.h). A new one must be added here, or a configure
// could name any file through it.
std::vector<PathKey> path_keys(RunConfig& c) {
    return {{"data.corpus", &c.data.corpus},
            {"data.cache_dir", &c.data.cache_dir},
            {"data.train_shard", &c.data.train_shard},
            {"data.val_shard", &c.data.val_shard},
            {"train.ckpt_path", &c.train.ckpt_path}};
}

// True for values that name no file: the built-in corpus keyword and unset optional paths. An
// empty data.cache_dir is a path (the engine would write under "/data/...") and is refused later.
bool names_no_file(const PathKey& k) {
    const std::string key = k.key;
    if (key == "data.corpus" && *k.value == "brown") return true;
    return k.value->empty() && key != "data.cache_dir";
}

// Component-wise prefix test: "/a/bc" is not under "/a/b", "/a/b" is under itself.
bool is_within(const fs::path& p, const fs::path& root) {
    auto pi = p.begin();
    for (auto ri = root.begin(); ri != root.end(); ++ri, ++pi)
        if (pi == p.end() || *pi != *ri) return false;
    return true;
}

std::string in_quotes(const std::string& s) { return "\"" + s + "\""; }

// Resolves relative `rel` under canonical `root` one component at a time, as the kernel would:
// "." is skipped, ".." takes the parent, and an existing symbolic link is replaced by its
// canonical target. Every intermediate result must stay under the root, and a link must lead to
// something that exists (a dangling link could later be made to point anywhere); missing
// components are kept as written (the engine creates them, under the root). Returns the resolved absolute path, or why not
// (without revealing what a link points to: the caller may be a remote coordinator).
Result<fs::path> resolve_under(const fs::path& root, const std::string& key, const std::string& rel) {
    using R = Result<fs::path>;
    const std::string what = key + " = " + in_quotes(rel);
    if (rel.empty()) return R::error(what + ": an empty path (use \".\" for the data root itself)");
    const fs::path p(rel);
    if (p.has_root_directory() || p.has_root_name())
        return R::error(what + ": an absolute path; paths are relative to the node's data root");
    fs::path cur = root;
    for (const fs::path& c : p) {
        if (c.empty() || c == ".") continue;
        if (c == "..") {
            cur = cur.parent_path();
        } else {
            // Every component is looked at, even past a missing one: "missing/../link" reaches a link.
            cur /= c;
            std::error_code ec;
            const fs::file_status st = fs::symlink_status(cur, ec);
            if (st.type() != fs::file_type::not_found) {
                if (ec) return R::error(what + ": cannot be resolved (" + ec.message() + ")");
                if (fs::is_symlink(st)) {
                    cur = fs::canonical(cur, ec);
                    if (ec) return R::error(what + ": holds a symbolic link that leads nowhere (" + ec.message() + ")");
                }
            }
        }
        if (!is_within(cur, root)) return R::error(what + ": leaves the data root (through \"..\" or a symbolic link)");
    }
    return cur;
}

Result<fs::path> canonical_root(const std::string& root) {
    std::error_code ec;
    fs::path r = fs::canonical(root, ec);
    if (ec) return Result<fs::path>::error("data root " + root + ": " + ec.message());
    return r;
}

}  // namespace

Result<std::string> default_data_root() {
    using R = Result<std::string>;
    if (const char* own = std::getenv("THINWIRE_DATA_ROOT"); own && own[0] != '\0') return std::string(own);
    // XDG Base Directory: a relative XDG_CACHE_HOME is invalid and ignored.
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && xdg[0] == '/') return (fs::path(xdg) / "thinwire").string();
    const char* home = std::getenv("HOME");
    if (!home || home[0] != '/') {
        const passwd* pw = getpwuid(getuid());
        home = pw ? pw->pw_dir : nullptr;
    }
    if (!home || home[0] != '/')
        return R::error("data root: no home folder (HOME and XDG_CACHE_HOME unset); pass --data-root DIR");
    return (fs::path(home) / ".cache" / "thinwire").string();
}

Result<std::string> resolve_node_data_root(const std::string& given) {
    using R = Result<std::string>;
    fs::path p(given);
    if (given.empty()) {
        auto d = default_data_root();
        if (!d) return d;
        p = *d;
    }
    std::error_code ec;
    const bool existed = fs::exists(p, ec);
    fs::create_directories(p, ec);
    if (ec) return R::error("data root " + p.string() + ": cannot create it (" + ec.message() + ")");
    // Only the owner may enter a root this function made: files the engine writes in it derive
    // from private data. An existing root keeps the mode its operator gave it.
    if (!existed) fs::permissions(p, fs::perms::owner_all, fs::perm_options::replace, ec);
    const fs::path canon = fs::canonical(p, ec);
    if (ec) return R::error("data root " + p.string() + ": " + ec.message());
    if (!fs::is_directory(canon)) return R::error("data root " + canon.string() + " is not a directory");
    return canon.string();
}

Status confine_paths(RunConfig& cfg, const std::string& root) {
    auto r = canonical_root(root);
    if (!r) return r.status();
    for (PathKey& k : path_keys(cfg)) {
        if (names_no_file(k)) continue;
        auto resolved = resolve_under(*r, k.key, *k.value);
        if (!resolved) return resolved.status();
        *k.value = resolved->string();
    }
    return Status::ok();
}

Status relative_to_root(RunConfig& cfg, const std::string& root) {
    auto r = canonical_root(root);
    if (!r) return r.status();
    const std::string where = " (the data root is " + r->string() + "; thinwire run --data-root DIR sets it)";
    for (PathKey& k : path_keys(cfg)) {
        if (names_no_file(k)) continue;
        const fs::path p(*k.value);
        std::string rel = *k.value;
        if (p.is_absolute()) {
            // The operator's own absolute path: resolved through its links as this machine sees it.
            std::error_code ec;
            const fs::path canon = fs::weakly_canonical(p, ec);
            if (ec) return Status::error(std::string(k.key) + " = " + in_quotes(*k.value) + ": " + ec.message());
            if (!is_within(canon, *r))
                return Status::error(std::string(k.key) + " = " + in_quotes(*k.value) + ": outside the data root" + where);
            rel = canon.lexically_relative(*r).string();
            if (rel.empty()) rel = ".";
        }
        if (auto resolved = resolve_under(*r, k.key, rel); !resolved) return Status::error(resolved.message() + where);
        *k.value = rel;
    }
    return Status::ok();
}

}  // namespace tw
