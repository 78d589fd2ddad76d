// CurveZMQ for every socket of a run: keypairs as Z85 text files, server/client socket setup, and
// the ZAP handler that decides which client keys a node's listening sockets accept.
//
// Keys. A keypair is two 40-character Z85 strings; `thinwire keys new DIR` writes DIR/secret.key
// (mode 0600, the secret key only) and DIR/public.key (mode 0644). The public key is derived from
// the secret one on load, so a node needs only its secret key file.
//
// Domains. Each listening (server) socket names a ZAP domain; the handler accepts a client only if
// its public key is in that domain's allowed set: "control" (the node's ROUTER and PUB: the
// coordinators the operator allowed with --allow), "data" (the data-plane PULL and the c10d store:
// the run's peer nodes, handed over at configure), "hub" (the hub relay's ROUTER, on a context of
// its own: the run's replicas, remote/hub_relay.h). A refused key is logged through the callback.
// The ZAP reply's user id is the client's Z85 public key, so every received message carries its
// sender's key as the "User-Id" property (peer_key()).
//
// Thread-safety: ZapHandler's allow()/refused() may be called from any thread; it owns one thread
// that serves the context's ZAP endpoint (inproc://zeromq.zap.01, one handler per context).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "remote/serve_thread.h"
#include "remote/zmq_fwd.h"


namespace tw {

inline constexpr size_t kZ85KeyChars = 40;
inline constexpr const char* kZapControl = "control";
inline constexpr const char* kZapData = "data";
inline constexpr const char* kZapHub = "hub";

struct CurveKeyPair {
    std::string public_key;  // Z85, 40 characters
    std::string secret_key;  // Z85, 40 characters; empty for a peer's key
    bool empty() const { return public_key.empty(); }
};

// True when libzmq was built with CURVE (libsodium / tweetnacl).
bool curve_available();
// A 40-character string of the Z85 alphabet.
bool is_z85_key(const std::string& s);

Result<CurveKeyPair> curve_keypair_new();
// Writes DIR/secret.key (0600) and DIR/public.key (0644), creating DIR (0700); refuses to overwrite.
Status write_keypair(const std::string& dir, const CurveKeyPair& keys);
// Reads a secret key file (one Z85 key, surrounding white space ignored) and derives the public key.
// Refuses a file that others may read (mode & 0077) with a message saying so.
Result<CurveKeyPair> read_secret_key(const std::string& path);
// Reads a public key file; the error names the file and what is wrong with it.
Result<std::string> read_public_key(const std::string& path);
// A key given in a layout: the Z85 text itself, or the path of a public key file.
Result<std::string> public_key_from_text_or_file(const std::string& text_or_path);

// Socket setup; call before bind/connect. `zap_domain` selects the allowed set the handler checks.
void curve_server(zmq::socket_t& s, const CurveKeyPair& own, const char* zap_domain);
void curve_client(zmq::socket_t& s, const CurveKeyPair& own, const std::string& server_public_key);

// The sender's public key of a message received on a CURVE socket ("" without CURVE).
std::string peer_key(const zmq::message_t& m);
// A short form of a key for logs: its first 8 characters.
std::string key_tag(const std::string& key);

class ZapHandler {
public:
    using Log = std::function<void(const std::string& text)>;
    // Binds the context's ZAP endpoint and serves it on its own thread until destroyed.
    static Result<std::unique_ptr<ZapHandler>> start(std::shared_ptr<zmq::context_t> ctx, Log log);
    ~ZapHandler();

    // Replaces the allowed client keys of `domain`.
    void allow(const std::string& domain, std::vector<std::string> keys);
    uint64_t refused() const { return refused_.load(); }

private:
    ZapHandler() = default;
    void serve();
    std::shared_ptr<zmq::context_t> ctx_;
    std::unique_ptr<zmq::socket_t> rep_;
    Log log_;
    ServeThread serving_;
    std::atomic<uint64_t> refused_{0};
    mutable std::mutex mu_;
    std::map<std::string, std::set<std::string>> allowed_;
};

}  // namespace tw
