// The node control protocol (docs/architecture.md §2): coordinator DEALER → node ROUTER for
// commands and replies, node PUB → coordinator SUB for heartbeats, metrics, events and the end.
//
// Wire: a message is one header frame, a JSON object {"v": kProtocolVersion, "kind": "...", ...},
// followed by zero or more binary frames (tensors travel there, never inside the JSON). A header
// over kMaxHeaderBytes or a message over the receiver's limit is refused unread, and so is a header
// nested deeper than kMaxHeaderDepth arrays/objects (checked by a linear scan before parsing); a
// header that is not a JSON object, has no string "kind", names an unknown kind or another version
// is answered with an `error` message naming the problem, and the receiver keeps serving.
//
// Requests carry an integer "id" that the reply echoes. Commands (coordinator → node):
//   hello                      → capabilities {node_version, protocol, threads, memory_bytes, device, host, pid, state}
//   prepare {config_toml}      → prepared {vocab_size, fingerprint, unigram_loss, log: [lines]} | error
//                                (the node prepares or finds the run's data under its data root;
//                                refused while a run is active; answered after the preparation)
//   configure {role, config_toml, heartbeat_s, heartbeat_timeout_s} → ok | error
//   start | pause | resume | stop | shutdown                          → ok | error
//   status                     → status {state, step, name}
//   heartbeat                  (no reply; the node stops its worker if these cease while it runs)
// Stream (node → coordinator, on PUB):
//   heartbeat {name, state, step}, metrics {name, rows: [[step, outer_step, wall_s, sim_s, name, value], ...]},
//   event {name, wall_s, level, event (its kind), text}, done {name, ok, error, summary: {figure: value}},
//   scores {name, seq_len, sets: [[eval_windows, prior_windows, eval_docs, prior_docs], ...], unigram,
//           train_tokens} + one binary frame: an HDEE expert's per-token log-probabilities of the
//           shared evaluation documents (core/hdee_mixture.h ExpertScores), fp32 little-endian,
//           sent once after training and before its `done`
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/hdee_mixture.h"
#include "core/metrics.h"
#include "core/role.h"
#include "core/status.h"
#include "core/worker.h"

namespace zmq { class message_t; }

namespace tw {

inline constexpr int kProtocolVersion = 1;
inline constexpr size_t kMaxHeaderBytes = 4u << 20;     // the resolved config travels in configure
inline constexpr size_t kMaxMessageBytes = 256u << 20;  // header plus binary frames
// Array/object levels a header may nest; the deepest real message (configure → role → grad_group
// → keys) has 4. Copying, comparing and dumping JSON recurse once per level.
inline constexpr size_t kMaxHeaderDepth = 32;
// Role limits (role_from_json): a node name's length, a mesh's members (data-plane ranks are 16
// bits) and an endpoint's length, in characters.
inline constexpr size_t kMaxRoleNameChars = 64;
inline constexpr int kMaxMeshMembers = 65535;
inline constexpr size_t kMaxEndpointChars = 256;

// Values are stable: they name the message on the wire.
enum class MsgKind : uint8_t {
    kHello = 0, kCapabilities = 1, kConfigure = 2, kStart = 3, kPause = 4, kResume = 5, kStop = 6,
    kStatus = 7, kHeartbeat = 8, kShutdown = 9, kOk = 10, kError = 11, kMetrics = 12, kEvent = 13, kDone = 14,
    kPrepare = 15, kPrepared = 16, kScores = 17, kModel = 18,
};
const char* to_string(MsgKind k);
std::optional<MsgKind> parse_msg_kind(const std::string& s);

struct Message {
    MsgKind kind = MsgKind::kOk;
    nlohmann::json body = nlohmann::json::object();  // fields besides "v" and "kind"
    std::vector<std::vector<uint8_t>> blobs;           // binary frames after the header
};

// Frames of a message: the header (body + "v" + "kind"), then the blobs.
std::vector<zmq::message_t> encode(const Message& m);
// Parses the frames of one message; the error names what is wrong (size, JSON, kind, version).
Result<Message> decode(const std::vector<zmq::message_t>& frames, size_t max_bytes = kMaxMessageBytes);

Message make_error(const std::string& text, const nlohmann::json& id = nullptr);

// 64 bits from the system's random source: run tokens and data-plane tokens.
uint64_t random_token();
// A 64-bit token as 16 lower-case hex digits (JSON numbers lose bits above 2⁵³).
std::string token_to_hex(uint64_t v);
Result<uint64_t> token_from_hex(const std::string& s);

// Role and metric rows as JSON; from_json errors name the missing, mistyped or out-of-range field.
nlohmann::json role_to_json(const NodeRole& r);
// Every field is checked before use: name 1..kMaxRoleNameChars of [A-Za-z0-9._-]; kind "full",
// "pipeline" or "expert" (then "expert": {ensemble < 3, domain < kMaxHdeeDomains, d_ff ≥ 0, steps ≥ 1}); replicas and replica_nodes ≥ 1 with replicas × replica_nodes ≤ kMaxMeshMembers;
// replica, rank and stage (-1 = none) inside those; mesh_endpoints ≤ kMaxMeshMembers strings of ≤
// kMaxEndpointChars starting inproc://, ipc:// or tcp://; mesh_rank in [-1, endpoints); mesh_keys
// none or one Z85 key per endpoint; mesh_token 16 lower-case hex digits; mesh_relayed absent or
// ascending ranks of tcp:// members, with mesh_keys; data_fingerprint absent,
// "" or TOKENIZER:TRAIN:VAL (core/data_fingerprint.h); grad_group {host ≤ 253 chars, port
// 0..65535, size ≥ 1, rank < size, keys none or `size` Z85 keys}; checkpoint_run absent, "" or a
// plain word of [A-Za-z0-9._-] (not dots alone), resume_step absent or ≥ -1 (≥ 0 needs checkpoint_run).
Result<NodeRole> role_from_json(const nlohmann::json& j);
nlohmann::json metric_rows(const std::vector<MetricRecord>& records);

// Domains an HDEE run may have (role.expert_domain and the sets of a scores message).
inline constexpr size_t kMaxHdeeDomains = 4096;
// The `scores` message of node `node` (MsgKind::kScores): the shape in the header, the
// log-probabilities as one frame of s.logp.size() fp32 values.
Message scores_message(const std::string& node, const ExpertScores& s);
// Parses a `scores` message. Refused, with the reason: a header field missing, mistyped or out of
// range (seq_len 1..2^20, ≤ kMaxHdeeDomains sets of four integers in 0..2^40, unigram a number,
// train_tokens ≥ 0), not exactly one binary frame, or a frame whose size is not 4 × the values the
// shape says. Values themselves (finite, ≤ 0) and the shape against the run are core's
// check_scores.
Result<ExpertScores> scores_from_message(const Message& m);
// The `model` message of node `node` (MsgKind::kModel): one part of the run's final model
// (core/final_model.h), its fields in the header and its bytes as one binary frame.
Message model_message(const std::string& node, const FinalModelPart& p);
// Parses a `model` message. Refused, with the reason: a name that is not 1..128 characters of
// [A-Za-z0-9._-], "file" not a boolean, a shape of more than 4 dimensions or one outside
// 1..2^40 (files: none), offset or total not integers, a total over 2^44 bytes (a tensor's: not
// 4 × its shape's elements; a file's: over kFinalModelFileMaxBytes), not exactly one binary frame,
// or a frame that is empty, longer than kFinalModelPartBytes or reaches past the total. Whether
// the part belongs to the run's model is coordinator/final_model_assembly.h's check.
Result<FinalModelPart> model_part_from_message(const Message& m);
// The `prepared` answer to a prepare request (MsgKind::kPrepared): the data a node built.
Message prepared_message(const DataReport& r);
// Parses a `prepared` answer. Refused, with the reason: another kind, or vocab_size not an
// integer, fingerprint not a string or unigram_loss not a number. Log lines that are not strings
// are left out.
Result<DataReport> data_report_from_message(const Message& m);
// Rows are [integer step, integer outer_step, number wall_s, number sim_s, string name, number or
// null value]; the error names the row and column.
Result<std::vector<MetricRecord>> metrics_from_rows(const nlohmann::json& rows, const std::string& node);

}  // namespace tw
