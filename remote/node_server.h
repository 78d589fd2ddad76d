// The headless engine node (`thinwire node --listen ENDPOINT`): answers the control protocol of
// remote/protocol.h on a ROUTER socket, streams heartbeats, metrics and events on a PUB socket,
// and runs the configured worker (core/worker.h) on its own thread. One run at a time, run after
// run: every socket of a run (its mesh, its c10d store) closes when the run ends.
//
// Ownership: the coordinator whose `configure` succeeded owns the node until the next configure
// (allowed only while no run is active). Its reply carries a run token; start, pause, resume,
// stop, shutdown and heartbeats must carry that token (with CURVE keys they must also come from
// the same key), so no other process can drive the run or keep its watchdog alive. Pause and stop
// are recorded as events naming who sent them.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/worker.h"
#include "remote/curve.h"

namespace zmq { class context_t; }

namespace tw {

struct NodeOptions {
    std::string listen;                     // control endpoint; the others follow core/layout.h
    std::shared_ptr<zmq::context_t> ctx;    // shared with peers for inproc://; null = a new one
    size_t max_message_bytes = 256u << 20;  // larger control messages are refused with an error
    double heartbeat_s = 0.5;               // PUB heartbeat interval until configure sets the run's
    std::string version = "0.0.0";          // reported in capabilities (the build's project version)
    std::string device = "cpu";             // reported in capabilities (the engine's device)
    // CurveZMQ (remote/curve.h): with a keypair every listening socket of the node is a CURVE server
    // and only `allowed_coordinators` may connect to its control and metric sockets; the node may
    // then bind any interface. Without keys it binds loopback, inproc:// and ipc:// only.
    CurveKeyPair keys;
    std::vector<std::string> allowed_coordinators;  // Z85 public keys
    std::string data_root;                  // absolute; where the node may read and write (NodeSite)
    // Answers `prepare` (remote/protocol.h): the engine's data preparation; empty = this node
    // refuses prepare requests.
    DataPreparer prepare_data;
    // Where refused connections and other security events are logged besides the metric stream;
    // empty = standard error.
    std::function<void(const std::string&)> log;
};

// Refuses endpoints a node may not bind without authentication: anything but inproc://, ipc://
// and tcp:// on 127.0.0.0/8 or [::1]. With keys any tcp:// host is allowed.
Status check_bind_allowed(const std::string& endpoint, bool have_curve_keys);

class NodeServer {
public:
    // Binds the control and metric endpoints. `factory` builds the worker at configure.
    static Result<std::unique_ptr<NodeServer>> bind(NodeOptions opts, WorkerFactory factory);
    ~NodeServer();

    // Serves until a shutdown command or `interrupt` becomes true; a running worker is stopped first.
    Status serve(const std::atomic<bool>* interrupt = nullptr);

    const std::string& endpoint() const;

private:
    NodeServer() = default;
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace tw
