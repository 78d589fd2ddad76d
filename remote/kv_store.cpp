// The rendezvous store over ZeroMQ; see kv_store.h.
#include "remote/kv_store.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <map>
#include <zmq.hpp>

#include "core/little_endian.h"
#include "remote/poll.h"
#include "remote/router_server.h"

namespace tw {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kMagic[4] = {'T', 'W', 'K', 'V'};
constexpr uint8_t kVersion = 1;
constexpr size_t kRequestHeader = 24, kReplyHeader = RouterServer::kReplyHeaderBytes;
constexpr int64_t kMaxTimeoutMs = int64_t{7} * 24 * 3600 * 1000;  // a week: keeps deadline arithmetic finite

enum Op : uint8_t { kSet = 1, kGet = 2, kAdd = 3, kCompareSet = 4, kCheck = 5, kDelete = 6, kNumKeys = 7, kWait = 8 };
enum Code : uint8_t { kOk = 0, kBad = 1, kTimeout = 2 };

const char* op_name(uint8_t op) {
    switch (op) {
        case kSet: return "set";
        case kGet: return "get";
        case kAdd: return "add";
        case kCompareSet: return "compare_set";
        case kCheck: return "check";
        case kDelete: return "delete";
        case kNumKeys: return "num_keys";
        case kWait: return "wait";
        default: return "unknown";
    }
}

using le::get_u64;
using le::put_u64;
std::string i64_bytes(int64_t v) {
    std::string s(8, '\0');
    put_u64(reinterpret_cast<uint8_t*>(s.data()), static_cast<uint64_t>(v));
    return s;
}

// Decimal text, as TCPStore keeps its counters (so a value set by hand can be added to).
bool parse_counter(const std::string& s, int64_t& out) {
    if (s.empty() || s.size() > 20) return false;
    size_t i = s[0] == '-' ? 1 : 0;
    if (i == s.size()) return false;
    for (size_t j = i; j < s.size(); ++j)
        if (s[j] < '0' || s[j] > '9') return false;
    try {
        out = std::stoll(s);
    } catch (...) {
        return false;
    }
    return true;
}

int64_t ms_until(Clock::time_point t) {
    return std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count());
}

}  // namespace

// ---------------------------------------------------------------------------------------------- server

struct KvStoreServer::State {
    struct Waiter {
        std::string peer;  // ROUTER routing id
        uint64_t id;
        uint8_t op;  // kGet or kWait
        std::vector<std::string> keys;
        bool has_deadline;
        Clock::time_point deadline;
    };
    KvStoreLimits limits;
    std::map<std::string, std::string> kv;
    size_t total_bytes = 0;
    std::vector<Waiter> waiters;
};

Result<std::unique_ptr<KvStoreServer>> KvStoreServer::start(std::shared_ptr<zmq::context_t> ctx,
                                                           const std::string& endpoint, KvServerOptions opts) {
    using R = Result<std::unique_ptr<KvStoreServer>>;
    std::unique_ptr<KvStoreServer> s(new KvStoreServer());
    s->ctx_ = std::move(ctx);
    s->log_ = std::move(opts.log);
    s->state_ = std::make_unique<State>();
    s->state_->limits = opts.limits;
    // A frame larger than any legal one drops the connection before libzmq allocates it.
    const size_t biggest = std::max({opts.limits.max_value_bytes, opts.limits.max_key_bytes, kRequestHeader});
    KvStoreServer* raw = s.get();
    if (Status st = s->server_.start(*s->ctx_, endpoint, static_cast<int64_t>(biggest), opts.keys, kZapData,
                                     [raw] { raw->serve(); });
        !st)
        return R::error("store: " + st.message());
    return s;
}

KvStoreServer::~KvStoreServer() {
    server_.stop();
}

void KvStoreServer::serve() {
    State& st = *state_;
    zmq::socket_t& sock = server_.socket();
    const KvStoreLimits& lim = st.limits;

    auto send_reply = [&](const std::string& peer, uint8_t op, uint64_t id, uint8_t code, const std::string& payload) {
        server_.reply(peer, {kMagic, kVersion, op, code, id}, {payload});
    };
    std::string who;  // the sender of the request being served, for the log
    auto bad = [&](const std::string& peer, uint8_t op, uint64_t id, const std::string& why) {
        ++bad_requests_;
        if (log_) log_("store: bad request from " + who + ": " + why);
        send_reply(peer, op, id, kBad, std::string("store: ") + why);
    };
    auto all_present = [&](const std::vector<std::string>& keys) {
        for (auto& k : keys)
            if (!st.kv.count(k)) return false;
        return true;
    };
    auto answer_waiter = [&](const State::Waiter& w) {
        if (w.op == kGet) send_reply(w.peer, w.op, w.id, kOk, st.kv.at(w.keys[0]));
        else send_reply(w.peer, w.op, w.id, kOk, "");
    };
    // After a change: release every get/wait whose keys now all exist.
    auto release = [&] {
        auto& ws = st.waiters;
        for (auto it = ws.begin(); it != ws.end();) {
            if (all_present(it->keys)) {
                answer_waiter(*it);
                it = ws.erase(it);
            } else {
                ++it;
            }
        }
    };
    // Stores key → value within the limits; false (and why) when it would exceed them.
    auto store = [&](const std::string& key, std::string value, std::string& why) {
        auto it = st.kv.find(key);
        const size_t old = it == st.kv.end() ? 0 : key.size() + it->second.size();
        if (it == st.kv.end() && st.kv.size() >= lim.max_keys) {
            why = "the store holds its maximum of " + std::to_string(lim.max_keys) + " keys";
            return false;
        }
        if (st.total_bytes - old + key.size() + value.size() > lim.max_total_bytes) {
            why = "the store would exceed its " + std::to_string(lim.max_total_bytes) + " bytes";
            return false;
        }
        st.total_bytes = st.total_bytes - old + key.size() + value.size();
        st.kv[key] = std::move(value);
        return true;
    };

    std::vector<zmq::message_t> parts;
    while (!server_.stopping()) {
        // Sleep until a request, the nearest deadline of a blocked get/wait, or 100 ms (to see a stop).
        int64_t wait_ms = 100;
        for (auto& w : st.waiters)
            if (w.has_deadline) wait_ms = std::min(wait_ms, ms_until(w.deadline));
        bool readable = false;
        try {
            readable = poll_in(sock, static_cast<int>(wait_ms));
        } catch (const zmq::error_t&) {
            break;  // the context is being terminated
        }
        // Expire blocked requests whose time is up.
        const auto now = Clock::now();
        for (auto it = st.waiters.begin(); it != st.waiters.end();) {
            if (it->has_deadline && now >= it->deadline) {
                std::string missing;
                for (auto& k : it->keys)
                    if (!st.kv.count(k)) missing += (missing.empty() ? "" : ", ") + k;
                send_reply(it->peer, it->op, it->id, kTimeout,
                           std::string("store: ") + op_name(it->op) + " timed out waiting for " + missing);
                it = st.waiters.erase(it);
            } else {
                ++it;
            }
        }
        if (!readable) continue;

        // One message: routing id, then the request's frames. Frames beyond any legal request are
        // read and dropped, so a flood of parts cannot grow memory.
        parts.clear();
        bool too_many = false;
        try {
            for (;;) {
                zmq::message_t m;
                if (!sock.recv(m, zmq::recv_flags::dontwait)) break;
                const bool more = m.more();
                if (parts.size() < lim.max_keys_per_request + 2) parts.push_back(std::move(m));
                else too_many = true;
                if (!more) break;
            }
        } catch (const zmq::error_t&) {
            continue;
        }
        if (parts.empty()) continue;
        const std::string peer = parts[0].to_string();
        if (parts.size() < 2) continue;  // a routing id alone: nothing to answer
        const std::string client_key = peer_key(parts[1]);
        who = client_key.empty() ? "a client" : "key " + key_tag(client_key);

        const zmq::message_t& h = parts[1];
        const auto* hb = static_cast<const uint8_t*>(h.data());
        if (h.size() != kRequestHeader || std::memcmp(hb, kMagic, 4) != 0) {
            bad(peer, 0, 0, "a request starts with a " + std::to_string(kRequestHeader) + "-byte TWKV header, got " +
                                std::to_string(h.size()) + " bytes");
            continue;
        }
        const uint8_t op = hb[5];
        const uint64_t id = get_u64(hb + 8);
        const int64_t timeout_ms = static_cast<int64_t>(get_u64(hb + 16));
        if (hb[4] != kVersion) {
            bad(peer, op, id, "version " + std::to_string(hb[4]) + " (this store speaks " + std::to_string(kVersion) + ")");
            continue;
        }
        if (hb[6] != 0 || hb[7] != 0) {
            bad(peer, op, id, "reserved header bytes are not zero");
            continue;
        }
        if (timeout_ms < 0 || timeout_ms > kMaxTimeoutMs) {
            bad(peer, op, id, "timeout " + std::to_string(timeout_ms) + " ms is outside 0.." + std::to_string(kMaxTimeoutMs));
            continue;
        }
        if (too_many) {
            bad(peer, op, id, "more than " + std::to_string(lim.max_keys_per_request) + " keys in one request");
            continue;
        }
        const size_t args = parts.size() - 2;
        auto arg = [&](size_t i) { return parts[2 + i].to_string(); };
        // Every op has a fixed argument count except check and wait (1..max keys).
        size_t want = 0;
        switch (op) {
            case kSet: want = 2; break;
            case kGet: want = 1; break;
            case kAdd: want = 2; break;
            case kCompareSet: want = 3; break;
            case kDelete: want = 1; break;
            case kNumKeys: want = 0; break;
            case kCheck:
            case kWait: want = args; break;
            default:
                bad(peer, op, id, "unknown op " + std::to_string(op));
                continue;
        }
        if ((op == kCheck || op == kWait) && args == 0) {
            bad(peer, op, id, std::string(op_name(op)) + " names no key");
            continue;
        }
        if (args != want) {
            bad(peer, op, id, std::string(op_name(op)) + " takes " + std::to_string(want) + " frames after the header, got " +
                                  std::to_string(args));
            continue;
        }
        // Keys: the first argument, or every argument of check/wait.
        const size_t n_keys = op == kCheck || op == kWait ? args : (op == kNumKeys ? 0 : 1);
        std::string why;
        for (size_t i = 0; i < n_keys && why.empty(); ++i) {
            const size_t len = parts[2 + i].size();
            if (len == 0) why = "an empty key";
            else if (len > lim.max_key_bytes)
                why = "a key of " + std::to_string(len) + " bytes (at most " + std::to_string(lim.max_key_bytes) + ")";
        }
        for (size_t i = n_keys; i < args && why.empty(); ++i)
            if (parts[2 + i].size() > lim.max_value_bytes)
                why = "a value of " + std::to_string(parts[2 + i].size()) + " bytes (at most " +
                      std::to_string(lim.max_value_bytes) + ")";
        if (op == kAdd && why.empty() && parts[3].size() != 8)
            why = "add's delta is 8 bytes, got " + std::to_string(parts[3].size());
        if (!why.empty()) {
            bad(peer, op, id, why);
            continue;
        }

        switch (op) {
            case kSet: {
                if (!store(arg(0), arg(1), why)) {
                    bad(peer, op, id, why);
                    break;
                }
                send_reply(peer, op, id, kOk, "");
                release();
                break;
            }
            case kGet:
            case kWait: {
                std::vector<std::string> keys;
                for (size_t i = 0; i < args; ++i) keys.push_back(arg(i));
                State::Waiter w{peer, id, op, std::move(keys), timeout_ms > 0,
                                Clock::now() + std::chrono::milliseconds(timeout_ms)};
                if (all_present(w.keys)) {
                    answer_waiter(w);
                } else if (st.waiters.size() >= lim.max_waiters) {
                    bad(peer, op, id, "too many blocked gets and waits (" + std::to_string(lim.max_waiters) + ")");
                } else {
                    st.waiters.push_back(std::move(w));
                }
                break;
            }
            case kAdd: {
                const std::string key = arg(0);
                const auto delta = static_cast<int64_t>(get_u64(static_cast<const uint8_t*>(parts[3].data())));
                int64_t v = 0;
                auto it = st.kv.find(key);
                if (it != st.kv.end() && !parse_counter(it->second, v)) {
                    bad(peer, op, id, "add on key \"" + key.substr(0, 64) + "\", which holds no decimal counter");
                    break;
                }
                // Wrap-around in two's complement, defined via unsigned arithmetic.
                v = static_cast<int64_t>(static_cast<uint64_t>(v) + static_cast<uint64_t>(delta));
                if (!store(key, std::to_string(v), why)) {
                    bad(peer, op, id, why);
                    break;
                }
                send_reply(peer, op, id, kOk, i64_bytes(v));
                release();
                break;
            }
            case kCompareSet: {
                const std::string key = arg(0), expected = arg(1);
                auto it = st.kv.find(key);
                if (it == st.kv.end()) {
                    if (!expected.empty()) {
                        send_reply(peer, op, id, kOk, expected);  // TCPStore's answer for an absent key
                        break;
                    }
                    const std::string desired = arg(2);
                    if (!store(key, desired, why)) {
                        bad(peer, op, id, why);
                        break;
                    }
                    send_reply(peer, op, id, kOk, desired);
                    release();
                    break;
                }
                if (it->second == expected) {
                    if (!store(key, arg(2), why)) {
                        bad(peer, op, id, why);
                        break;
                    }
                }
                send_reply(peer, op, id, kOk, st.kv.at(key));
                break;
            }
            case kCheck:
                send_reply(peer, op, id, kOk, std::string(1, [&] {
                               for (size_t i = 0; i < args; ++i)
                                   if (!st.kv.count(arg(i))) return '\0';
                               return '\1';
                           }()));
                break;
            case kDelete: {
                auto it = st.kv.find(arg(0));
                const bool had = it != st.kv.end();
                if (had) {
                    st.total_bytes -= it->first.size() + it->second.size();
                    st.kv.erase(it);
                }
                send_reply(peer, op, id, kOk, std::string(1, had ? '\1' : '\0'));
                break;
            }
            case kNumKeys:
                send_reply(peer, op, id, kOk, i64_bytes(static_cast<int64_t>(st.kv.size())));
                break;
        }
    }
}

// ---------------------------------------------------------------------------------------------- client

struct KvStoreClient::Reply {
    uint8_t code;
    std::string payload;
};

Result<std::unique_ptr<KvStoreClient>> KvStoreClient::connect(std::shared_ptr<zmq::context_t> ctx,
                                                            const std::string& endpoint, KvClientOptions opts) {
    using R = Result<std::unique_ptr<KvStoreClient>>;
    if (!opts.keys.empty() && !is_z85_key(opts.server_key))
        return R::error("store client: with keys the store host's public key is needed (got \"" +
                        opts.server_key.substr(0, 48) + "\")");
    if (opts.op_timeout_ms < 1) return R::error("store client: op_timeout_ms must be positive");
    std::unique_ptr<KvStoreClient> c(new KvStoreClient());
    c->ctx_ = std::move(ctx);
    c->endpoint_ = endpoint;
    c->opts_ = std::move(opts);
    // One socket up front: a bad endpoint is reported now, not at the first request.
    auto s = c->new_socket();
    if (!s) return s.status();
    c->idle_.push_back(std::move(*s));
    return c;
}

KvStoreClient::~KvStoreClient() = default;  // sockets close with linger 0

Result<std::unique_ptr<zmq::socket_t>> KvStoreClient::new_socket() {
    try {
        auto s = std::make_unique<zmq::socket_t>(*ctx_, zmq::socket_type::dealer);
        s->set(zmq::sockopt::linger, 0);
        if (!opts_.keys.empty()) curve_client(*s, opts_.keys, opts_.server_key);
        s->connect(endpoint_);
        return s;
    } catch (const zmq::error_t& e) {
        return Result<std::unique_ptr<zmq::socket_t>>::error("store client: cannot connect " + endpoint_ + ": " + e.what());
    }
}

Result<KvStoreClient::Reply> KvStoreClient::request(uint8_t op, int64_t timeout_ms,
                                                    const std::vector<std::string>& frames, int64_t wait_ms) {
    using R = Result<Reply>;
    std::unique_ptr<zmq::socket_t> sock;
    {
        std::lock_guard<std::mutex> lock(pool_mu_);
        if (!idle_.empty()) {
            sock = std::move(idle_.back());
            idle_.pop_back();
        }
    }
    if (!sock) {
        auto s = new_socket();
        if (!s) return s.status();
        sock = std::move(*s);
    }
    // Back to the pool however this ends; a late reply to this request is skipped by its id.
    struct Return {
        KvStoreClient* c;
        std::unique_ptr<zmq::socket_t>& s;
        ~Return() {
            std::lock_guard<std::mutex> lock(c->pool_mu_);
            c->idle_.push_back(std::move(s));
        }
    } give_back{this, sock};

    const uint64_t id = next_id_++;
    uint8_t h[kRequestHeader] = {};
    std::memcpy(h, kMagic, 4);
    h[4] = kVersion;
    h[5] = op;
    put_u64(h + 8, id);
    put_u64(h + 16, static_cast<uint64_t>(timeout_ms));
    const auto deadline = Clock::now() + std::chrono::milliseconds(wait_ms);
    auto no_reply = [&] {
        return R::error("store at " + endpoint_ + ": no reply to " + op_name(op) + " within " + std::to_string(wait_ms) +
                        " ms (is the group's rank 0 up, and does it accept this node's key?)");
    };
    try {
        // A DEALER without a connected peer (server not up, or its ZAP handler refused our key)
        // would block in send, so wait for room until the deadline. Once the first frame is
        // accepted the rest of the message is too (multipart messages are atomic).
        const auto first_flags = frames.empty() ? zmq::send_flags::dontwait
                                                : zmq::send_flags::sndmore | zmq::send_flags::dontwait;
        while (!sock->send(zmq::const_buffer(h, sizeof h), first_flags)) {
            if (Clock::now() >= deadline) return no_reply();
            zmq::pollitem_t out[] = {{sock->handle(), 0, ZMQ_POLLOUT, 0}};
            try {
                zmq::poll(out, 1, std::chrono::milliseconds(std::min<int64_t>(ms_until(deadline), 100)));
            } catch (const zmq::error_t& e) {
                if (e.num() != EINTR) throw;
            }
        }
        for (size_t i = 0; i < frames.size(); ++i)
            sock->send(zmq::buffer(frames[i]), i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
        for (;;) {
            const int64_t left = ms_until(deadline);
            if (!poll_in(*sock, static_cast<int>(std::min<int64_t>(left, 100)))) {
                if (Clock::now() >= deadline) return no_reply();
                continue;
            }
            std::vector<zmq::message_t> parts;
            for (;;) {
                zmq::message_t m;
                if (!sock->recv(m, zmq::recv_flags::dontwait)) break;
                const bool more = m.more();
                if (parts.size() < 3) parts.push_back(std::move(m));
                if (!more) break;
            }
            // The server is authenticated with keys, but its replies are still checked.
            if (parts.size() != 2 || parts[0].size() != kReplyHeader ||
                std::memcmp(parts[0].data(), kMagic, 4) != 0)
                return R::error("store at " + endpoint_ + ": malformed reply to " + op_name(op));
            const auto* rb = static_cast<const uint8_t*>(parts[0].data());
            if (get_u64(rb + 8) != id) continue;  // a late reply to an earlier request on this socket
            if (rb[4] != kVersion || rb[5] != op || rb[6] > kTimeout)
                return R::error("store at " + endpoint_ + ": malformed reply to " + op_name(op));
            Reply r{rb[6], parts[1].to_string()};
            if (r.code != kOk) return R::error(r.payload.substr(0, 4096));
            return r;
        }
    } catch (const zmq::error_t& e) {
        return R::error("store at " + endpoint_ + ": " + op_name(op) + " failed: " + e.what());
    }
}

namespace {
// Time the client waits for a blocking op: the server answers at the op's own deadline, so allow
// for the trip back.
int64_t blocking_wait_ms(int64_t timeout_ms) {
    return timeout_ms <= 0 ? std::numeric_limits<int32_t>::max() : timeout_ms + 1000;
}
KvBytes to_bytes(const std::string& s) { return KvBytes(s.begin(), s.end()); }
std::string from_bytes(const KvBytes& b) { return std::string(b.begin(), b.end()); }
}  // namespace

Status KvStoreClient::set(const std::string& key, const KvBytes& value) {
    auto r = request(kSet, 0, {key, from_bytes(value)}, opts_.op_timeout_ms);
    return r ? Status::ok() : r.status();
}

Result<KvBytes> KvStoreClient::get(const std::string& key, int64_t timeout_ms) {
    auto r = request(kGet, timeout_ms, {key}, blocking_wait_ms(timeout_ms));
    if (!r) return r.status();
    return to_bytes(r->payload);
}

Result<int64_t> KvStoreClient::add(const std::string& key, int64_t delta) {
    auto r = request(kAdd, 0, {key, i64_bytes(delta)}, opts_.op_timeout_ms);
    if (!r) return r.status();
    if (r->payload.size() != 8) return Status::error("store at " + endpoint_ + ": add replied with " +
                                                     std::to_string(r->payload.size()) + " bytes");
    return static_cast<int64_t>(get_u64(reinterpret_cast<const uint8_t*>(r->payload.data())));
}

Result<KvBytes> KvStoreClient::compare_set(const std::string& key, const KvBytes& expected, const KvBytes& desired) {
    auto r = request(kCompareSet, 0, {key, from_bytes(expected), from_bytes(desired)}, opts_.op_timeout_ms);
    if (!r) return r.status();
    return to_bytes(r->payload);
}

Result<bool> KvStoreClient::check(const std::vector<std::string>& keys) {
    auto r = request(kCheck, 0, keys, opts_.op_timeout_ms);
    if (!r) return r.status();
    if (r->payload.size() != 1) return Status::error("store at " + endpoint_ + ": check replied with " +
                                                     std::to_string(r->payload.size()) + " bytes");
    return r->payload[0] != 0;
}

Result<bool> KvStoreClient::delete_key(const std::string& key) {
    auto r = request(kDelete, 0, {key}, opts_.op_timeout_ms);
    if (!r) return r.status();
    if (r->payload.size() != 1) return Status::error("store at " + endpoint_ + ": delete replied with " +
                                                     std::to_string(r->payload.size()) + " bytes");
    return r->payload[0] != 0;
}

Result<int64_t> KvStoreClient::num_keys() {
    auto r = request(kNumKeys, 0, {}, opts_.op_timeout_ms);
    if (!r) return r.status();
    if (r->payload.size() != 8) return Status::error("store at " + endpoint_ + ": num_keys replied with " +
                                                     std::to_string(r->payload.size()) + " bytes");
    return static_cast<int64_t>(get_u64(reinterpret_cast<const uint8_t*>(r->payload.data())));
}

Status KvStoreClient::wait(const std::vector<std::string>& keys, int64_t timeout_ms) {
    auto r = request(kWait, timeout_ms, keys, blocking_wait_ms(timeout_ms));
    return r ? Status::ok() : r.status();
}

}  // namespace tw
