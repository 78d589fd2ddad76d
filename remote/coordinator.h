// The coordinator (docs/architecture.md §2): a library the CLI and the workbench share. It
// greets the nodes of a cluster, configures each with its role, relays start/pause/resume/stop,
// sends heartbeats, and turns the nodes' metric streams into calls on a sink. It never blocks
// longer than the timeout given to poll(), so a GUI can call it every frame.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/hdee_mixture.h"
#include "core/metrics.h"
#include "core/role.h"
#include "core/status.h"
#include "core/worker.h"
#include "remote/curve.h"

namespace zmq { class context_t; }

namespace tw {

struct Message;
enum class MsgKind : uint8_t;

struct NodeInfo {
    std::string endpoint;          // control endpoint
    std::string joined_key;        // a node that joined a relay: its key (endpoint is then the relay's port for it)
    std::string name;              // role name once configured ("" = not part of the run)
    std::string host, version, device;
    std::string cpu, blas;         // what it computes on (core/platform_info.h), as it reported it
    int64_t threads = 0, pid = 0;
    uint64_t memory_bytes = 0;
    std::string state;             // as last reported: idle, configured, running, paused, finished, ...
    int64_t step = 0;              // last completed step reported
    double heartbeat_age_s = 0;    // seconds since its last heartbeat (updated by poll)
    bool done = false, ok = false, stopped = false;
    bool lost = false;             // silent past the timeout, and the run went on without it
    bool coordinator_lost = false; // its `done` says it stopped itself, hearing nothing from this coordinator
    std::string error;             // why it failed, when it did
    WorkerSummary summary;         // final figures from its `done` message
};

struct CoordinatorOptions {
    int reply_timeout_ms = 20000;      // a node that does not answer a command this fast is an error
    double heartbeat_s = 0.5;          // coordinator → node heartbeat interval
    double heartbeat_timeout_s = 5;    // a running node silent this long fails the run
    // CurveZMQ: the coordinator's keypair and each node's public key, parallel to the endpoints
    // given to connect(); both empty = no CURVE (loopback nodes without keys).
    CurveKeyPair keys;
    std::vector<std::string> node_keys;
};

class CoordinatorSink {
public:
    virtual ~CoordinatorSink() = default;
    virtual void on_metrics(const std::vector<MetricRecord>& records) = 0;
    virtual void on_event(const EventRecord& event) = 0;
    // An HDEE expert's scores (remote/protocol.h "scores"), parsed but not yet checked against the
    // run. A sink of a run that takes none records a warning instead.
    virtual void on_scores(const std::string& node, ExpertScores scores) {
        on_event({0, node, EventLevel::kWarning, "scores",
                  "scores of " + std::to_string(scores.logp.size()) + " tokens ignored: this run takes none"});
    }
    // A part of the run's final model (remote/protocol.h "model"), parsed but not yet checked
    // against the run's model. A sink that keeps no model records a warning instead.
    virtual void on_model_part(const std::string& node, FinalModelPart part) {
        on_event({0, node, EventLevel::kWarning, "model", "a part of the final model (" + part.name + ") ignored: this run keeps none"});
    }
};

struct RunOutcome {
    RunStatus status = RunStatus::kFinished;
    std::string reason;  // "" when finished
};

class Coordinator {
public:
    // Greets every endpoint (hello → capabilities); fails naming the node that did not answer.
    static Result<std::unique_ptr<Coordinator>> connect(std::shared_ptr<zmq::context_t> ctx,
                                                        std::vector<std::string> endpoints, CoordinatorOptions opts);
    ~Coordinator();

    const std::vector<NodeInfo>& nodes() const { return nodes_; }
    // Node i gets roles[i] (nodes beyond roles.size() sit the run out) and the resolved config.
    // The coordinator adds the run's data-plane token and, with keys, every member's public key to
    // the roles, and keeps each node's run token for the commands that follow.
    // Returns once every configured node's metric stream is live (its heartbeat has arrived).
    Status configure(const std::vector<NodeRole>& roles, const std::string& config_toml);
    Status start();
    Status pause();
    Status resume();
    Status stop();      // asks every running node to stop after its current step; poll() then reports the end
    void shutdown();    // asks every node to exit (best effort, for nodes this process brought up)

    // Pumps the metric streams for up to `timeout_ms`, forwards records to `sink` and sends
    // heartbeats. Returns the outcome once every node of the run is done, a node failed, or a node
    // missed heartbeats for longer than heartbeat_timeout_s. A failure names the node whose failure
    // arrived first: its peers' failures (a member that left the mesh) usually follow from it.
    std::optional<RunOutcome> poll(CoordinatorSink& sink, int timeout_ms);

    // Survivors go on (docs/faults.md): node i with unit[i] ≥ 0 may fall silent without failing the
    // run — it is marked lost and an event says so — as long as at least `min_live` units have no
    // lost node. A unit is one replica (its nodes leave together) or one spare; unit −1 (or a node
    // past the vector's end) stays vital (its loss fails the run). `max_live` caps the count
    // (spares stand by beside outer.replicas: at most that many replicas are live); 0 = no cap.
    void set_loss_policy(std::vector<int> unit, int64_t min_live, int64_t max_live = 0);

    // A node process restarted mid-run (a scheduled kill with rejoin in child processes, docs/
    // faults.md): sends node i its role of this run again with `rejoin_step` over a fresh socket,
    // and returns; poll() takes the node's answer (its run token; a failure or no answer within the
    // reply timeout fails the run, naming it) and starts the node once its stream is heard. The node
    // does not count silent meanwhile. Its earlier state (lost, done) is forgotten.
    Status rejoin(size_t i, int64_t rejoin_step);
    // The same for a node process restarted after a real loss (cluster.restart_lost, docs/faults.md
    // "Restarted nodes"): its role says it rejoins when its peers admit it, after a round at the
    // lowest step a live node of the run has reported or later, and that its replica had trained
    // `tokens` tokens.
    Status rejoin_live(size_t i, int64_t tokens);
    // A remote node counted lost (cluster.mode = "remote"): whether its endpoint answers a hello as
    // an idle node of this protocol again — its operator restarted `thinwire node` there. Sends at
    // most one hello a second over a fresh socket and never waits; then rejoin_live() takes it back.
    bool answers_again(size_t i);

    // One request/reply round trip with node i (kind and body of `m`); error replies become errors.
    Result<Message> request(size_t i, Message m);

    // Nodes 0..count-1 prepare (or find) the run's data under their own data roots (`prepare`):
    // node 0 first, so nodes sharing its root find the data cached instead of racing to build it,
    // then the others in parallel. Waits up to `timeout_ms` per phase (a first preparation trains a
    // tokenizer). Reports by node; an error names the node. `abort` (polled every 50 ms) ends the
    // wait at once with an error saying so (Ctrl-C while the nodes prepare).
    Result<std::vector<DataReport>> prepare(const std::string& config_toml, size_t count, int timeout_ms,
                                            const std::function<bool()>& abort = {});

private:
    int64_t send_request(size_t i, Message& m);
    Result<Message> await_reply(size_t i, int64_t id, MsgKind asked, int timeout_ms,
                                const std::function<bool()>& abort = {});
    // Node i's reply to request `id` if it has arrived (nullopt: not yet), without waiting; replies
    // to earlier requests are dropped, a malformed or error reply is an error naming the node.
    std::optional<Result<Message>> take_reply(size_t i, int64_t id);
    // Keeps the run token a configure reply of node i hands out; an error names the node if none.
    Status take_token(size_t i, const Message& reply);
    Coordinator() = default;
    Status broadcast(int kind, const char* verb);
    bool presumed_gone(size_t i) const;
    void handle_stream(const Message& m, CoordinatorSink& sink);
    // rejoin()'s and rejoin_live()'s common part: node i's fresh process gets `role` over a fresh socket.
    Status configure_restarted(size_t i, const NodeRole& role);
    // poll()'s part for nodes restarted by rejoin(): takes their configure answers without waiting.
    void take_rejoin_answers();
    struct Impl;
    std::unique_ptr<Impl> impl_;
    std::vector<NodeInfo> nodes_;
};

}  // namespace tw
