// The outbox a reachable mesh member keeps for the members that joined a relay (NodeRole::
// mesh_relayed): nobody can dial those, so they dial this member instead, and what it sends them
// travels over the connection they made rather than through the relay.
//
// Shape. A ROUTER, a CurveZMQ server in the "data" ZAP domain (only the run's members get in),
// bound at this member's data endpoint with the port plus one (the gradient-group store's port,
// core/layout.h, which a run with relayed members leaves free: key-named nodes and Gloo groups
// are never in one layout). Each relayed member dials it with a DEALER (remote/zmq_collective.h).
// This member's senders — the worker's and the heartbeat thread's PUSH sockets for relayed member
// r — connect to inproc://…-r (sender_endpoint(r)); the outbox's thread reads each such pipe and
// forwards its messages, frames unchanged, to r's connection.
//
// Who is who. ZeroMQ sends an empty probe on every (re)connection of the dialler (ZMQ_PROBE_ROUTER);
// the outbox takes the key that connection authenticated with (the ZAP reply's user id) and, when it
// is a relayed member's, sends that member's messages to the newest connection with its key, first
// of all a welcome (one empty frame) that tells the member its messages now come this way. A
// probe from any other member is logged once and its connection gets nothing; whatever else a
// dialler sends is read and dropped. Until a member has dialled (or while its line is down and
// its connection gone) its messages wait in its pipe: the senders' high-water mark and send
// timeout apply as they would to a PUSH whose peer is not connected yet.
//
// Thread-safety: the outbox's thread owns the ROUTER and the pipes; start and the destructor are
// the owner's. The inproc endpoints live on the mesh's context.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "remote/curve.h"
#include "remote/serve_thread.h"
#include "remote/zmq_fwd.h"

namespace tw {

// The outbox endpoint of a member whose data endpoint is `data_endpoint` (tcp://HOST:PORT): the
// same host, PORT + 1. Refused: another transport, no port, or a port above 65534.
Result<std::string> mesh_outbox_endpoint(const std::string& data_endpoint);

struct MeshOutboxOptions {
    std::string bind;                  // tcp://HOST:PORT, mesh_outbox_endpoint of this member's own data endpoint
    CurveKeyPair keys;                 // this member's
    std::vector<std::string> member_keys;  // every member's public key, by rank
    std::vector<int> relayed;          // the ranks this outbox serves
    int64_t max_frame_bytes = 0;       // ZMQ_MAXMSGSIZE for what diallers send (the CURVE handshake, probes); 0 = none
    std::function<void(const std::string&)> log;  // a stranger's probe, once per key; may be empty
};

class MeshOutbox {
public:
    // Binds the ROUTER and every relayed member's pipe on `ctx`, then serves on its own thread.
    static Result<std::unique_ptr<MeshOutbox>> start(zmq::context_t& ctx, MeshOutboxOptions opts);
    ~MeshOutbox();
    MeshOutbox(const MeshOutbox&) = delete;
    MeshOutbox& operator=(const MeshOutbox&) = delete;

    // Where this member's senders to relayed member `rank` connect (a PUSH, no CURVE).
    std::string sender_endpoint(int rank) const;
    // The ROUTER's endpoint as bound (a wildcard port resolved).
    const std::string& endpoint() const { return endpoint_; }

    struct Impl;

private:
    MeshOutbox() = default;
    std::unique_ptr<Impl> impl_;
    std::string endpoint_;
    ServeThread serving_;
};

}  // namespace tw
