// The headless engine node (`thinwire node --listen ENDPOINT`): answers the control protocol of
// remote/protocol.h on a ROUTER socket, streams heartbeats, metrics and events on a PUB socket,
// and runs the configured worker (core/worker.h) on its own thread. One run at a time.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "core/status.h"
#include "core/worker.h"

namespace zmq { class context_t; }

namespace tw {

struct NodeOptions {
    std::string listen;                     // control endpoint; the others follow core/layout.h
    std::shared_ptr<zmq::context_t> ctx;    // shared with peers for inproc://; null = a new one
    size_t max_message_bytes = 256u << 20;  // larger control messages are refused with an error
    double heartbeat_s = 0.5;               // PUB heartbeat interval until configure sets the run's
    std::string version = "0.0.0";          // reported in capabilities (the build's project version)
    std::string device = "cpu";             // reported in capabilities (the engine's device)
    // Hook for CurveZMQ (the reliability issue): a node binds non-loopback TCP only with keys.
    std::string curve_secret_key;
};

// Refuses endpoints a node may not bind without authentication: anything but inproc://, ipc://
// and tcp:// on 127.0.0.0/8, localhost or [::1].
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
