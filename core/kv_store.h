// A gradient group's rendezvous store behind a socket-free interface: the engine's c10d::Store
// (engine/algo/c10d_store.h) talks to this, remote/kv_store.h implements it over ZeroMQ (CURVE
// with keys), and app/ wires the two together, so the engine never opens a socket itself.
//
// Semantics follow c10d's TCPStore: values are bytes, add() keeps its counter as decimal text,
// compare_set() swaps only on an exact match. A timeout of 0 ms means "no timeout".
//
// Thread-safety: implementations are safe to call from several threads at once (Gloo's
// rendezvous may); a blocking get/wait holds up only its own caller.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace tw {

using KvBytes = std::vector<uint8_t>;

class KvStore {
public:
    virtual ~KvStore() = default;

    virtual Status set(const std::string& key, const KvBytes& value) = 0;
    // Blocks until `key` exists, then returns its value; an error after timeout_ms.
    virtual Result<KvBytes> get(const std::string& key, int64_t timeout_ms) = 0;
    // Adds `delta` to the counter at `key` (absent = 0) and returns the new value.
    virtual Result<int64_t> add(const std::string& key, int64_t delta) = 0;
    // If `key` holds `expected` (or is absent and `expected` is empty) it becomes `desired`;
    // returns the value the key holds afterwards (TCPStore's rule: an absent key with a non-empty
    // `expected` returns `expected` and stays absent).
    virtual Result<KvBytes> compare_set(const std::string& key, const KvBytes& expected, const KvBytes& desired) = 0;
    // True when every key exists, without waiting.
    virtual Result<bool> check(const std::vector<std::string>& keys) = 0;
    // True when the key existed.
    virtual Result<bool> delete_key(const std::string& key) = 0;
    virtual Result<int64_t> num_keys() = 0;
    // Blocks until every key exists; an error naming the missing keys after timeout_ms.
    virtual Status wait(const std::vector<std::string>& keys, int64_t timeout_ms) = 0;
    // Where the store is, for error messages.
    virtual std::string address() const = 0;
};

// A running store server, opaque to its owner: destroying it stops serving and releases its
// endpoint. The worker of the group's rank 0 holds it so it closes when the run ends.
class KvStoreHost {
public:
    virtual ~KvStoreHost() = default;
    virtual const std::string& endpoint() const = 0;  // where it is bound
};

// What a gradient-group member brings to its worker: the client every member uses and, on rank 0,
// the server it hosts. Both null when the role has no group. The worker destroys its c10d group
// first, then the client, then the host.
struct GroupStore {
    std::unique_ptr<KvStoreHost> host;
    std::shared_ptr<KvStore> client;
    std::string bind_host;  // this node's own address for Gloo's pair sockets
};

}  // namespace tw
