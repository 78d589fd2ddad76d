// The hub relay and its client; see hub_relay.h.
#include "remote/hub_relay.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>
#include <zmq.hpp>

#include "core/little_endian.h"
#include "remote/poll.h"

namespace tw {
namespace {

using Clock = std::chrono::steady_clock;
constexpr char kMagic[4] = {'T', 'W', 'H', 'B'};
constexpr uint8_t kVersion = 2;
constexpr uint8_t kUpload = 1, kDownload = 2;
constexpr uint8_t kOk = 0, kRefused = 1;
constexpr size_t kRequestHeader = 48, kReplyHeader = 16;
constexpr int kOuter = static_cast<int>(LinkClass::kOuterSync);

using le::get_f64;
using le::get_u32;
using le::get_u64;
using le::put_f64;
using le::put_u32;
using le::put_u64;

void request_header(uint8_t* h, uint8_t op, uint32_t rank, uint32_t members, uint64_t round, uint64_t len,
                    double clock, uint64_t token) {
    std::memset(h, 0, kRequestHeader);
    std::memcpy(h, kMagic, 4);
    h[4] = kVersion;
    h[5] = op;
    put_u32(h + 8, rank);
    put_u32(h + 12, members);
    put_u64(h + 16, round);
    put_u64(h + 24, len);
    put_f64(h + 32, clock);
    put_u64(h + 40, token);
}

int64_t ms_until(Clock::time_point t) {
    return std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count());
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Relay

Result<std::unique_ptr<HubRelay>> HubRelay::start(std::shared_ptr<zmq::context_t> ctx, const std::string& endpoint,
                                                  HubRelayOptions opts) {
    using R = Result<std::unique_ptr<HubRelay>>;
    if (opts.members < 2) return R::error("hub: a relay serves at least 2 members, got " + std::to_string(opts.members));
    const bool curve = !opts.keys.empty();
    if (curve && opts.member_keys.size() != static_cast<size_t>(opts.members))
        return R::error("hub: " + std::to_string(opts.member_keys.size()) + " member keys for " +
                        std::to_string(opts.members) + " members");
    std::unique_ptr<HubRelay> s(new HubRelay());
    s->opts_ = std::move(opts);
    s->ctx_ = curve ? std::make_shared<zmq::context_t>() : std::move(ctx);
    if (curve) {
        auto zap = ZapHandler::start(s->ctx_, s->opts_.log);
        if (!zap) return zap.status();
        s->zap_ = std::move(*zap);
        s->zap_->allow(kZapHub, s->opts_.member_keys);
    }
    // A frame more than 64 KiB over the payload limit drops its sender's connection unread.
    auto bound = bind_router(*s->ctx_, endpoint, static_cast<int64_t>(s->opts_.max_payload_bytes + (uint64_t{64} << 10)),
                             s->opts_.keys, kZapHub);
    if (!bound) return R::error("hub: " + bound.message());
    s->router_ = std::move(*bound);
    HubRelay* raw = s.get();
    s->thread_ = std::thread([raw] { raw->serve(); });
    return s;
}

HubRelay::~HubRelay() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    close_router(router_);
}

ByteCounters HubRelay::counters() const {
    std::lock_guard<std::mutex> lock(counters_mu_);
    return counters_;
}

void HubRelay::serve() {
    zmq::socket_t& sock = *router_.sock;
    const int R = opts_.members;
    struct Round {
        std::vector<std::optional<std::vector<uint8_t>>> payload;
        std::vector<double> clocks;
        int uploaded = 0, downloaded = 0;
    };
    std::map<uint64_t, Round> rounds;
    std::vector<uint64_t> next_upload(R, 0), next_download(R, 0);
    struct Pending {
        std::string peer;
        int rank;
        uint64_t round;
    };
    std::vector<Pending> pending;

    auto reply = [&](const std::string& peer, uint8_t op, uint8_t status, uint64_t round,
                     std::vector<zmq::const_buffer> frames) {
        uint8_t h[kReplyHeader] = {};
        std::memcpy(h, kMagic, 4);
        h[4] = kVersion;
        h[5] = op;
        h[6] = status;
        put_u64(h + 8, round);
        try {
            sock.send(zmq::buffer(peer), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
            sock.send(zmq::const_buffer(h, sizeof h),
                      frames.empty() ? zmq::send_flags::dontwait : zmq::send_flags::sndmore | zmq::send_flags::dontwait);
            for (size_t i = 0; i < frames.size(); ++i)
                sock.send(frames[i], i + 1 < frames.size() ? zmq::send_flags::sndmore | zmq::send_flags::dontwait
                                                           : zmq::send_flags::dontwait);
        } catch (const zmq::error_t&) {
        }
    };
    auto refuse = [&](const std::string& peer, uint8_t op, uint64_t round, const std::string& why) {
        ++refused_;
        if (opts_.log) opts_.log("hub: refused: " + why);
        const std::string text = "hub: " + why;
        reply(peer, op, kRefused, round, {zmq::const_buffer(text.data(), text.size())});
    };
    // Answers one download of a complete round; drops the round once every member has it.
    auto serve_download = [&](const Pending& p) {
        Round& r = rounds.at(p.round);
        std::vector<uint8_t> clocks(8 * R);
        for (int i = 0; i < R; ++i) put_f64(clocks.data() + 8 * i, r.clocks[i]);
        std::vector<zmq::const_buffer> frames{zmq::const_buffer(clocks.data(), clocks.size())};
        uint64_t bytes = 0, msgs = 0;
        for (int i = 0; i < R; ++i) {
            if (i == p.rank) continue;
            frames.push_back(zmq::const_buffer(r.payload[i]->data(), r.payload[i]->size()));
            bytes += r.payload[i]->size();
            ++msgs;
        }
        {  // counted before the reply leaves, so a member that holds it sees the relay's count include it
            std::lock_guard<std::mutex> lock(counters_mu_);
            counters_.sent_bytes[kOuter] += bytes;
            counters_.sent_msgs[kOuter] += msgs;
        }
        reply(p.peer, kDownload, kOk, p.round, std::move(frames));
        if (++r.downloaded == R) rounds.erase(p.round);
    };

    std::vector<zmq::message_t> parts;
    while (!stop_.load()) {
        bool readable = false;
        try {
            readable = poll_in(sock, 100);
        } catch (const zmq::error_t&) {
            break;
        }
        if (!readable) continue;
        parts.clear();
        try {
            for (;;) {
                zmq::message_t m;
                if (!sock.recv(m, zmq::recv_flags::dontwait)) break;
                const bool more = m.more();
                if (parts.size() < 4) parts.push_back(std::move(m));  // more frames than any request: dropped
                if (!more) break;
            }
        } catch (const zmq::error_t&) {
            continue;
        }
        if (parts.size() < 2) continue;
        const std::string peer = parts[0].to_string();
        const auto& h = parts[1];
        const auto* hb = static_cast<const uint8_t*>(h.data());
        if (h.size() != kRequestHeader || std::memcmp(hb, kMagic, 4) != 0) {
            refuse(peer, 0, 0, "a request starts with a " + std::to_string(kRequestHeader) + "-byte TWHB header, got " +
                                   std::to_string(h.size()) + " bytes");
            continue;
        }
        const uint8_t op = hb[5];
        const uint32_t rank = get_u32(hb + 8), members = get_u32(hb + 12);
        const uint64_t round = get_u64(hb + 16), len = get_u64(hb + 24);
        const double clock = get_f64(hb + 32);
        const uint64_t token = get_u64(hb + 40);
        if (hb[4] != kVersion) {
            refuse(peer, op, round, "version " + std::to_string(hb[4]) + " (this relay speaks " +
                                        std::to_string(kVersion) + ")");
            continue;
        }
        if (op != kUpload && op != kDownload) {
            refuse(peer, op, round, "unknown op " + std::to_string(op));
            continue;
        }
        if (hb[6] != 0 || hb[7] != 0) {
            refuse(peer, op, round, "reserved header bytes are not zero");
            continue;
        }
        if (members != static_cast<uint32_t>(R) || rank >= members) {
            refuse(peer, op, round, "rank " + std::to_string(rank) + " of " + std::to_string(members) +
                                        " members; this relay serves " + std::to_string(R));
            continue;
        }
        if (token != opts_.token) {
            refuse(peer, op, round, "replica " + std::to_string(rank) + ": the request does not carry this run's token");
            continue;
        }
        if (!opts_.member_keys.empty() && peer_key(parts[1]) != opts_.member_keys[rank]) {
            refuse(peer, op, round, "a request for replica " + std::to_string(rank) + " came with key " +
                                        key_tag(peer_key(parts[1])) + "…, not that replica's");
            continue;
        }
        const std::string who = "replica " + std::to_string(rank);
        if (op == kUpload) {
            if (parts.size() != 3) {
                refuse(peer, op, round, who + ": an upload is a header and one payload frame, got " +
                                            std::to_string(parts.size() - 1) + " frames");
                continue;
            }
            if (round != next_upload[rank]) {
                refuse(peer, op, round, who + " uploaded round " + std::to_string(round) + "; its next round is " +
                                            std::to_string(next_upload[rank]));
                continue;
            }
            if (next_download[rank] != next_upload[rank]) {  // bounds what one member can make the relay hold
                refuse(peer, op, round, who + " uploaded round " + std::to_string(round) + " before downloading round " +
                                            std::to_string(next_download[rank]));
                continue;
            }
            if (len > opts_.max_payload_bytes) {
                refuse(peer, op, round, who + ": payload of " + std::to_string(len) + " bytes exceeds the limit of " +
                                            std::to_string(opts_.max_payload_bytes));
                continue;
            }
            if (parts[2].size() != len) {
                refuse(peer, op, round, who + ": round " + std::to_string(round) + " declares " + std::to_string(len) +
                                            " payload bytes but carries " + std::to_string(parts[2].size()));
                continue;
            }
            if (!std::isfinite(clock) || clock < 0) {
                refuse(peer, op, round, who + ": its simulated clock is not a finite time");
                continue;
            }
            Round& r = rounds[round];
            if (r.payload.empty()) r.payload.resize(R), r.clocks.assign(R, 0.0);
            const auto* d = static_cast<const uint8_t*>(parts[2].data());
            r.payload[rank] = std::vector<uint8_t>(d, d + parts[2].size());
            r.clocks[rank] = clock;
            ++r.uploaded;
            ++next_upload[rank];
            {
                std::lock_guard<std::mutex> lock(counters_mu_);
                counters_.recv_bytes[kOuter] += len;
                counters_.recv_msgs[kOuter] += 1;
            }
            reply(peer, kUpload, kOk, round, {});
            if (r.uploaded == R) {
                std::vector<Pending> ready, rest;
                for (auto& p : pending) (p.round == round ? ready : rest).push_back(std::move(p));
                pending = std::move(rest);
                for (auto& p : ready) serve_download(p);
            }
        } else {
            if (parts.size() != 2) {
                refuse(peer, op, round, who + ": a download is a header alone");
                continue;
            }
            if (round != next_download[rank] || round >= next_upload[rank]) {
                refuse(peer, op, round, who + " asked for round " + std::to_string(round) +
                                            "; it may download only the round it uploaded last (" +
                                            (next_upload[rank] == 0 ? std::string("none yet")
                                                                    : std::to_string(next_upload[rank] - 1)) +
                                            ")");
                continue;
            }
            ++next_download[rank];
            Pending p{peer, static_cast<int>(rank), round};
            if (rounds.at(round).uploaded == R) serve_download(p);
            else pending.push_back(std::move(p));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Client

Result<std::unique_ptr<HubClient>> HubClient::connect(std::shared_ptr<zmq::context_t> ctx, HubClientOptions o) {
    using R = Result<std::unique_ptr<HubClient>>;
    if (o.members < 2 || o.rank < 0 || o.rank >= o.members)
        return R::error("hub client: rank " + std::to_string(o.rank) + " of " + std::to_string(o.members));
    if (!o.own.empty() && !is_z85_key(o.relay_key))
        return R::error("hub client: this node has CurveZMQ keys but its role names no relay key");
    std::unique_ptr<HubClient> c(new HubClient());
    c->ctx_ = std::move(ctx);
    c->o_ = std::move(o);
    try {
        c->sock_ = std::make_unique<zmq::socket_t>(*c->ctx_, zmq::socket_type::dealer);
        c->sock_->set(zmq::sockopt::linger, 0);
        if (!c->o_.own.empty()) curve_client(*c->sock_, c->o_.own, c->o_.relay_key);
        c->sock_->connect(c->o_.endpoint);
    } catch (const zmq::error_t& e) {
        return R::error("hub client: cannot connect " + c->o_.endpoint + ": " + e.what());
    }
    return c;
}

HubClient::~HubClient() {
    if (sock_) sock_->close();
}

namespace {
// Receives one reply (all its frames) within `timeout_ms`; checks its header against op and round.
Result<std::vector<zmq::message_t>> await_reply(zmq::socket_t& s, uint8_t op, uint64_t round, int64_t timeout_ms,
                                                const std::string& endpoint,
                                                const std::function<bool()>& abort = {}) {
    using R = Result<std::vector<zmq::message_t>>;
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        const int64_t left = ms_until(deadline);
        if (left <= 0) return R::error("hub: no answer from the relay at " + endpoint + " within " +
                                       std::to_string(timeout_ms) + " ms");
        if (abort && abort()) return R::error("collective: aborted (stop requested)");
        if (!poll_in(s, static_cast<int>(std::min<int64_t>(left, 100)))) continue;
        std::vector<zmq::message_t> parts;
        for (;;) {
            zmq::message_t m;
            if (!s.recv(m, zmq::recv_flags::none)) break;
            const bool more = m.more();
            parts.push_back(std::move(m));
            if (!more) break;
        }
        if (parts.empty() || parts[0].size() != kReplyHeader ||
            std::memcmp(parts[0].data(), kMagic, 4) != 0)
            return R::error("hub: the relay's reply does not parse");
        const auto* h = static_cast<const uint8_t*>(parts[0].data());
        if (h[6] == kRefused) {
            const std::string text = parts.size() > 1 ? parts[1].to_string() : "hub: refused";
            return R::error(text);
        }
        if (h[5] != op || get_u64(h + 8) != round) return R::error("hub: a reply for another request");
        return parts;
    }
}
}  // namespace

Status HubClient::raw_upload(uint32_t rank, uint32_t members, uint64_t round, uint64_t declared_len,
                             const std::vector<uint8_t>& payload, int64_t timeout_ms) {
    uint8_t h[kRequestHeader];
    request_header(h, kUpload, rank, members, round, declared_len, 0.0, o_.token);
    try {
        sock_->send(zmq::const_buffer(h, sizeof h), zmq::send_flags::sndmore);
        sock_->send(zmq::const_buffer(payload.data(), payload.size()), zmq::send_flags::none);
        auto r = await_reply(*sock_, kUpload, round, timeout_ms, o_.endpoint);
        if (!r) return r.status();
    } catch (const zmq::error_t& e) {
        return Status::error(std::string("hub: ") + e.what());
    }
    return Status::ok();
}

Status HubClient::raw_download(uint32_t rank, uint32_t members, uint64_t round, int64_t timeout_ms) {
    uint8_t h[kRequestHeader];
    request_header(h, kDownload, rank, members, round, 0, 0.0, o_.token);
    try {
        sock_->send(zmq::const_buffer(h, sizeof h), zmq::send_flags::none);
        auto r = await_reply(*sock_, kDownload, round, timeout_ms, o_.endpoint);
        if (!r) return r.status();
    } catch (const zmq::error_t& e) {
        return Status::error(std::string("hub: ") + e.what());
    }
    return Status::ok();
}

Status HubClient::upload(uint64_t round, const std::vector<uint8_t>& mine, double clock, int64_t timeout_ms,
                         const std::function<bool()>& abort) {
    uint8_t h[kRequestHeader];
    request_header(h, kUpload, static_cast<uint32_t>(o_.rank), static_cast<uint32_t>(o_.members), round, mine.size(),
                   clock, o_.token);
    sock_->send(zmq::const_buffer(h, sizeof h), zmq::send_flags::sndmore);
    sock_->send(zmq::const_buffer(mine.data(), mine.size()), zmq::send_flags::none);
    auto r = await_reply(*sock_, kUpload, round, timeout_ms, o_.endpoint, abort);
    if (!r) return r.status();
    counters_.sent_bytes[kOuter] += mine.size();
    counters_.sent_msgs[kOuter] += 1;
    return Status::ok();
}

Result<std::vector<std::vector<uint8_t>>> HubClient::round(uint64_t round, const std::vector<uint8_t>& mine,
                                                           double sim_clock_s, std::vector<double>* clocks,
                                                           int64_t timeout_ms, const std::function<bool()>& abort) {
    using R = Result<std::vector<std::vector<uint8_t>>>;
    try {
        if (Status s = upload(round, mine, sim_clock_s, timeout_ms, abort); !s) return s;
        uint8_t h[kRequestHeader];
        request_header(h, kDownload, static_cast<uint32_t>(o_.rank), static_cast<uint32_t>(o_.members), round, 0, 0.0,
                       o_.token);
        sock_->send(zmq::const_buffer(h, sizeof h), zmq::send_flags::none);
        auto parts = await_reply(*sock_, kDownload, round, timeout_ms, o_.endpoint, abort);
        if (!parts) return parts.status();
        const size_t R_ = static_cast<size_t>(o_.members);
        if (parts->size() != R_ + 1 || (*parts)[1].size() != 8 * R_)
            return R::error("hub: the relay's download for round " + std::to_string(round) + " has " +
                            std::to_string(parts->size()) + " frames, expected " + std::to_string(R_ + 1));
        const auto* cb = static_cast<const uint8_t*>((*parts)[1].data());
        if (clocks) {
            clocks->resize(R_);
            for (size_t i = 0; i < R_; ++i) (*clocks)[i] = get_f64(cb + 8 * i);
        }
        std::vector<std::vector<uint8_t>> all(R_);
        size_t f = 2;
        for (size_t i = 0; i < R_; ++i) {
            if (static_cast<int>(i) == o_.rank) {
                all[i] = mine;
                continue;
            }
            const auto& m = (*parts)[f++];
            const auto* d = static_cast<const uint8_t*>(m.data());
            all[i].assign(d, d + m.size());
            counters_.recv_bytes[kOuter] += m.size();
            counters_.recv_msgs[kOuter] += 1;
        }
        return all;
    } catch (const zmq::error_t& e) {
        return R::error(std::string("hub: ") + e.what());
    }
}

}  // namespace tw
