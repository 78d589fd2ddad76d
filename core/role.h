// A node's role in a run: which replica it belongs to, its rank there, and where its peers listen.
// The coordinator derives roles from the layout (core/layout.h); a node receives its own in the
// `configure` message (remote/protocol.h) and hands it to the engine's worker.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tw {

// What a node does in its run. Its name (to_string) is the role's "kind" on the wire and the
// run_nodes row's kind in the store.
enum class NodeKind : uint8_t {
    kFull,      // a whole-model replica (or one node of a replica's gradient group)
    kPipeline,  // one stage of a pipeline replica
    kSkipPipe,  // one stage node of a SkipPipe run
    kExpert,    // an HDEE expert
    kSpare,     // stands by with replica 0's data until it takes a lost replica's place
};
inline const char* to_string(NodeKind k) {
    switch (k) {
        case NodeKind::kFull: return "full";
        case NodeKind::kPipeline: return "pipeline";
        case NodeKind::kSkipPipe: return "skippipe";
        case NodeKind::kExpert: return "expert";
        case NodeKind::kSpare: return "spare";
    }
    return "?";
}
// nullopt for a name no kind has.
inline std::optional<NodeKind> parse_node_kind(std::string_view s) {
    for (NodeKind k : {NodeKind::kFull, NodeKind::kPipeline, NodeKind::kSkipPipe, NodeKind::kExpert, NodeKind::kSpare})
        if (s == to_string(k)) return k;
    return std::nullopt;
}
// A replica's node that takes part in outer rounds and can be killed, lost and restarted.
inline bool replica_node(NodeKind k) { return k == NodeKind::kFull || k == NodeKind::kPipeline; }

// Where a Gloo process group meets: rank 0 hosts the c10d TCP store at host:port.
struct GlooGroupSpec {
    std::string host;  // "" = no such group
    int port = 0;
    int rank = 0;      // this node's rank in the group
    int size = 1;      // members
    // CurveZMQ public keys of the members by group rank ([0] hosts the store); empty without keys.
    std::vector<std::string> keys;
};

struct NodeRole {
    std::string name;          // "replica-0", or "replica-1.2" for rank 2 of replica 1; MetricRecord::node
    NodeKind kind = NodeKind::kFull;
    int replica = 0;           // 0 ≤ replica < replicas
    int replicas = 1;          // R
    int rank = 0;              // rank inside the replica (its DDP group); 0 is the replica's leader
    int replica_nodes = 1;     // nodes in this replica
    int stage = -1;            // the stage a pipeline or SkipPipe node holds; -1 for a full replica
    // The data-plane mesh of the run's outer sync: endpoints of the members in rank order (for DDP
    // every node, for DiLoCo every replica leader) and this node's index there; -1 = not a member.
    std::vector<std::string> mesh_endpoints;
    int mesh_rank = -1;
    // CurveZMQ public keys of the mesh members, parallel to mesh_endpoints; empty without keys.
    std::vector<std::string> mesh_keys;
    // The run's data-plane token (remote/wire_frame.h): frames without it are not from this run.
    uint64_t mesh_token = 0;
    // Mesh ranks whose nodes joined a relay (remote/relay.h): nobody can dial them, so they dial the
    // other members' outboxes (remote/mesh_outbox.h) and reach each other through the relay.
    // Ascending; empty when no member joined one.
    std::vector<int> mesh_relayed;
    // outer.topology = "hub": the relay's endpoint (remote/hub_relay.h) for the mesh's members; ""
    // for every other topology.
    std::string hub_endpoint;
    // With CurveZMQ: the relay's public key (the coordinator's; Z85), which this node's hub client
    // checks the relay against; "" without keys.
    std::string hub_key;
    // The coordinator's data fingerprint (core/data_fingerprint.h, wire form): the node's own
    // prepared data must match it before any step. "" = no check (roles built by hand in tests).
    std::string data_fingerprint;
    GlooGroupSpec grad_group;  // gradients all-reduced every step (DDP: all nodes; DiLoCo: the replica's nodes)
    // An HDEE expert (kind "expert", core/hdee_plan.h): its ensemble (index into kHdeeEnsembleNames)
    // and domain (index into hdee.domains), and the MLP width (0 = model.d_ff) and optimizer steps
    // the coordinator planned for it at equal FLOPs. -1 / 0 for every other kind. An expert has no
    // mesh and no gradient group: it talks to nobody but the coordinator.
    int expert_ensemble = -1;
    int expert_domain = -1;
    int64_t expert_d_ff = 0;
    int64_t expert_steps = 0;

    // Run-scoped checkpoints (train.ckpt_every; engine/worker/run_checkpoint.h): the folder under
    // <data.cache_dir>/checkpoints that holds this run's, named by the coordinator after the run
    // ("run-ID-UID"; "" = no checkpoints), and the step whose checkpoint the node loads before its
    // first step (-1 = a fresh start; `thinwire run --resume`).
    std::string checkpoint_run;
    int64_t resume_step = -1;
    // A replica's node process restarted by its coordinator after a scheduled kill (docs/faults.md
    // "Fault schedules"): the round after which it rejoins the live run, taking a peer's state; −1 =
    // a node that starts with the run.
    int64_t rejoin_step = -1;
    // With rejoin_step: the step the live run's transports started at (its resume step; 0 for a run
    // from its start), so the fresh process numbers its rounds as its peers do (engine/worker/
    // stage_rounds.h start_at).
    int64_t rejoin_origin_step = 0;
    // A replica's node process restarted after a real loss (cluster.restart_lost; docs/faults.md
    // "Restarted nodes"): −1 = not one. Otherwise the lowest step its live peers had reported when
    // it was restarted: it joins after a round at this step or later, whichever its peers admit it
    // at, and numbers its transport's rounds from here until it knows that round.
    int64_t rejoin_live_from = -1;
    // With rejoin_live_from: the tokens its replica had trained before the loss (train.tokens goes on from them).
    int64_t rejoin_tokens = 0;
    // A restarted process (rejoin_step or rejoin_live_from): milliseconds since the run started, as
    // its coordinator counted them when it configured the process, so the wall times of its rows
    // and events count from the run's start as its peers' do.
    int64_t rejoin_wall_ms = 0;
    // With rejoin_wall_ms: the coordinator's system clock when it counted them (ms since the Unix
    // epoch). A fresh process reads its configure only once it has started, a second or so later:
    // that time counts too (rejoin_age_ms). 0 = not known.
    int64_t rejoin_sent_unix_ms = 0;

    // The run's age when this process was configured, given the system clock now (ms since the
    // Unix epoch): rejoin_wall_ms plus the time the configure took to arrive, which is at most a
    // minute (two machines' clocks may disagree; a clock behind the sender's counts nothing).
    int64_t rejoin_age_ms(int64_t now_unix_ms) const {
        const int64_t transit = rejoin_sent_unix_ms > 0 ? now_unix_ms - rejoin_sent_unix_ms : 0;
        return rejoin_wall_ms + std::clamp<int64_t>(transit, 0, 60 * 1000);
    }

    int global_rank() const { return replica * replica_nodes + rank; }
    int world() const { return replicas * replica_nodes; }
};

// The system clock in ms since the Unix epoch (NodeRole::rejoin_age_ms's "now").
inline int64_t unix_now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace tw
