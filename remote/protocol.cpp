// Control protocol encoding; see protocol.h for the message set.
#include "remote/protocol.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <zmq.hpp>

namespace tw {
namespace {

constexpr const char* kKindNames[] = {"hello",  "capabilities", "configure", "start",     "pause",
                                      "resume", "stop",         "status",    "heartbeat", "shutdown",
                                      "ok",     "error",        "metrics",   "event",     "done"};
constexpr size_t kKinds = sizeof(kKindNames) / sizeof(kKindNames[0]);

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
    nlohmann::json h = nlohmann::json::parse(static_cast<const char*>(frames[0].data()),
                                             static_cast<const char*>(frames[0].data()) + frames[0].size(), nullptr,
                                             /*allow_exceptions=*/false);
    if (h.is_discarded()) return R::error("malformed header: not valid JSON");
    if (!h.is_object()) return R::error("malformed header: not a JSON object");
    if (!h.contains("kind") || !h["kind"].is_string()) return R::error("malformed header: no string \"kind\"");
    if (!h.contains("v") || !h["v"].is_number_integer())
        return R::error("malformed header: no integer protocol version \"v\"");
    const auto kind = parse_msg_kind(h["kind"].get<std::string>());
    if (!kind) return R::error("unknown message kind \"" + h["kind"].get<std::string>() + "\"");
    if (h["v"].get<int64_t>() != kProtocolVersion)
        return R::error("protocol version " + std::to_string(h["v"].get<int64_t>()) + " is not supported (this node speaks " +
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
            {"kind", r.kind},
            {"replica", r.replica},
            {"replicas", r.replicas},
            {"rank", r.rank},
            {"replica_nodes", r.replica_nodes},
            {"stage", r.stage},
            {"mesh_endpoints", r.mesh_endpoints},
            {"mesh_rank", r.mesh_rank},
            {"mesh_keys", r.mesh_keys},
            {"mesh_token", token_to_hex(r.mesh_token)},
            {"grad_group",
             {{"host", r.grad_group.host}, {"port", r.grad_group.port}, {"rank", r.grad_group.rank},
              {"size", r.grad_group.size}, {"keys", r.grad_group.keys}}}};
}

Result<NodeRole> role_from_json(const nlohmann::json& j) {
    using R = Result<NodeRole>;
    if (!j.is_object()) return R::error("role: expected an object");
    NodeRole r;
    try {
        r.name = j.at("name").get<std::string>();
        r.kind = j.at("kind").get<std::string>();
        r.replica = j.at("replica").get<int>();
        r.replicas = j.at("replicas").get<int>();
        r.rank = j.at("rank").get<int>();
        r.replica_nodes = j.at("replica_nodes").get<int>();
        r.stage = j.at("stage").get<int>();
        r.mesh_endpoints = j.at("mesh_endpoints").get<std::vector<std::string>>();
        r.mesh_rank = j.at("mesh_rank").get<int>();
        r.mesh_keys = j.at("mesh_keys").get<std::vector<std::string>>();
        auto token = token_from_hex(j.at("mesh_token").get<std::string>());
        if (!token) return R::error("role: mesh_token: " + token.message());
        r.mesh_token = *token;
        const auto& g = j.at("grad_group");
        r.grad_group.keys = g.at("keys").get<std::vector<std::string>>();
        r.grad_group.host = g.at("host").get<std::string>();
        r.grad_group.port = g.at("port").get<int>();
        r.grad_group.rank = g.at("rank").get<int>();
        r.grad_group.size = g.at("size").get<int>();
    } catch (const nlohmann::json::exception& e) {
        return R::error(std::string("role: ") + e.what());
    }
    if (r.replicas < 1 || r.replica < 0 || r.replica >= r.replicas || r.replica_nodes < 1 || r.rank < 0 ||
        r.rank >= r.replica_nodes || r.mesh_rank >= static_cast<int>(r.mesh_endpoints.size()) ||
        r.grad_group.size < 1 || r.grad_group.rank < 0 || r.grad_group.rank >= r.grad_group.size)
        return R::error("role: indices out of range for " + r.name);
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
    for (auto& row : rows) {
        if (!row.is_array() || row.size() != 6 || !row[4].is_string())
            return R::error("metrics: a row is not [step, outer_step, wall_s, sim_s, name, value]");
        MetricRecord m;
        m.node = node;
        try {
            m.step = row[0].get<int64_t>();
            m.outer_step = row[1].get<int64_t>();
            m.wall_s = row[2].get<double>();
            m.sim_s = row[3].get<double>();
            m.name = row[4].get<std::string>();
            // JSON has no NaN: a NaN value travels as null.
            m.value = row[5].is_null() ? NAN : row[5].get<double>();
        } catch (const nlohmann::json::exception& e) {
            return R::error(std::string("metrics: ") + e.what());
        }
        out.push_back(std::move(m));
    }
    return out;
}

}  // namespace tw
