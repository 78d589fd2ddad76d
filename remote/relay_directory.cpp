// A coordinator's questions to a relay; see relay_directory.h.
#include "remote/relay_directory.h"

#include <chrono>
#include <thread>
#include <zmq.hpp>

#include "remote/poll.h"
#include "remote/relay_wire.h"

namespace tw {
namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

Result<std::unique_ptr<RelayDirectory>> RelayDirectory::connect(const std::string& relay, const std::string& relay_key,
                                                                const CurveKeyPair& keys) {
    using R = Result<std::unique_ptr<RelayDirectory>>;
    if (keys.empty() || relay_key.empty())
        return R::error("relay " + relay + ": the coordinator needs its keys and the relay's public key");
    std::unique_ptr<RelayDirectory> d(new RelayDirectory());
    d->relay_ = relay;
    d->relay_key_ = relay_key;
    d->keys_ = keys;
    if (Status s = d->dial(); !s) return s;
    return d;
}

Status RelayDirectory::dial() {
    try {
        if (sock_) sock_->close();
        sock_.reset();
        ctx_ = std::make_unique<zmq::context_t>();  // nothing of the old connection is left behind
        sock_ = std::make_unique<zmq::socket_t>(*ctx_, zmq::socket_type::dealer);
        sock_->set(zmq::sockopt::linger, 0);
        sock_->set(zmq::sockopt::maxmsgsize, int64_t{1} << 20);
        curve_client(*sock_, keys_, relay_key_);
        sock_->connect(relay_);
    } catch (const zmq::error_t& e) {
        return Status::error("relay " + relay_ + ": " + e.what());
    }
    return Status::ok();
}

RelayDirectory::~RelayDirectory() {
    if (sock_) sock_->close();
}

Result<std::vector<std::string>> RelayDirectory::ask(const char* kind, const std::string& node_key, int timeout_ms) {
    // A connection that went quiet for good (a relay restarted, a path that dropped it) is dialled
    // afresh once before the question counts as unanswered.
    auto a = ask_once(kind, node_key, timeout_ms / 2);
    if (a) return a;
    if (Status s = dial(); !s) return s;
    return ask_once(kind, node_key, timeout_ms / 2);
}

Result<std::vector<std::string>> RelayDirectory::ask_once(const char* kind, const std::string& node_key, int timeout_ms) {
    using R = Result<std::vector<std::string>>;
    const std::string answer = std::string(kind) == "lookup" ? "found" : "stats";
    sock_->send(zmq::buffer(std::string(kind)), zmq::send_flags::sndmore);
    sock_->send(zmq::buffer(node_key), zmq::send_flags::none);
    const auto until = Clock::now() + std::chrono::milliseconds(timeout_ms);
    while (Clock::now() < until) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
        if (!poll_in(*sock_, static_cast<int>(std::max<int64_t>(1, left)))) continue;
        std::vector<zmq::message_t> parts;
        if (!relay_wire::recv_all(*sock_, parts)) continue;
        std::vector<std::string> text;
        for (auto& p : parts) text.push_back(p.to_string());
        if (text.size() == 2 && text[0] == "error") return R::error("relay " + relay_ + " refused: " + text[1]);
        if (text.size() == 3 && text[0] == answer && text[1] == node_key) return text;
        // an answer to an earlier question that timed out: skip it
    }
    return R::error("relay " + relay_ + " did not answer within " + std::to_string(2 * timeout_ms / 1000) +
                    " s (is it running, and does it admit this coordinator's key?)");
}

Result<std::map<std::string, std::string>> RelayDirectory::wait_for(
    const std::vector<std::string>& node_keys, double timeout_s, const std::function<void(const std::string&)>& progress,
    const std::function<bool()>& stopped) {
    using R = Result<std::map<std::string, std::string>>;
    std::map<std::string, std::string> found;
    const auto t0 = Clock::now();
    auto last_line = t0;
    for (;;) {
        std::vector<std::string> missing;
        for (const auto& k : node_keys) {
            if (found.count(k)) continue;
            auto a = ask("lookup", k, 5000);
            if (!a) return a.status();
            if (!(*a)[2].empty()) found[k] = (*a)[2];
            else missing.push_back(k);
        }
        if (missing.empty()) return found;
        const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
        auto names = [&] {
            std::string s;
            for (const auto& k : missing) s += (s.empty() ? "" : ", ") + key_tag(k);
            return s;
        };
        if (waited >= timeout_s)
            return R::error("relay " + relay_ + ": " + std::to_string(missing.size()) + " of " +
                            std::to_string(node_keys.size()) + " nodes never joined within " +
                            std::to_string(static_cast<int>(timeout_s)) + " s (cluster.join_timeout_s): " + names());
        if (stopped && stopped()) return R::error("stopped on request while waiting for nodes to join the relay");
        if (progress && std::chrono::duration<double>(Clock::now() - last_line).count() >= 3) {
            progress("waiting for " + std::to_string(missing.size()) + " of " + std::to_string(node_keys.size()) +
                     " nodes to join relay " + relay_ + " (" + std::to_string(static_cast<int>(waited)) + " of " +
                     std::to_string(static_cast<int>(timeout_s)) + " s): " + names());
            last_line = Clock::now();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
}

Result<RelayCounters> RelayDirectory::counters(const std::string& node_key, int timeout_ms) {
    auto a = ask("stats", node_key, timeout_ms);
    if (!a) return a.status();
    return counters_from_json((*a)[2]);
}

}  // namespace tw
