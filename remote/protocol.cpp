// Control protocol encoding; see protocol.h for the message set.
#include "remote/protocol.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <random>
#include <cstring>
#include <zmq.hpp>

#include "core/data_fingerprint.h"
#include "remote/curve.h"

namespace tw {
namespace {

constexpr const char* kKindNames[] = {"hello",  "capabilities", "configure", "start",     "pause",
                                      "resume", "stop",         "status",    "heartbeat", "shutdown",
                                      "ok",     "error",        "metrics",   "event",     "done",
                                      "prepare", "prepared", "scores", "model"};
constexpr size_t kKinds = sizeof(kKindNames) / sizeof(kKindNames[0]);

// The deepest array/object nesting of `text` outside JSON strings (a `\` inside a string escapes
// the next byte). One linear pass with no recursion, so it is safe on any input; on invalid JSON
// it may overcount, which only turns a "not valid JSON" error into a nesting one.
size_t max_nesting(const char* text, size_t n) {
    size_t depth = 0, deepest = 0;
    bool in_string = false;
    for (size_t i = 0; i < n; ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') ++i;  // skips the escaped byte, `"` included
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            deepest = std::max(deepest, ++depth);
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return deepest;
}

}  // namespace

const char* to_string(MsgKind k) {
    const auto i = static_cast<size_t>(k);
    return i < kKinds ? kKindNames[i] : "unknown";
}

std::optional<MsgKind> parse_msg_kind(const std::string& s) {
    for (size_t i = 0; i < kKinds; ++i)
        if (s == kKindNames[i]) return static_cast<MsgKind>(i);
    return std::nullopt;
}

std::vector<zmq::message_t> encode(const Message& m) {
    nlohmann::json h = m.body.is_object() ? m.body : nlohmann::json::object();
    h["v"] = kProtocolVersion;
    h["kind"] = to_string(m.kind);
    const std::string text = h.dump();
    std::vector<zmq::message_t> frames;
    frames.emplace_back(text.data(), text.size());
    for (auto& b : m.blobs) frames.emplace_back(b.data(), b.size());
    return frames;
}

Result<Message> decode(const std::vector<zmq::message_t>& frames, size_t max_bytes) {
    using R = Result<Message>;
    if (frames.empty()) return R::error("empty message (no header frame)");
    size_t total = 0;
    for (auto& f : frames) total += f.size();
    if (total > max_bytes)
        return R::error("message of " + std::to_string(total) + " bytes exceeds the limit of " +
                        std::to_string(max_bytes) + " bytes");
    if (frames[0].size() > kMaxHeaderBytes)
        return R::error("header of " + std::to_string(frames[0].size()) + " bytes exceeds the limit of " +
                        std::to_string(kMaxHeaderBytes) + " bytes");
    const char* text = static_cast<const char*>(frames[0].data());
    // nlohmann parses iteratively, but copying, comparing and dumping a value recurse once per
    // level: a deeply nested header would overflow the stack of whoever touches it later.
    if (max_nesting(text, frames[0].size()) > kMaxHeaderDepth)
        return R::error("malformed header: nested deeper than " + std::to_string(kMaxHeaderDepth) + " levels");
    nlohmann::json h = nlohmann::json::parse(text, text + frames[0].size(), nullptr, /*allow_exceptions=*/false);
    if (h.is_discarded()) return R::error("malformed header: not valid JSON");
    if (!h.is_object()) return R::error("malformed header: not a JSON object");
    if (!h.contains("kind") || !h["kind"].is_string()) return R::error("malformed header: no string \"kind\"");
    if (!h.contains("v") || !h["v"].is_number_integer())
        return R::error("malformed header: no integer protocol version \"v\"");
    const auto kind = parse_msg_kind(h["kind"].get<std::string>());
    if (!kind) return R::error("unknown message kind \"" + h["kind"].get<std::string>() + "\"");
    if (h["v"].get<int64_t>() != kProtocolVersion)
        return R::error("protocol version " + h["v"].dump() + " is not supported (this node speaks " +
                        std::to_string(kProtocolVersion) + ")");
    Message m;
    m.kind = *kind;
    h.erase("v");
    h.erase("kind");
    m.body = std::move(h);
    for (size_t i = 1; i < frames.size(); ++i) {
        const auto* p = static_cast<const uint8_t*>(frames[i].data());
        m.blobs.emplace_back(p, p + frames[i].size());
    }
    return m;
}

Message make_error(const std::string& text, const nlohmann::json& id) {
    Message m;
    m.kind = MsgKind::kError;
    m.body["error"] = text;
    if (!id.is_null()) m.body["id"] = id;
    return m;
}

uint64_t random_token() {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

std::string token_to_hex(uint64_t v) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
    return buf;
}

Result<uint64_t> token_from_hex(const std::string& s) {
    if (s.size() != 16) return Result<uint64_t>::error("expected 16 hex digits");
    uint64_t v = 0;
    for (char c : s) {
        int d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else return Result<uint64_t>::error("expected 16 lower-case hex digits");
        v = v << 4 | static_cast<uint64_t>(d);
    }
    return v;
}

nlohmann::json role_to_json(const NodeRole& r) {
    return {{"name", r.name},
            {"kind", to_string(r.kind)},
            {"replica", r.replica},
            {"replicas", r.replicas},
            {"rank", r.rank},
            {"replica_nodes", r.replica_nodes},
            {"stage", r.stage},
            {"mesh_endpoints", r.mesh_endpoints},
            {"mesh_rank", r.mesh_rank},
            {"mesh_keys", r.mesh_keys},
            {"mesh_token", token_to_hex(r.mesh_token)},
            {"mesh_relayed", r.mesh_relayed},
            {"hub_endpoint", r.hub_endpoint},
            {"hub_key", r.hub_key},
            {"data_fingerprint", r.data_fingerprint},
            {"checkpoint_run", r.checkpoint_run},
            {"resume_step", r.resume_step},
            {"rejoin_step", r.rejoin_step},
            {"rejoin_origin_step", r.rejoin_origin_step},
            {"rejoin_live_from", r.rejoin_live_from},
            {"rejoin_tokens", r.rejoin_tokens},
            {"rejoin_wall_ms", r.rejoin_wall_ms},
            {"rejoin_sent_unix_ms", r.rejoin_sent_unix_ms},
            {"expert",
             {{"ensemble", r.expert_ensemble}, {"domain", r.expert_domain}, {"d_ff", r.expert_d_ff},
              {"steps", r.expert_steps}}},
            {"grad_group",
             {{"host", r.grad_group.host}, {"port", r.grad_group.port}, {"rank", r.grad_group.rank},
              {"size", r.grad_group.size}, {"keys", r.grad_group.keys}}}};
}

namespace {

// Field readers for role_from_json: every value is type- and range-checked before use, and the
// error names the field by its path ("grad_group.port"). nlohmann's get<int>() would silently
// truncate a double or wrap an out-of-range integer, so integers are checked explicitly.
Result<int64_t> int64_field(const nlohmann::json& obj, const char* key, const std::string& path, int64_t lo, int64_t hi) {
    using R = Result<int64_t>;
    const auto it = obj.find(key);
    if (it == obj.end()) return R::error("role: no \"" + path + "\"");
    const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    if (!it->is_number_integer()) return R::error("role: \"" + path + "\" must be an integer in " + range);
    // An unsigned value above INT64_MAX is out of every range this protocol uses.
    const bool huge = it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX);
    const int64_t v = huge ? INT64_MAX : it->get<int64_t>();
    if (huge || v < lo || v > hi)
        return R::error("role: \"" + path + "\" must be an integer in " + range + " (got " + it->dump() + ")");
    return v;
}
// The same for int fields (ranges within int's).
Result<int> int_field(const nlohmann::json& obj, const char* key, const std::string& path, int64_t lo, int64_t hi) {
    auto v = int64_field(obj, key, path, lo, hi);
    if (!v) return v.status();
    return static_cast<int>(*v);
}

Result<std::string> string_field(const nlohmann::json& obj, const char* key, const std::string& path, size_t max_chars) {
    using R = Result<std::string>;
    const auto it = obj.find(key);
    if (it == obj.end()) return R::error("role: no \"" + path + "\"");
    if (!it->is_string()) return R::error("role: \"" + path + "\" must be a string");
    std::string s = it->get<std::string>();
    if (s.size() > max_chars)
        return R::error("role: \"" + path + "\" is " + std::to_string(s.size()) + " characters long (at most " +
                        std::to_string(max_chars) + ")");
    return s;
}

// An array of strings, each at most `max_chars` long.
Result<std::vector<std::string>> strings_field(const nlohmann::json& obj, const char* key, const std::string& path,
                                               size_t max_entries, size_t max_chars) {
    using R = Result<std::vector<std::string>>;
    const auto it = obj.find(key);
    if (it == obj.end()) return R::error("role: no \"" + path + "\"");
    if (!it->is_array()) return R::error("role: \"" + path + "\" must be an array of strings");
    if (it->size() > max_entries)
        return R::error("role: \"" + path + "\" has " + std::to_string(it->size()) + " entries (at most " +
                        std::to_string(max_entries) + ")");
    std::vector<std::string> out;
    out.reserve(it->size());
    for (size_t i = 0; i < it->size(); ++i) {
        const auto& e = (*it)[i];
        const std::string at = path + "[" + std::to_string(i) + "]";
        if (!e.is_string()) return R::error("role: \"" + at + "\" must be a string");
        if (e.get_ref<const std::string&>().size() > max_chars)
            return R::error("role: \"" + at + "\" is longer than " + std::to_string(max_chars) + " characters");
        out.push_back(e.get<std::string>());
    }
    return out;
}

// Public keys: none (a run without CurveZMQ) or exactly one Z85 key per member.
Status check_keys(const std::vector<std::string>& keys, size_t members, const std::string& path) {
    if (!keys.empty() && keys.size() != members)
        return Status::error("role: \"" + path + "\" has " + std::to_string(keys.size()) + " keys for " +
                             std::to_string(members) + " members (expected none or one each)");
    for (size_t i = 0; i < keys.size(); ++i)
        if (!is_z85_key(keys[i]))
            return Status::error("role: \"" + path + "[" + std::to_string(i) + "]\" is not a 40-character Z85 key");
    return Status::ok();
}

bool is_name_char(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
}

}  // namespace

Result<NodeRole> role_from_json(const nlohmann::json& j) {
    using R = Result<NodeRole>;
    if (!j.is_object()) return R::error("role: expected an object");
    NodeRole r;
// Unwraps a field reader's result into `dst`, or returns its error from role_from_json.
#define TW_ROLE_FIELD(dst, expr)                          \
    do {                                                  \
        auto field_ = (expr);                             \
        if (!field_) return R::error(field_.message());   \
        dst = std::move(*field_);                         \
    } while (0)

    // The name becomes MetricRecord::node, log prefixes and run-store keys: a short plain word.
    TW_ROLE_FIELD(r.name, string_field(j, "name", "name", kMaxRoleNameChars));
    if (r.name.empty()) return R::error("role: \"name\" is empty");
    if (!std::all_of(r.name.begin(), r.name.end(), is_name_char))
        return R::error("role: \"name\" may hold only letters, digits, '.', '_' and '-'");
    std::string kind;
    TW_ROLE_FIELD(kind, string_field(j, "kind", "kind", 16));
    const auto parsed_kind = parse_node_kind(kind);
    if (!parsed_kind)
        return R::error("role: \"kind\" must be \"full\", \"pipeline\", \"skippipe\", \"expert\" or \"spare\" (got \"" +
                        kind + "\")");
    r.kind = *parsed_kind;
    if (r.kind == NodeKind::kExpert) {
        // An HDEE expert's place in the plan (absent for the other kinds, which ignore it).
        const auto x = j.find("expert");
        if (x == j.end() || !x->is_object()) return R::error("role: an expert needs an \"expert\" object");
        TW_ROLE_FIELD(r.expert_ensemble, int_field(*x, "ensemble", "expert.ensemble", 0, 2));
        TW_ROLE_FIELD(r.expert_domain, int_field(*x, "domain", "expert.domain", 0, kMaxHdeeDomains - 1));
        TW_ROLE_FIELD(r.expert_d_ff, int_field(*x, "d_ff", "expert.d_ff", 0, 1 << 20));
        TW_ROLE_FIELD(r.expert_steps, int_field(*x, "steps", "expert.steps", 1, INT32_MAX));
    }

    TW_ROLE_FIELD(r.replicas, int_field(j, "replicas", "replicas", 1, kMaxMeshMembers));
    TW_ROLE_FIELD(r.replica, int_field(j, "replica", "replica", 0, r.replicas - 1));
    TW_ROLE_FIELD(r.replica_nodes, int_field(j, "replica_nodes", "replica_nodes", 1, kMaxMeshMembers));
    // world() and global_rank() multiply these in int; a data-plane rank is 16 bits anyway.
    if (static_cast<int64_t>(r.replicas) * r.replica_nodes > kMaxMeshMembers)
        return R::error("role: \"replicas\" × \"replica_nodes\" = " +
                        std::to_string(static_cast<int64_t>(r.replicas) * r.replica_nodes) + " nodes (at most " +
                        std::to_string(kMaxMeshMembers) + ")");
    TW_ROLE_FIELD(r.rank, int_field(j, "rank", "rank", 0, r.replica_nodes - 1));
    // -1: a full replica; otherwise the pipeline stage, one node per stage.
    TW_ROLE_FIELD(r.stage, int_field(j, "stage", "stage", -1, r.replica_nodes - 1));

    TW_ROLE_FIELD(r.mesh_endpoints,
                  strings_field(j, "mesh_endpoints", "mesh_endpoints", kMaxMeshMembers, kMaxEndpointChars));
    for (size_t i = 0; i < r.mesh_endpoints.size(); ++i) {
        const auto& ep = r.mesh_endpoints[i];
        if (ep.rfind("inproc://", 0) != 0 && ep.rfind("ipc://", 0) != 0 && ep.rfind("tcp://", 0) != 0)
            return R::error("role: \"mesh_endpoints[" + std::to_string(i) +
                            "]\" must start with inproc://, ipc:// or tcp://");
    }
    const auto members = static_cast<int64_t>(r.mesh_endpoints.size());
    TW_ROLE_FIELD(r.mesh_rank, int_field(j, "mesh_rank", "mesh_rank", -1, members - 1));
    TW_ROLE_FIELD(r.mesh_keys, strings_field(j, "mesh_keys", "mesh_keys", kMaxMeshMembers, kZ85KeyChars));
    if (auto s = check_keys(r.mesh_keys, r.mesh_endpoints.size(), "mesh_keys"); !s) return R::error(s.message());
    std::string token_hex;
    TW_ROLE_FIELD(token_hex, string_field(j, "mesh_token", "mesh_token", 16));
    auto token = token_from_hex(token_hex);
    if (!token) return R::error("role: \"mesh_token\": " + token.message());
    r.mesh_token = *token;
    // Optional (absent = none): mesh ranks that joined a relay, ascending, each a member, and only
    // in a keyed tcp:// mesh (a relayed member is dialled through the relay and dials the others).
    if (j.contains("mesh_relayed")) {
        const auto& a = j["mesh_relayed"];
        if (!a.is_array() || a.size() > r.mesh_endpoints.size())
            return R::error("role: \"mesh_relayed\" must be an array of at most as many ranks as mesh_endpoints");
        for (size_t i = 0; i < a.size(); ++i) {
            const std::string at = "mesh_relayed[" + std::to_string(i) + "]";
            if (!a[i].is_number_integer()) return R::error("role: \"" + at + "\" must be an integer");
            const int64_t v = a[i].get<int64_t>();
            if (v < 0 || v >= members || (i > 0 && v <= r.mesh_relayed.back()))
                return R::error("role: \"" + at + "\" must be a mesh rank below " + std::to_string(members) +
                                ", above the one before it");
            const auto& ep = r.mesh_endpoints[static_cast<size_t>(v)];
            if (ep.rfind("tcp://", 0) != 0) return R::error("role: \"" + at + "\" names a member at " + ep + ", not tcp://");
            r.mesh_relayed.push_back(static_cast<int>(v));
        }
        if (!r.mesh_relayed.empty() && r.mesh_keys.empty())
            return R::error("role: \"mesh_relayed\" needs \"mesh_keys\": a relayed mesh is keyed");
    }
    // Optional (absent = "" = no relay): the hub topology's relay.
    if (j.contains("hub_endpoint")) {
        TW_ROLE_FIELD(r.hub_endpoint, string_field(j, "hub_endpoint", "hub_endpoint", kMaxEndpointChars));
        const auto& ep = r.hub_endpoint;
        if (!ep.empty() && ep.rfind("inproc://", 0) != 0 && ep.rfind("ipc://", 0) != 0 && ep.rfind("tcp://", 0) != 0)
            return R::error("role: \"hub_endpoint\" must start with inproc://, ipc:// or tcp://");
        if (!ep.empty() && r.mesh_rank < 0) return R::error("role: \"hub_endpoint\" given to a node outside the mesh");
    }
    // Optional (absent = "" = no CURVE on the relay): the relay's public key.
    if (j.contains("hub_key")) {
        TW_ROLE_FIELD(r.hub_key, string_field(j, "hub_key", "hub_key", kZ85KeyChars));
        if (!r.hub_key.empty() && !is_z85_key(r.hub_key))
            return R::error("role: \"hub_key\" is not a 40-character Z85 key");
        if (!r.hub_key.empty() && r.hub_endpoint.empty())
            return R::error("role: \"hub_key\" given without a \"hub_endpoint\"");
    }
    // Optional (absent = "" = no check): "TOKENIZER:TRAIN:VAL" as core/data_fingerprint.h writes it.
    if (j.contains("data_fingerprint")) {
        TW_ROLE_FIELD(r.data_fingerprint,
                      string_field(j, "data_fingerprint", "data_fingerprint", kMaxFingerprintChars));
        if (!r.data_fingerprint.empty())
            if (auto f = parse_data_fingerprint(r.data_fingerprint); !f)
                return R::error("role: \"data_fingerprint\": " + f.message());
    }
    // Optional (absent = "" / -1): run-scoped checkpoints. The folder name becomes one path
    // component under the node's data root, so it is a plain word and never "." or "..".
    if (j.contains("checkpoint_run")) {
        TW_ROLE_FIELD(r.checkpoint_run, string_field(j, "checkpoint_run", "checkpoint_run", kMaxRoleNameChars));
        if (!std::all_of(r.checkpoint_run.begin(), r.checkpoint_run.end(), is_name_char) ||
            r.checkpoint_run.find_first_not_of('.') == std::string::npos)
            if (!r.checkpoint_run.empty())
                return R::error("role: \"checkpoint_run\" may hold only letters, digits, '.', '_' and '-' and not be dots alone");
    }
    if (j.contains("resume_step")) {
        TW_ROLE_FIELD(r.resume_step, int_field(j, "resume_step", "resume_step", -1, INT32_MAX));
        if (r.resume_step >= 0 && r.checkpoint_run.empty())
            return R::error("role: \"resume_step\" given without a \"checkpoint_run\"");
    }
    if (j.contains("rejoin_step")) {
        TW_ROLE_FIELD(r.rejoin_step, int_field(j, "rejoin_step", "rejoin_step", -1, INT32_MAX));
        if (r.rejoin_step >= 0 && r.resume_step >= 0)
            return R::error("role: \"rejoin_step\" and \"resume_step\" together (a node either rejoins a live run or resumes one)");
    }
    if (j.contains("rejoin_origin_step")) {
        TW_ROLE_FIELD(r.rejoin_origin_step, int_field(j, "rejoin_origin_step", "rejoin_origin_step", 0, INT32_MAX));
        if (r.rejoin_step >= 0 && r.rejoin_origin_step > r.rejoin_step)
            return R::error("role: \"rejoin_origin_step\" after \"rejoin_step\" (the run's transports start before a node rejoins)");
    }
    if (j.contains("rejoin_live_from")) {
        TW_ROLE_FIELD(r.rejoin_live_from, int64_field(j, "rejoin_live_from", "rejoin_live_from", -1, INT32_MAX));
        if (r.rejoin_live_from >= 0 && (r.rejoin_step >= 0 || r.resume_step >= 0))
            return R::error("role: \"rejoin_live_from\" with \"rejoin_step\" or \"resume_step\" (a restarted node rejoins when "
                            "its peers admit it, not at a step given in advance)");
        if (r.rejoin_live_from >= 0 && r.rejoin_origin_step > r.rejoin_live_from)
            return R::error("role: \"rejoin_origin_step\" after \"rejoin_live_from\" (the run's transports start before "
                            "a node restarts)");
    }
    if (j.contains("rejoin_tokens")) TW_ROLE_FIELD(r.rejoin_tokens, int64_field(j, "rejoin_tokens", "rejoin_tokens", 0, INT64_MAX));
    if (j.contains("rejoin_wall_ms"))  // at most a year
        TW_ROLE_FIELD(r.rejoin_wall_ms, int64_field(j, "rejoin_wall_ms", "rejoin_wall_ms", 0, int64_t{366} * 24 * 3600 * 1000));
    if (j.contains("rejoin_sent_unix_ms"))
        TW_ROLE_FIELD(r.rejoin_sent_unix_ms, int64_field(j, "rejoin_sent_unix_ms", "rejoin_sent_unix_ms", 0, INT64_MAX));

    const auto g = j.find("grad_group");
    if (g == j.end()) return R::error("role: no \"grad_group\"");
    if (!g->is_object()) return R::error("role: \"grad_group\" must be an object");
    GlooGroupSpec& gg = r.grad_group;
    TW_ROLE_FIELD(gg.host, string_field(*g, "host", "grad_group.host", 253));  // a DNS name's limit
    TW_ROLE_FIELD(gg.port, int_field(*g, "port", "grad_group.port", 0, 65535));
    TW_ROLE_FIELD(gg.size, int_field(*g, "size", "grad_group.size", 1, kMaxMeshMembers));
    TW_ROLE_FIELD(gg.rank, int_field(*g, "rank", "grad_group.rank", 0, gg.size - 1));
    TW_ROLE_FIELD(gg.keys, strings_field(*g, "keys", "grad_group.keys", kMaxMeshMembers, kZ85KeyChars));
    if (auto s = check_keys(gg.keys, static_cast<size_t>(gg.size), "grad_group.keys"); !s) return R::error(s.message());
#undef TW_ROLE_FIELD
    return r;
}

nlohmann::json metric_rows(const std::vector<MetricRecord>& records) {
    nlohmann::json rows = nlohmann::json::array();
    for (auto& m : records) rows.push_back({m.step, m.outer_step, m.wall_s, m.sim_s, m.name, m.value});
    return rows;
}

Result<std::vector<MetricRecord>> metrics_from_rows(const nlohmann::json& rows, const std::string& node) {
    using R = Result<std::vector<MetricRecord>>;
    if (!rows.is_array()) return R::error("metrics: \"rows\" is not an array");
    std::vector<MetricRecord> out;
    out.reserve(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
        const auto& row = rows[i];
        const std::string at = "metrics: row " + std::to_string(i);
        if (!row.is_array() || row.size() != 6)
            return R::error(at + " is not [step, outer_step, wall_s, sim_s, name, value]");
        // get<int64_t>() would truncate a double (and is undefined beyond int64's range) and wrap
        // an unsigned value above INT64_MAX: require integers that fit.
        for (int c : {0, 1})
            if (!row[c].is_number_integer() ||
                (row[c].is_number_unsigned() && row[c].get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)))
                return R::error(at + ": " + (c == 0 ? "step" : "outer_step") + " is not a 64-bit integer");
        if (!row[2].is_number() || !row[3].is_number()) return R::error(at + ": wall_s and sim_s must be numbers");
        if (!row[4].is_string()) return R::error(at + ": name is not a string");
        // JSON has no NaN: a NaN value travels as null.
        if (!row[5].is_number() && !row[5].is_null()) return R::error(at + ": value is not a number or null");
        MetricRecord m;
        m.node = node;
        m.step = row[0].get<int64_t>();
        m.outer_step = row[1].get<int64_t>();
        m.wall_s = row[2].get<double>();
        m.sim_s = row[3].get<double>();
        m.name = row[4].get<std::string>();
        m.value = row[5].is_null() ? NAN : row[5].get<double>();
        out.push_back(std::move(m));
    }
    return out;
}

Message scores_message(const std::string& node, const ExpertScores& s) {
    Message m;
    m.kind = MsgKind::kScores;
    nlohmann::json sets = nlohmann::json::array();
    for (const HdeeSetShape& x : s.sets) sets.push_back({x.eval_windows, x.prior_windows, x.eval_docs, x.prior_docs});
    m.body = {{"name", node}, {"seq_len", s.seq_len}, {"sets", sets}, {"unigram", s.unigram},
              {"train_tokens", s.train_tokens}};
    std::vector<uint8_t> frame(s.logp.size() * sizeof(float));
    if (!frame.empty()) std::memcpy(frame.data(), s.logp.data(), frame.size());  // little-endian hosts (x86, arm64)
    m.blobs.push_back(std::move(frame));
    return m;
}

Result<ExpertScores> scores_from_message(const Message& m) {
    using R = Result<ExpertScores>;
    const auto& b = m.body;
    // A non-negative integer no larger than `hi`, or an error naming the field.
    auto integer = [](const nlohmann::json& v, int64_t hi, int64_t& out) {
        if (!v.is_number_integer()) return false;
        if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi)) return false;
        out = v.get<int64_t>();
        return out >= 0 && out <= hi;
    };
    ExpertScores s;
    if (!b.contains("seq_len") || !integer(b["seq_len"], int64_t{1} << 20, s.seq_len) || s.seq_len < 1)
        return R::error("scores: \"seq_len\" must be an integer in [1, 1048576]");
    if (!b.contains("sets") || !b["sets"].is_array() || b["sets"].size() > kMaxHdeeDomains)
        return R::error("scores: \"sets\" must be an array of at most " + std::to_string(kMaxHdeeDomains) + " domains");
    constexpr int64_t kMaxCount = int64_t{1} << 40;
    for (size_t d = 0; d < b["sets"].size(); ++d) {
        const auto& x = b["sets"][d];
        HdeeSetShape shape;
        if (!x.is_array() || x.size() != 4 || !integer(x[0], kMaxCount, shape.eval_windows) ||
            !integer(x[1], kMaxCount, shape.prior_windows) || !integer(x[2], kMaxCount, shape.eval_docs) ||
            !integer(x[3], kMaxCount, shape.prior_docs))
            return R::error("scores: \"sets[" + std::to_string(d) +
                            "]\" must be [eval_windows, prior_windows, eval_docs, prior_docs], integers in [0, 2^40]");
        s.sets.push_back(shape);
    }
    if (!b.contains("unigram") || !b["unigram"].is_number()) return R::error("scores: \"unigram\" must be a number");
    s.unigram = b["unigram"].get<double>();
    if (!b.contains("train_tokens") || !integer(b["train_tokens"], kMaxCount, s.train_tokens))
        return R::error("scores: \"train_tokens\" must be an integer in [0, 2^40]");
    if (m.blobs.size() != 1)
        return R::error("scores: expected one binary frame of log-probabilities, got " + std::to_string(m.blobs.size()));
    // More windows than a message has bytes cannot fit; below that, windows · seq_len · 4 < 2^50
    // cannot overflow.
    int64_t windows = 0;
    for (const HdeeSetShape& x : s.sets) windows += x.eval_windows + x.prior_windows;
    const size_t bytes = m.blobs[0].size();
    if (windows > static_cast<int64_t>(kMaxMessageBytes) ||
        static_cast<uint64_t>(windows) * static_cast<uint64_t>(s.seq_len) * sizeof(float) != bytes)
        return R::error("scores: a frame of " + std::to_string(bytes) + " bytes for " + std::to_string(windows) +
                        " windows of " + std::to_string(s.seq_len) + " tokens (expected 4 bytes per token)");
    s.logp.resize(bytes / sizeof(float));
    if (bytes > 0) std::memcpy(s.logp.data(), m.blobs[0].data(), bytes);
    return s;
}

Message model_message(const std::string& node, const FinalModelPart& p) {
    Message m;
    m.kind = MsgKind::kModel;
    m.body = {{"name", node}, {"part", p.name}, {"file", p.file}, {"shape", p.shape}, {"offset", p.offset},
              {"total", p.total}};
    m.blobs.push_back(p.bytes);
    return m;
}

Result<FinalModelPart> model_part_from_message(const Message& m) {
    using R = Result<FinalModelPart>;
    const auto& b = m.body;
    FinalModelPart p;
    const auto word = [](const nlohmann::json& v) {
        if (!v.is_string()) return false;
        const std::string& s = v.get_ref<const std::string&>();
        if (s.empty() || s.size() > 128) return false;
        for (char c : s)
            if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) return false;
        return s.find_first_not_of('.') != std::string::npos;
    };
    constexpr uint64_t kMaxTotal = uint64_t{1} << 44;
    const auto count = [](const nlohmann::json& v, uint64_t hi, uint64_t& out) {
        if (!v.is_number_integer()) return false;
        if (!v.is_number_unsigned() && v.get<int64_t>() < 0) return false;
        out = v.get<uint64_t>();
        return out <= hi;
    };
    if (!b.contains("part") || !word(b["part"]))
        return R::error("model: \"part\" must be a name of 1..128 characters of [A-Za-z0-9._-]");
    p.name = b["part"].get<std::string>();
    if (!b.contains("file") || !b["file"].is_boolean()) return R::error("model: \"file\" must be true or false");
    p.file = b["file"].get<bool>();
    if (!b.contains("shape") || !b["shape"].is_array() || b["shape"].size() > 4 || (p.file && !b["shape"].empty()))
        return R::error(p.file ? "model: a file part has no shape" : "model: \"shape\" must be an array of at most 4 dimensions");
    uint64_t elements = 1;
    for (const auto& d : b["shape"]) {
        uint64_t n = 0;
        if (!count(d, uint64_t{1} << 40, n) || n == 0) return R::error("model: a dimension of \"shape\" is not an integer in [1, 2^40]");
        if (elements > kMaxTotal / n) return R::error("model: \"shape\" holds more than 2^44 elements");
        elements *= n;
        p.shape.push_back(static_cast<int64_t>(n));
    }
    if (!p.file && p.shape.empty()) return R::error("model: a tensor part needs its shape");
    if (!b.contains("offset") || !count(b["offset"], kMaxTotal, p.offset))
        return R::error("model: \"offset\" must be an integer in [0, 2^44]");
    if (!b.contains("total") || !count(b["total"], kMaxTotal, p.total))
        return R::error("model: \"total\" must be an integer in [0, 2^44]");
    if (p.file ? p.total > kFinalModelFileMaxBytes : p.total != elements * sizeof(float))
        return R::error(p.file ? "model: file " + p.name + " of " + std::to_string(p.total) + " bytes (at most " +
                                     std::to_string(kFinalModelFileMaxBytes) + ")"
                               : "model: tensor " + p.name + " of " + std::to_string(p.total) +
                                     " bytes for its shape (expected 4 bytes per element)");
    if (m.blobs.size() != 1) return R::error("model: expected one binary frame, got " + std::to_string(m.blobs.size()));
    const uint64_t n = m.blobs[0].size();
    if ((n == 0 && p.total > 0) || n > kFinalModelPartBytes || p.offset > p.total || n > p.total - p.offset)
        return R::error("model: a frame of " + std::to_string(n) + " bytes at offset " + std::to_string(p.offset) +
                        " of " + p.name + " (" + std::to_string(p.total) + " bytes in all)");
    p.bytes = m.blobs[0];
    return p;
}

Message prepared_message(const DataReport& r) {
    Message m;
    m.kind = MsgKind::kPrepared;
    m.body = {{"vocab_size", r.vocab_size}, {"fingerprint", r.fingerprint}, {"unigram_loss", r.unigram_loss},
              {"log", r.log}};
    return m;
}

Result<DataReport> data_report_from_message(const Message& m) {
    const auto& b = m.body;
    if (m.kind != MsgKind::kPrepared || !b.contains("vocab_size") || !b["vocab_size"].is_number_integer() ||
        !b.contains("fingerprint") || !b["fingerprint"].is_string() || !b.contains("unigram_loss") ||
        !b["unigram_loss"].is_number())
        return Status::error("answered prepare without vocab_size, fingerprint and unigram_loss");
    DataReport out;
    out.vocab_size = b["vocab_size"].get<int64_t>();
    out.fingerprint = b["fingerprint"].get<std::string>();
    out.unigram_loss = b["unigram_loss"].get<double>();
    if (b.contains("log") && b["log"].is_array())
        for (auto& l : b["log"])
            if (l.is_string()) out.log.push_back(l.get<std::string>());
    return out;
}

}  // namespace tw
