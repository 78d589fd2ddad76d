// A coordinator's questions to a relay (remote/relay.h): where a node that joined it is reached,
// and what the relay carried for it. One DEALER with CurveZMQ (the relay as server; this
// coordinator's key must be one the relay admits).
//
// Thread-safety: one thread at a time.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "remote/curve.h"
#include "remote/relay.h"

namespace zmq {
class context_t;
class socket_t;
}  // namespace zmq

namespace tw {

class RelayDirectory {
public:
    // relay: tcp://HOST:PORT of its tunnel socket; relay_key its public key; keys the asker's own.
    static Result<std::unique_ptr<RelayDirectory>> connect(const std::string& relay, const std::string& relay_key,
                                                           const CurveKeyPair& keys);
    ~RelayDirectory();

    // The public control endpoint of each node key once all of them have joined, waiting at most
    // `timeout_s`. `progress` gets a line every few seconds naming who is missing; `stopped` ends
    // the wait early (Ctrl-C). The error names the nodes that never joined.
    Result<std::map<std::string, std::string>> wait_for(const std::vector<std::string>& node_keys, double timeout_s,
                                                         const std::function<void(const std::string&)>& progress,
                                                         const std::function<bool()>& stopped);
    // What the relay carried for `node_key` so far.
    Result<RelayCounters> counters(const std::string& node_key, int timeout_ms = 10000);

private:
    RelayDirectory() = default;
    Result<std::vector<std::string>> ask(const char* kind, const std::string& node_key, int timeout_ms);
    Result<std::vector<std::string>> ask_once(const char* kind, const std::string& node_key, int timeout_ms);
    Status dial();
    std::string relay_, relay_key_;
    CurveKeyPair keys_;
    std::unique_ptr<zmq::context_t> ctx_;
    std::unique_ptr<zmq::socket_t> sock_;
};

}  // namespace tw
