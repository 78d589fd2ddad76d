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
constexpr uint8_t kVersion = 3;
constexpr uint8_t kUpload = 1, kDownload = 2;
constexpr uint8_t kOk = 0, kRefused = 1, kGivenUp = 2;
constexpr size_t kRequestHeader = 56, kReplyHeader = RouterServer::kReplyHeaderBytes;
constexpr int kOuter = static_cast<int>(LinkClass::kOuterSync);

using le::get_f64;
using le::get_u32;
using le::get_u64;
using le::put_f64;
using le::put_u32;
using le::put_u64;

void request_header(uint8_t* h, uint8_t op, uint32_t rank, uint32_t members, uint64_t round, uint64_t len,
                    double clock, uint64_t token, uint64_t mask) {
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
    put_u64(h + 48, mask);
}

// "{0, 2} (mask 0x5)": a round's members as a reader of an error wants them.
std::string mask_text(uint64_t mask) {
    std::string out = "{";
    for (int i = 0; i < 64; ++i)
        if (mask >> i & 1) out += (out.size() > 1 ? ", " : "") + std::to_string(i);
    char hex[32];
    std::snprintf(hex, sizeof hex, "} (mask 0x%llx)", static_cast<unsigned long long>(mask));
    return out + hex;
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
    if (opts.members < 2 || opts.members > kMaxHubMembers)
        return R::error("hub: a relay serves 2 to " + std::to_string(kMaxHubMembers) + " members (a round names its members "
                        "in a 64-bit mask), got " + std::to_string(opts.members));
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
    HubRelay* raw = s.get();
    if (Status st = s->server_.start(*s->ctx_, endpoint,
                                     static_cast<int64_t>(s->opts_.max_payload_bytes + (uint64_t{64} << 10)),
                                     s->opts_.keys, kZapHub, [raw] { raw->serve(); });
        !st)
        return R::error("hub: " + st.message());
    return s;
}

HubRelay::~HubRelay() {
    server_.stop();
}

ByteCounters HubRelay::counters() const {
    std::lock_guard<std::mutex> lock(counters_mu_);
    return counters_;
}

void HubRelay::serve() {
    zmq::socket_t& sock = server_.socket();
    const int R = opts_.members;
    const uint64_t all_ranks = R == 64 ? ~uint64_t{0} : (uint64_t{1} << R) - 1;
    struct Round {
        uint64_t mask = 0;  // the round's members (bit r = rank r), as its first upload named them
        int first = 0;      // the rank whose upload opened the round (named when a mask disagrees)
        std::vector<std::optional<std::vector<uint8_t>>> payload;
        std::vector<double> clocks;
        uint64_t uploaded = 0, served = 0;  // bit masks of ranks
    };
    // Every round held is some member's newest upload (see the header): at most R rounds.
    std::map<uint64_t, Round> rounds;
    struct Member {
        std::optional<uint64_t> newest;  // its newest round uploaded
        bool asked = false;              // it asked for that round's download
        bool served = false;             // and was answered
        std::string given_up;            // why its newest round was dropped, if it was
    };
    std::vector<Member> member(R);
    struct Pending {
        std::string peer;
        int rank;
        uint64_t round;
    };
    std::vector<Pending> pending;

    auto reply = [&](const std::string& peer, uint8_t op, uint8_t status, uint64_t round,
                     const std::vector<std::string_view>& frames) {
        server_.reply(peer, {kMagic, kVersion, op, status, round}, frames);
    };
    auto refuse = [&](const std::string& peer, uint8_t op, uint64_t round, const std::string& why) {
        ++refused_;
        if (opts_.log) opts_.log("hub: refused: " + why);
        const std::string text = "hub: " + why;
        reply(peer, op, kRefused, round, {text});
    };
    auto give_up_reply = [&](const Pending& p, const std::string& why) {
        const std::string text = "hub: " + why;
        reply(p.peer, kDownload, kGivenUp, p.round, {text});
    };
    // A round a member left without its download (it abandoned the attempt) can no longer finish
    // alike for everyone: it is dropped, and whoever waits for it is told so.
    auto drop_round = [&](uint64_t n, const std::string& why) {
        if (!rounds.erase(n)) return;
        held_rounds_ = rounds.size();
        for (auto& m : member)
            if (m.newest == n) m.given_up = why;
        std::vector<Pending> rest;
        for (auto& p : pending) {
            if (p.round == n) give_up_reply(p, why);
            else rest.push_back(std::move(p));
        }
        pending = std::move(rest);
    };
    // Answers one download of a complete round (the members' clocks in rank order, their payloads
    // but the downloader's own); drops the round once every member has it.
    auto serve_download = [&](const Pending& p) {
        Round& r = rounds.at(p.round);
        std::vector<uint8_t> clocks;
        for (int i = 0; i < R; ++i) {
            if (!(r.mask >> i & 1)) continue;
            clocks.resize(clocks.size() + 8);
            put_f64(clocks.data() + clocks.size() - 8, r.clocks[i]);
        }
        std::vector<std::string_view> frames{
            std::string_view(reinterpret_cast<const char*>(clocks.data()), clocks.size())};
        uint64_t bytes = 0, msgs = 0;
        for (int i = 0; i < R; ++i) {
            if (i == p.rank || !(r.mask >> i & 1)) continue;
            frames.emplace_back(reinterpret_cast<const char*>(r.payload[i]->data()), r.payload[i]->size());
            bytes += r.payload[i]->size();
            ++msgs;
        }
        {  // counted before the reply leaves, so a member that holds it sees the relay's count include it
            std::lock_guard<std::mutex> lock(counters_mu_);
            counters_.sent_bytes[kOuter] += bytes;
            counters_.sent_msgs[kOuter] += msgs;
        }
        member[p.rank].served = true;
        r.served |= uint64_t{1} << p.rank;
        const bool done = r.served == r.mask;
        held_rounds_ = rounds.size() - (done ? 1 : 0);
        reply(p.peer, kDownload, kOk, p.round, frames);  // copies the payloads: erasable after
        if (done) rounds.erase(p.round);
    };

    std::vector<zmq::message_t> parts;
    while (!server_.stopping()) {
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
        if (h.size() < 5 || std::memcmp(hb, kMagic, 4) != 0) {
            refuse(peer, 0, 0, "a request starts with a " + std::to_string(kRequestHeader) + "-byte TWHB header, got " +
                                   std::to_string(h.size()) + " bytes");
            continue;
        }
        if (hb[4] != kVersion) {  // before the length: an older member's header is shorter
            refuse(peer, 0, 0, "version " + std::to_string(hb[4]) + " (this relay speaks " + std::to_string(kVersion) +
                                   ")");
            continue;
        }
        if (h.size() != kRequestHeader) {
            refuse(peer, 0, 0, "a request starts with a " + std::to_string(kRequestHeader) + "-byte TWHB header, got " +
                                   std::to_string(h.size()) + " bytes");
            continue;
        }
        const uint8_t op = hb[5];
        const uint32_t rank = get_u32(hb + 8), members = get_u32(hb + 12);
        const uint64_t round = get_u64(hb + 16), len = get_u64(hb + 24);
        const double clock = get_f64(hb + 32);
        const uint64_t token = get_u64(hb + 40);
        const uint64_t mask = get_u64(hb + 48);
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
        if (fenced_.load() >> rank & 1) {
            refuse(peer, op, round, who + " was counted lost by the coordinator: its requests are refused until it is "
                                          "taken back");
            continue;
        }
        if ((mask & ~all_ranks) != 0 || !(mask >> rank & 1)) {
            refuse(peer, op, round, who + ": round " + std::to_string(round) + " names members " + mask_text(mask) +
                                        ", which " + ((mask & ~all_ranks) ? "are not all ranks below " + std::to_string(R)
                                                                           : std::string("leave out the sender")));
            continue;
        }
        Member& me = member[rank];
        if (op == kUpload) {
            if (parts.size() != 3) {
                refuse(peer, op, round, who + ": an upload is a header and one payload frame, got " +
                                            std::to_string(parts.size() - 1) + " frames");
                continue;
            }
            if (me.newest && round <= *me.newest) {
                refuse(peer, op, round, round == *me.newest
                                            ? who + " uploaded round " + std::to_string(round) + " twice"
                                            : who + " uploaded round " + std::to_string(round) + " after round " +
                                                  std::to_string(*me.newest) + " (a member's rounds only go up)");
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
            if (auto it = rounds.find(round); it != rounds.end() && it->second.mask != mask) {
                refuse(peer, op, round, who + " names members " + mask_text(mask) + " for round " +
                                            std::to_string(round) + ", but replica " + std::to_string(it->second.first) +
                                            "'s upload named " + mask_text(it->second.mask));
                continue;
            }
            // Its previous round, left without a download, is given up (the member abandoned it).
            if (me.newest && !me.served)
                drop_round(*me.newest, "round " + std::to_string(*me.newest) + " was given up: " + who +
                                           " moved on to round " + std::to_string(round) + " without its download");
            Round& r = rounds[round];
            if (r.payload.empty()) {
                r.payload.resize(R);
                r.clocks.assign(R, 0.0);
                r.mask = mask;
                r.first = static_cast<int>(rank);
            }
            const auto* d = static_cast<const uint8_t*>(parts[2].data());
            r.payload[rank] = std::vector<uint8_t>(d, d + parts[2].size());
            r.clocks[rank] = clock;
            r.uploaded |= uint64_t{1} << rank;
            me = Member{round, false, false, {}};
            held_rounds_ = rounds.size();
            {
                std::lock_guard<std::mutex> lock(counters_mu_);
                counters_.recv_bytes[kOuter] += len;
                counters_.recv_msgs[kOuter] += 1;
            }
            reply(peer, kUpload, kOk, round, {});
            if (r.uploaded == r.mask) {
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
            if (!me.newest || round != *me.newest || me.asked) {
                refuse(peer, op, round, who + " asked for round " + std::to_string(round) +
                                            "; it may download only the round it uploaded last (" +
                                            (me.newest ? std::to_string(*me.newest) : std::string("none yet")) +
                                            "), once");
                continue;
            }
            me.asked = true;
            Pending p{peer, static_cast<int>(rank), round};
            auto it = rounds.find(round);
            // Dropped since its upload (perhaps begun again by a member that came late, without
            // this member's payload): said so, as to those already waiting.
            if (it == rounds.end() || !(it->second.uploaded >> rank & 1)) {
                give_up_reply(p, me.given_up);
                continue;
            }
            if (it->second.mask != mask) {
                refuse(peer, op, round, who + " asks for round " + std::to_string(round) + " among members " +
                                            mask_text(mask) + ", but the round is among " + mask_text(it->second.mask));
                continue;
            }
            if (it->second.uploaded == it->second.mask) serve_download(p);
            else pending.push_back(std::move(p));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Client

Result<std::unique_ptr<HubClient>> HubClient::connect(std::shared_ptr<zmq::context_t> ctx, HubClientOptions o) {
    using R = Result<std::unique_ptr<HubClient>>;
    if (o.members < 2 || o.members > kMaxHubMembers || o.rank < 0 || o.rank >= o.members)
        return R::error("hub client: rank " + std::to_string(o.rank) + " of " + std::to_string(o.members) +
                        " (a hub serves 2 to " + std::to_string(kMaxHubMembers) + " members)");
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
// One reply as read: its header's op, status and round, and every frame.
struct Reply {
    uint8_t op = 0, status = 0;
    uint64_t round = 0;
    std::vector<zmq::message_t> parts;
};

// Receives one reply (all its frames) within `wait_ms`; none = nothing came. Replies to a request
// of an earlier round (a download given up by an abandoned attempt, answered since) are skipped.
Result<std::optional<Reply>> read_reply(zmq::socket_t& s, uint64_t round, int64_t wait_ms) {
    using R = Result<std::optional<Reply>>;
    const auto deadline = Clock::now() + std::chrono::milliseconds(wait_ms);
    for (;;) {
        if (!poll_in(s, static_cast<int>(ms_until(deadline)))) return std::optional<Reply>{};
        Reply r;
        for (;;) {
            zmq::message_t m;
            if (!s.recv(m, zmq::recv_flags::dontwait)) break;
            const bool more = m.more();
            r.parts.push_back(std::move(m));
            if (!more) break;
        }
        if (r.parts.empty() || r.parts[0].size() != kReplyHeader || std::memcmp(r.parts[0].data(), kMagic, 4) != 0)
            return R::error("hub: the relay's reply does not parse");
        const auto* h = static_cast<const uint8_t*>(r.parts[0].data());
        r.op = h[5];
        r.status = h[6];
        r.round = get_u64(h + 8);
        if (r.round < round && r.status != kRefused) continue;  // a stale answer
        return std::optional<Reply>(std::move(r));
    }
}

// Waits up to `timeout_ms` for the reply to (op, round); fails on a refusal (with the relay's text),
// a reply to another request, `abort`, or the timeout.
Result<Reply> await_reply(zmq::socket_t& s, uint8_t op, uint64_t round, int64_t timeout_ms, const std::string& endpoint,
                          const std::function<bool()>& abort = {}) {
    using R = Result<Reply>;
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        const int64_t left = ms_until(deadline);
        if (left <= 0) return R::error("hub: no answer from the relay at " + endpoint + " within " +
                                       std::to_string(timeout_ms) + " ms");
        if (abort && abort()) return R::error("collective: aborted (stop requested)");
        auto r = read_reply(s, round, std::min<int64_t>(left, 100));
        if (!r) return r.status();
        if (!*r) continue;
        if ((*r)->status != kOk) return R::error((*r)->parts.size() > 1 ? (*r)->parts[1].to_string() : "hub: refused");
        if ((*r)->op != op || (*r)->round != round) return R::error("hub: a reply for another request");
        return std::move(**r);
    }
}
}  // namespace

Status HubClient::raw_upload(uint32_t rank, uint32_t members, uint64_t round, uint64_t declared_len,
                             const std::vector<uint8_t>& payload, int64_t timeout_ms, uint64_t mask) {
    uint8_t h[kRequestHeader];
    if (mask == 0) mask = (members >= 64 ? ~uint64_t{0} : (uint64_t{1} << members) - 1);
    request_header(h, kUpload, rank, members, round, declared_len, 0.0, o_.token, mask);
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

Status HubClient::raw_download(uint32_t rank, uint32_t members, uint64_t round, int64_t timeout_ms, uint64_t mask) {
    uint8_t h[kRequestHeader];
    if (mask == 0) mask = (members >= 64 ? ~uint64_t{0} : (uint64_t{1} << members) - 1);
    request_header(h, kDownload, rank, members, round, 0, 0.0, o_.token, mask);
    try {
        sock_->send(zmq::const_buffer(h, sizeof h), zmq::send_flags::none);
        auto r = await_reply(*sock_, kDownload, round, timeout_ms, o_.endpoint);
        if (!r) return r.status();
    } catch (const zmq::error_t& e) {
        return Status::error(std::string("hub: ") + e.what());
    }
    return Status::ok();
}

Status HubClient::begin_round(uint64_t round, uint64_t mask, const std::vector<uint8_t>& mine, double sim_clock_s,
                              int64_t timeout_ms, const std::function<bool()>& abort) {
    const uint64_t all = o_.members >= 64 ? ~uint64_t{0} : (uint64_t{1} << o_.members) - 1;
    if ((mask & ~all) != 0 || !(mask >> o_.rank & 1))
        return Status::error("hub: round " + std::to_string(round) + " names members " + mask_text(mask) +
                             ", not a set of ranks below " + std::to_string(o_.members) + " holding rank " +
                             std::to_string(o_.rank));
    pending_ = false;
    try {
        uint8_t h[kRequestHeader];
        request_header(h, kUpload, static_cast<uint32_t>(o_.rank), static_cast<uint32_t>(o_.members), round,
                       mine.size(), sim_clock_s, o_.token, mask);
        sock_->send(zmq::const_buffer(h, sizeof h), zmq::send_flags::sndmore);
        sock_->send(zmq::const_buffer(mine.data(), mine.size()), zmq::send_flags::none);
        auto r = await_reply(*sock_, kUpload, round, timeout_ms, o_.endpoint, abort);
        if (!r) return r.status();
        counters_.sent_bytes[kOuter] += mine.size();
        counters_.sent_msgs[kOuter] += 1;
        request_header(h, kDownload, static_cast<uint32_t>(o_.rank), static_cast<uint32_t>(o_.members), round, 0, 0.0,
                       o_.token, mask);
        sock_->send(zmq::const_buffer(h, sizeof h), zmq::send_flags::none);
    } catch (const zmq::error_t& e) {
        return Status::error(std::string("hub: ") + e.what());
    }
    round_ = round;
    mask_ = mask;
    mine_ = mine;
    pending_ = true;
    return Status::ok();
}

Result<HubPoll> HubClient::poll_round(int64_t wait_ms, std::vector<double>* clocks) {
    using R = Result<HubPoll>;
    if (!pending_) return R::error("hub: no round is waiting for its download");
    HubPoll out;
    try {
        auto got = read_reply(*sock_, round_, wait_ms);
        if (!got) return got.status();
        if (!*got) return out;  // nothing yet
        Reply& r = **got;
        pending_ = false;
        const std::string text = r.parts.size() > 1 ? r.parts[1].to_string() : "hub: refused";
        if (r.status == kGivenUp && r.op == kDownload && r.round == round_) {
            out.state = HubPoll::kGivenUp;
            out.why = text;
            return out;
        }
        if (r.status != kOk) return R::error(text);
        if (r.op != kDownload || r.round != round_) return R::error("hub: a reply for another request");
        std::vector<int> ranks;
        for (int i = 0; i < o_.members; ++i)
            if (mask_ >> i & 1) ranks.push_back(i);
        const size_t k = ranks.size();
        if (r.parts.size() != k + 1 || r.parts[1].size() != 8 * k)
            return R::error("hub: the relay's download for round " + std::to_string(round_) + " has " +
                            std::to_string(r.parts.size()) + " frames, expected " + std::to_string(k + 1));
        const auto* cb = static_cast<const uint8_t*>(r.parts[1].data());
        if (clocks) {
            clocks->resize(k);
            for (size_t i = 0; i < k; ++i) (*clocks)[i] = get_f64(cb + 8 * i);
        }
        out.all.resize(k);
        size_t f = 2;
        for (size_t i = 0; i < k; ++i) {
            if (ranks[i] == o_.rank) {
                out.all[i] = std::move(mine_);
                continue;
            }
            const auto& m = r.parts[f++];
            const auto* d = static_cast<const uint8_t*>(m.data());
            out.all[i].assign(d, d + m.size());
            counters_.recv_bytes[kOuter] += m.size();
            counters_.recv_msgs[kOuter] += 1;
        }
        mine_.clear();
        out.state = HubPoll::kDone;
        return out;
    } catch (const zmq::error_t& e) {
        pending_ = false;
        return R::error(std::string("hub: ") + e.what());
    }
}

Result<std::vector<std::vector<uint8_t>>> HubClient::round(uint64_t round, uint64_t mask,
                                                           const std::vector<uint8_t>& mine, double sim_clock_s,
                                                           std::vector<double>* clocks, int64_t timeout_ms,
                                                           const std::function<bool()>& abort) {
    using R = Result<std::vector<std::vector<uint8_t>>>;
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    if (Status s = begin_round(round, mask, mine, sim_clock_s, timeout_ms, abort); !s) return s;
    for (;;) {
        const int64_t left = ms_until(deadline);
        if (left <= 0) {
            pending_ = false;
            return R::error("hub: no answer from the relay at " + o_.endpoint + " within " +
                            std::to_string(timeout_ms) + " ms");
        }
        if (abort && abort()) {
            pending_ = false;
            return R::error("collective: aborted (stop requested)");
        }
        auto p = poll_round(std::min<int64_t>(left, 100), clocks);
        if (!p) return p.status();
        if (p->state == HubPoll::kGivenUp) return R::error(p->why);
        if (p->state == HubPoll::kDone) return std::move(p->all);
    }
}

}  // namespace tw
