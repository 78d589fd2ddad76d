// Fuzz target for the control protocol (remote/protocol.h): decode(), role_from_json,
// metrics_from_rows and scores_from_message on hostile input, and encode → decode round trips of what they accept.
//
// Input → frames. Byte 0 gives the frame count, 1 + (byte0 % 8). Every frame but the last is a
// 2-byte little-endian length L followed by L bytes (fewer if the input ends first); the last
// frame is whatever remains. So a one-frame message is the byte 0x00 followed by the header
// JSON, and the header is frame 0 as on the wire. Empty input gives one empty frame.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>
#include <zmq.hpp>

#include "remote/protocol.h"
#include "tests/fuzz/fuzz_checks.h"

namespace tw::fuzz {
namespace {

std::vector<zmq::message_t> split_frames(const uint8_t* data, size_t n) {
    std::vector<zmq::message_t> frames;
    const size_t count = n == 0 ? 1 : 1 + data[0] % 8;
    size_t at = n == 0 ? 0 : 1;
    for (size_t i = 0; i + 1 < count; ++i) {
        size_t len = 0;
        if (at + 2 <= n) {
            len = data[at] | static_cast<size_t>(data[at + 1]) << 8;
            at += 2;
        } else {
            at = n;
        }
        len = std::min(len, n - at);
        frames.emplace_back(data + at, len);
        at += len;
    }
    frames.emplace_back(data + at, n - at);
    return frames;
}

bool same_role(const NodeRole& a, const NodeRole& b) {
    return a.name == b.name && a.kind == b.kind && a.replica == b.replica && a.replicas == b.replicas &&
           a.rank == b.rank && a.replica_nodes == b.replica_nodes && a.stage == b.stage &&
           a.mesh_endpoints == b.mesh_endpoints && a.mesh_rank == b.mesh_rank && a.mesh_keys == b.mesh_keys &&
           a.mesh_token == b.mesh_token && a.data_fingerprint == b.data_fingerprint &&
           a.grad_group.host == b.grad_group.host &&
           a.grad_group.port == b.grad_group.port && a.grad_group.rank == b.grad_group.rank &&
           a.grad_group.size == b.grad_group.size && a.grad_group.keys == b.grad_group.keys;
}

// Doubles compare bit for bit where both are NaN (a NaN value travels as null).
bool same_number(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

bool same_records(const std::vector<MetricRecord>& a, const std::vector<MetricRecord>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i].node != b[i].node || a[i].step != b[i].step || a[i].outer_step != b[i].outer_step ||
            !same_number(a[i].wall_s, b[i].wall_s) || !same_number(a[i].sim_s, b[i].sim_s) ||
            a[i].name != b[i].name || !same_number(a[i].value, b[i].value))
            return false;
    return true;
}

}  // namespace

Outcome check_control(const uint8_t* data, size_t n) {
    Outcome out;
    const auto frames = split_frames(data, n);
    auto m = decode(frames);
    if (!m) {
        out.error = m.message();
        return out;
    }
    // What decoded must re-encode to the same message: the node answers and the coordinator
    // forwards bodies it decoded.
    auto again = decode(encode(*m));
    if (!again) return {"encode(decoded) does not decode: " + again.message(), ""};
    if (again->kind != m->kind || again->body != m->body || again->blobs != m->blobs)
        return {"encode(decoded) decodes to a different message: " + m->body.dump() + " vs " + again->body.dump(), ""};

    if (const auto role = m->body.find("role"); role != m->body.end()) {
        auto r = role_from_json(*role);
        if (!r) {
            out.error = r.message();
        } else {
            auto back = role_from_json(role_to_json(*r));
            if (!back) return {"role_to_json(role) is refused: " + back.message(), ""};
            if (!same_role(*r, *back)) return {"role does not round-trip: " + role->dump(), ""};
        }
    }
    if (const auto rows = m->body.find("rows"); rows != m->body.end()) {
        auto recs = metrics_from_rows(*rows, "fuzz");
        if (!recs) {
            if (out.error.empty()) out.error = recs.message();
        } else {
            auto back = metrics_from_rows(metric_rows(*recs), "fuzz");
            if (!back) return {"metric_rows(records) is refused: " + back.message(), ""};
            if (!same_records(*recs, *back)) return {"metric rows do not round-trip: " + rows->dump(), ""};
        }
    }
    // An HDEE expert's scores: refused with a reason, or parsed into what re-encodes to the same scores.
    if (m->kind == MsgKind::kScores) {
        auto sc = scores_from_message(*m);
        if (!sc) {
            if (out.error.empty()) out.error = sc.message();
        } else {
            auto back = scores_from_message(scores_message("fuzz", *sc));
            if (!back) return {"scores_message(scores) is refused: " + back.message(), ""};
            bool same = back->seq_len == sc->seq_len && back->train_tokens == sc->train_tokens &&
                        back->sets.size() == sc->sets.size() && back->logp.size() == sc->logp.size() &&
                        same_number(back->unigram, sc->unigram) &&
                        std::memcmp(back->logp.data(), sc->logp.data(), sc->logp.size() * sizeof(float)) == 0;
            for (size_t i = 0; same && i < sc->sets.size(); ++i)
                same = back->sets[i].eval_windows == sc->sets[i].eval_windows &&
                       back->sets[i].prior_windows == sc->sets[i].prior_windows &&
                       back->sets[i].eval_docs == sc->sets[i].eval_docs &&
                       back->sets[i].prior_docs == sc->sets[i].prior_docs;
            if (!same) return {"scores do not round-trip: " + m->body.dump(), ""};
        }
    }
    return out;
}

}  // namespace tw::fuzz

#ifdef TW_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto o = tw::fuzz::check_control(data, size);
    if (!o.violation.empty()) {
        std::fprintf(stderr, "fuzz_control: %s\n", o.violation.c_str());
        __builtin_trap();
    }
    return 0;
}
#endif
