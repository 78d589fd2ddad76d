// The gradient group's rendezvous store over ZeroMQ (core/kv_store.h): a ROUTER server on its own
// thread, hosted by the group's rank 0, and a DEALER client every member uses. It replaces c10d's
// TCPStore, which listens on every interface and authenticates nobody: with keys the server is a
// CURVE server in the "data" ZAP domain (remote/curve.h), so only the run's peers get an answer.
//
// Wire format (version 1, little-endian). Request: a 24-byte header frame — magic "TWKV", version,
// op, 2 zero bytes, request id (u64), timeout in ms (i64, ≥ 0; 0 = none; used by get and wait) —
// then the op's frames: set: key, value; get: key; add: key, delta (i64); compare_set: key,
// expected, desired; check: 1..max_keys_per_request keys; delete: key; num_keys: none; wait:
// 1..max_keys_per_request keys. Reply: a 16-byte header frame — magic, version, op, status (0 ok,
// 1 bad request or refused, 2 timeout), 1 zero byte, request id — and one payload frame: the value
// (get, compare_set), an i64 (add, num_keys), one byte 0/1 (check, delete), nothing (set, wait),
// or the error text. Messages are untrusted: every size, count and field is checked, a bad request
// gets an error reply and the server keeps serving.
//
// Ownership and threads: KvStoreServer owns its socket and thread; destroying it stops serving
// and unbinds (pending gets and waits are dropped; their clients time out). KvStoreClient is
// thread-safe: each concurrent request borrows its own DEALER from a small pool, so one thread's
// blocking get never holds up another thread's set.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/kv_store.h"
#include "core/status.h"
#include "remote/curve.h"
#include "remote/router_server.h"
#include "remote/zmq_fwd.h"


namespace tw {

struct KvStoreLimits {
    size_t max_key_bytes = 4096;
    size_t max_value_bytes = size_t{4} << 20;   // Gloo's values are addresses of a few hundred bytes
    size_t max_keys_per_request = 1024;
    size_t max_keys = 65536;                    // keys held at once
    size_t max_total_bytes = size_t{256} << 20; // keys + values held at once
    size_t max_waiters = 4096;                  // gets and waits blocked at once
};

struct KvServerOptions {
    CurveKeyPair keys;  // with keys: CURVE server, ZAP domain "data"; empty = plain (loopback/inproc only)
    KvStoreLimits limits;
    std::function<void(const std::string&)> log;  // bad requests, one line each; may be empty
};

class KvStoreServer : public KvStoreHost {
public:
    // Binds `endpoint` (tcp://HOST:PORT, tcp://HOST:* for an ephemeral port, inproc://, ipc://) on
    // `ctx` and serves it on a new thread. A port still held by a just-closed store is retried for
    // up to 2 s before giving up.
    static Result<std::unique_ptr<KvStoreServer>> start(std::shared_ptr<zmq::context_t> ctx,
                                                       const std::string& endpoint, KvServerOptions opts);
    ~KvStoreServer() override;

    const std::string& endpoint() const override { return server_.endpoint(); }  // as bound (a real port)
    uint64_t bad_requests() const { return bad_requests_.load(); }

private:
    struct State;
    KvStoreServer() = default;
    void serve();

    std::shared_ptr<zmq::context_t> ctx_;
    RouterServer server_;  // the socket and the thread serving it
    std::unique_ptr<State> state_;  // touched only by the serving thread
    std::function<void(const std::string&)> log_;
    std::atomic<uint64_t> bad_requests_{0};
};

struct KvClientOptions {
    CurveKeyPair keys;        // this node's keypair; empty = plain
    std::string server_key;   // the store host's public key (Z85); required with keys
    int64_t op_timeout_ms = 60000;  // set/add/check/...: no reply within this is an error
};

class KvStoreClient : public KvStore {
public:
    // Connecting is lazy (ZeroMQ reconnects until the server is up), so this fails only on a bad
    // endpoint or options.
    static Result<std::unique_ptr<KvStoreClient>> connect(std::shared_ptr<zmq::context_t> ctx,
                                                        const std::string& endpoint, KvClientOptions opts);
    ~KvStoreClient() override;

    Status set(const std::string& key, const KvBytes& value) override;
    Result<KvBytes> get(const std::string& key, int64_t timeout_ms) override;
    Result<int64_t> add(const std::string& key, int64_t delta) override;
    Result<KvBytes> compare_set(const std::string& key, const KvBytes& expected, const KvBytes& desired) override;
    Result<bool> check(const std::vector<std::string>& keys) override;
    Result<bool> delete_key(const std::string& key) override;
    Result<int64_t> num_keys() override;
    Status wait(const std::vector<std::string>& keys, int64_t timeout_ms) override;
    std::string address() const override { return endpoint_; }

private:
    struct Reply;
    KvStoreClient() = default;
    Result<std::unique_ptr<zmq::socket_t>> new_socket();
    // Sends one request and waits for its reply (matched by id) until the deadline.
    Result<Reply> request(uint8_t op, int64_t timeout_ms, const std::vector<std::string>& frames, int64_t wait_ms);

    std::shared_ptr<zmq::context_t> ctx_;
    std::string endpoint_;
    KvClientOptions opts_;
    std::atomic<uint64_t> next_id_{1};
    std::mutex pool_mu_;
    std::vector<std::unique_ptr<zmq::socket_t>> idle_;  // sockets not in use by a request
};

}  // namespace tw
