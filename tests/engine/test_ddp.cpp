// DDP over c10d Gloo: ring byte model on hand-computed values, gradient averaging, R replicas on
// halves (thirds) of a batch equal one replica on the whole batch, broadcast and exact counters,
// the trainer's grad-sync hook, and rendezvous failures that end within the timeout.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <zmq.hpp>

#include "engine/algo/ddp.h"
#include "remote/kv_store.h"
#include "engine/train/trainer.h"
#include "tests/engine/micro_run.h"

namespace tw {
namespace {

constexpr int kIntra = static_cast<int>(LinkClass::kIntraReplica);

// A port nobody listens on right now: bind port 0, read what the kernel chose, close.
int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t n = sizeof a;
    EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n), 0);
    ::close(fd);
    return ntohs(a.sin_port);
}

// A client of the rendezvous store at `endpoint` on `ctx` (the nodes' own ZeroMQ store).
std::shared_ptr<KvStore> store_client(const std::shared_ptr<zmq::context_t>& ctx, const std::string& endpoint,
                                      int64_t op_timeout_ms = 20000) {
    KvClientOptions o;
    o.op_timeout_ms = op_timeout_ms;
    return unwrap(KvStoreClient::connect(ctx, endpoint, o));
}

// Runs fn(rank, group) on `size` threads, each with its own GradAllReduce on 127.0.0.1 meeting
// through one store server (as rank 0's node hosts it); returns every rank's error message ("" = ok).
template <class Fn>
std::vector<std::string> on_ranks(int size, Fn fn) {
    auto ctx = std::make_shared<zmq::context_t>();
    auto server = unwrap(KvStoreServer::start(ctx, "tcp://127.0.0.1:*", {}));
    std::vector<std::string> errors(static_cast<size_t>(size));
    std::vector<std::thread> threads;
    for (int r = 0; r < size; ++r) {
        threads.emplace_back([&, r] {
            DdpRendezvous rv;
            rv.store = store_client(ctx, server->endpoint());
            rv.rank = r;
            rv.size = size;
            rv.timeout_ms = 20000;
            auto g = GradAllReduce::create(rv, LinkClass::kIntraReplica);
            if (!g) {
                errors[static_cast<size_t>(r)] = g.message();
                return;
            }
            if (Status s = fn(r, **g); !s) errors[static_cast<size_t>(r)] = s.message();
        });
    }
    for (auto& t : threads) t.join();
    return errors;
}

void expect_all_ok(const std::vector<std::string>& errors) {
    for (size_t r = 0; r < errors.size(); ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

TEST(Ddp, RingBytesMatchHandComputedChunks) {
    // numel 10 over 3 ranks: chunks [4, 3, 3]. Rank 0 sends chunks 0, 2 (reduce-scatter) and 1, 0
    // (all-gather) = 14 values; rank 1 sends 1, 0 and 2, 1 = 13; rank 2 sends 2, 1 and 0, 2 = 13.
    EXPECT_EQ(GradAllReduce::ring_allreduce_bytes(10, 4, 3, 0), 56u);
    EXPECT_EQ(GradAllReduce::ring_allreduce_bytes(10, 4, 3, 1), 52u);
    EXPECT_EQ(GradAllReduce::ring_allreduce_bytes(10, 4, 3, 2), 52u);
    // numel 5 over 2 ranks, 2-byte values: chunks [3, 2]; each rank sends one chunk per phase.
    EXPECT_EQ(GradAllReduce::ring_allreduce_bytes(5, 2, 2, 0), 10u);
    EXPECT_EQ(GradAllReduce::ring_allreduce_bytes(5, 2, 2, 1), 10u);
    // numel 2 over 4 ranks: chunks [1, 1, 0, 0]. Rank 0 sends 0, 3, 2 then 1, 0, 3 = 3 values;
    // rank 1: 1, 0, 3 then 2, 1, 0 = 4; rank 2: 2, 1, 0 then 3, 2, 1 = 3; rank 3: 3, 2, 1 then 0, 3, 2 = 2.
    EXPECT_EQ(GradAllReduce::ring_allreduce_bytes(2, 4, 4, 0), 12u);
    EXPECT_EQ(GradAllReduce::ring_allreduce_bytes(2, 4, 4, 1), 16u);
    EXPECT_EQ(GradAllReduce::ring_allreduce_bytes(2, 4, 4, 2), 12u);
    EXPECT_EQ(GradAllReduce::ring_allreduce_bytes(2, 4, 4, 3), 8u);
    EXPECT_EQ(GradAllReduce::ring_allreduce_bytes(1000, 4, 1, 0), 0u);  // alone: nothing to send
}

TEST(Ddp, RingBytesSumOverRanksIsTwoRMinusOneTimesPayload) {
    for (int64_t numel : {0, 1, 2, 7, 10, 64, 1001, 1328256})
        for (int size = 1; size <= 9; ++size)
            for (int b : {2, 4}) {
                uint64_t sum = 0;
                for (int r = 0; r < size; ++r) sum += GradAllReduce::ring_allreduce_bytes(numel, b, size, r);
                EXPECT_EQ(sum, 2u * static_cast<uint64_t>((size - 1) * numel * b)) << numel << " " << size;
            }
}

TEST(Ddp, AverageGradsIsTheMeanAndFillsMissingGradients) {
    std::vector<std::vector<torch::Tensor>> grads(2);
    auto errors = on_ranks(2, [&](int r, GradAllReduce& g) {
        auto a = torch::zeros({2}, torch::requires_grad()), b = torch::zeros({1}, torch::requires_grad());
        a.mutable_grad() = r == 0 ? torch::tensor({1.0f, 2.0f}) : torch::tensor({3.0f, 6.0f});
        if (r == 1) b.mutable_grad() = torch::tensor({4.0f});  // rank 0 has no gradient for b
        if (Status s = g.average_grads({a, b}); !s) return s;
        EXPECT_GT(g.last_comm_s(), 0.0);
        grads[static_cast<size_t>(r)] = {a.grad().clone(), b.grad().clone()};
        return Status::ok();
    });
    expect_all_ok(errors);
    for (auto& g : grads) {
        ASSERT_EQ(g.size(), 2u);
        EXPECT_TRUE(torch::equal(g[0], torch::tensor({2.0f, 4.0f}))) << g[0];
        EXPECT_TRUE(torch::equal(g[1], torch::tensor({2.0f}))) << g[1];
    }
}

// The equivalence data: R·B windows of T+1 tokens laid end to end (window i is tokens [i·T, i·T + T]).
// Replica r reads windows r·B .. r·B + B − 1 and nothing else, so every batch of B holds all of them;
// the single replica reads all R·B windows with batch R·B. Both see exactly the same windows each
// step (only their order differs, which the mean loss does not see beyond rounding).
constexpr int64_t kB = 4, kT = 16, kVocab = 53;

std::shared_ptr<std::vector<uint16_t>> window_tokens(int R) {
    auto v = std::make_shared<std::vector<uint16_t>>(static_cast<size_t>(R * kB * kT + 1));
    std::mt19937 rng(5);
    for (auto& x : *v) x = static_cast<uint16_t>(rng() % kVocab);
    return v;
}

Trainer window_trainer(RunConfig c, int64_t first_window, int64_t n_windows, int R) {
    auto toks = window_tokens(R);
    c.train.batch_size = n_windows;
    const std::pair<int64_t, int64_t> span{first_window * kT, n_windows * kT + 1};
    return Trainer(c, WindowLoader(toks, {span}, kT, n_windows, 1), WindowLoader(toks, {span}, kT, n_windows, 2));
}

RunConfig ddp_run(int64_t steps) {
    RunConfig c = testing_support::micro_run(kVocab, steps);
    c.train.grad_clip = 0.1;  // below the micro model's gradient norm, so clipping is active every step
    return c;
}

void expect_replicas_equal_single(int R) {
    const int steps = 3;
    const auto c = ddp_run(steps);
    auto single = window_trainer(c, 0, R * kB, R);
    std::vector<double> single_norms;
    for (int i = 0; i < steps; ++i) single_norms.push_back(single.step().grad_norm);
    for (double n : single_norms) ASSERT_GT(n, c.train.grad_clip) << "clipping must be active for this test";

    std::vector<std::vector<torch::Tensor>> finals(static_cast<size_t>(R));
    std::vector<std::vector<double>> norms(static_cast<size_t>(R));
    std::vector<ByteCounters> counters(static_cast<size_t>(R));
    int64_t P = 0;
    auto errors = on_ranks(R, [&](int r, GradAllReduce& g) {
        auto t = window_trainer(c, r * kB, kB, R);
        auto params = t.model()->parameters();
        t.set_grad_sync([&] { return g.average_grads(params); });
        for (int i = 0; i < steps; ++i) {
            norms[static_cast<size_t>(r)].push_back(t.step().grad_norm);
            if (!t.sync_status()) return t.sync_status();
        }
        for (auto& p : params) finals[static_cast<size_t>(r)].push_back(p.detach().clone());
        counters[static_cast<size_t>(r)] = g.counters();
        if (r == 0)
            for (auto& p : params) P += p.numel();
        return Status::ok();
    });
    expect_all_ok(errors);
    if (::testing::Test::HasFailure()) return;

    const auto want = single.model()->parameters();
    for (int r = 0; r < R; ++r) {
        const auto& got = finals[static_cast<size_t>(r)];
        ASSERT_EQ(got.size(), want.size());
        double max_diff = 0;
        for (size_t i = 0; i < want.size(); ++i) max_diff = std::max(max_diff, (got[i] - want[i]).abs().max().item<double>());
        EXPECT_LT(max_diff, 1e-5) << "replica " << r << " of " << R;
        // The pre-clip norm is scale-sensitive where clipping and AdamW are not: it pins mean, not sum.
        for (int i = 0; i < steps; ++i)
            EXPECT_NEAR(norms[static_cast<size_t>(r)][static_cast<size_t>(i)], single_norms[static_cast<size_t>(i)],
                        1e-5 * single_norms[static_cast<size_t>(i)]);
        const int left = (r + R - 1) % R;
        EXPECT_EQ(counters[static_cast<size_t>(r)].sent_bytes[kIntra], steps * GradAllReduce::ring_allreduce_bytes(P, 4, R, r));
        EXPECT_EQ(counters[static_cast<size_t>(r)].recv_bytes[kIntra], steps * GradAllReduce::ring_allreduce_bytes(P, 4, R, left));
        EXPECT_EQ(counters[static_cast<size_t>(r)].sent_msgs[kIntra], static_cast<uint64_t>(steps * 2 * (R - 1)));
    }
}

TEST(Ddp, TwoReplicasOnHalvesEqualOneReplicaOnTheWholeBatch) { expect_replicas_equal_single(2); }
TEST(Ddp, ThreeReplicasOnThirdsEqualOneReplicaOnTheWholeBatch) { expect_replicas_equal_single(3); }

TEST(Ddp, BroadcastEqualisesWeightsAndCountersAreExact) {
    const int R = 3, steps = 2;
    std::vector<std::vector<torch::Tensor>> before(R), finals(R);
    std::vector<ByteCounters> counters(R);
    int64_t P = 0;
    auto errors = on_ranks(R, [&](int r, GradAllReduce& g) {
        auto c = ddp_run(steps);
        c.run.seed = 100 + r;  // every replica starts from different weights
        auto t = window_trainer(c, r * kB, kB, R);
        auto params = t.model()->parameters();
        for (auto& p : params) before[static_cast<size_t>(r)].push_back(p.detach().clone());
        if (Status s = g.broadcast(params, 0); !s) return s;
        t.set_grad_sync([&] { return g.average_grads(params); });
        for (int i = 0; i < steps; ++i) {
            (void)t.step();
            if (!t.sync_status()) return t.sync_status();
        }
        for (auto& p : params) finals[static_cast<size_t>(r)].push_back(p.detach().clone());
        counters[static_cast<size_t>(r)] = g.counters();
        if (r == 0)
            for (auto& p : params) P += p.numel();
        return Status::ok();
    });
    expect_all_ok(errors);
    if (HasFailure()) return;
    EXPECT_FALSE(torch::equal(before[0][0], before[1][0]));  // the broadcast had something to do
    for (int r = 0; r < R; ++r) {
        for (size_t i = 0; i < finals[0].size(); ++i)
            EXPECT_TRUE(torch::equal(finals[static_cast<size_t>(r)][i], finals[0][i])) << "rank " << r << " param " << i;
        const uint64_t bcast = static_cast<uint64_t>(P) * 4;
        const uint64_t ring_sent = GradAllReduce::ring_allreduce_bytes(P, 4, R, r);
        const uint64_t ring_recv = GradAllReduce::ring_allreduce_bytes(P, 4, R, (r + R - 1) % R);
        const auto& k = counters[static_cast<size_t>(r)];
        EXPECT_EQ(k.sent_bytes[kIntra], steps * ring_sent + (r == 0 ? (R - 1) * bcast : 0));
        EXPECT_EQ(k.recv_bytes[kIntra], steps * ring_recv + (r == 0 ? 0 : bcast));
        EXPECT_EQ(k.sent_msgs[kIntra], static_cast<uint64_t>(steps * 2 * (R - 1) + (r == 0 ? R - 1 : 0)));
        EXPECT_EQ(k.recv_msgs[kIntra], static_cast<uint64_t>(steps * 2 * (R - 1) + (r == 0 ? 0 : 1)));
    }
}

TEST(Ddp, BroadcastGivesEveryRankTheRootsValues) {
    std::vector<torch::Tensor> got(3);
    expect_all_ok(on_ranks(3, [&](int r, GradAllReduce& g) {
        auto t = torch::full({2, 2}, static_cast<float>(r));
        if (Status s = g.broadcast({t}, 2); !s) return s;
        got[static_cast<size_t>(r)] = t;
        return Status::ok();
    }));
    for (auto& t : got) EXPECT_TRUE(torch::equal(t, torch::full({2, 2}, 2.0f))) << t;
}

TEST(Ddp, GradSyncRunsBeforeClippingAndIsTimedApartFromCompute) {
    auto c = ddp_run(3);
    auto plain = window_trainer(c, 0, kB, 1), hooked = window_trainer(c, 0, kB, 1);
    auto params = hooked.model()->parameters();
    hooked.set_grad_sync([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        torch::NoGradGuard no_grad;
        for (auto& p : params) p.grad().mul_(2);
        return Status::ok();
    });
    const auto t0 = std::chrono::steady_clock::now();
    const StepReport h = hooked.step();
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const StepReport p = plain.step();
    EXPECT_NEAR(h.grad_norm, 2 * p.grad_norm, 1e-6 * p.grad_norm);  // the norm is of the hook's gradients
    EXPECT_EQ(p.sync_s, 0.0);
    EXPECT_GE(h.sync_s, 0.1);
    EXPECT_LE(h.compute_s, wall_s - h.sync_s + 1e-9);
    EXPECT_LT(h.compute_s, h.forward_s + h.backward_s + h.optim_s + 0.05);  // the 100 ms stayed out
}

TEST(Ddp, FailingGradSyncAbandonsTheStepAndEndsTheRun) {
    auto c = ddp_run(3);
    auto t = window_trainer(c, 0, kB, 1);
    const auto before = t.model()->parameters()[0].detach().clone();
    int calls = 0;
    t.set_grad_sync([&] { return ++calls == 2 ? Status::error("peer 1 vanished") : Status::ok(); });
    std::vector<int64_t> reported;
    TrainHooks hooks;
    hooks.on_step = [&](const StepReport& r) { reported.push_back(r.step); };
    const Status s = t.run(hooks);
    EXPECT_EQ(s.message(), "peer 1 vanished");
    EXPECT_EQ(t.step_index(), 1);  // the second step was not applied
    EXPECT_EQ(reported, std::vector<int64_t>{1});
    EXPECT_FALSE(torch::equal(before, t.model()->parameters()[0]));  // the first one was
}

// This process's listening TCP sockets as "ADDRESS_HEX:PORT_HEX" rows of /proc/net/tcp{,6}.
std::vector<std::string> listening_sockets() {
    std::set<std::string> inodes;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
        std::error_code ec;
        const auto target = std::filesystem::read_symlink(e.path(), ec).string();
        if (!ec && target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
    }
    std::vector<std::string> rows;
    for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
        std::ifstream in(table);
        std::string line;
        std::getline(in, line);  // header
        while (std::getline(in, line)) {
            std::istringstream f(line);
            std::string sl, local, remote, state, skip, inode;
            f >> sl >> local >> remote >> state;
            for (int i = 0; i < 5; ++i) f >> skip;  // tx:rx, tr:when, retrnsmt, uid, timeout
            f >> inode;
            if (state == "0A" && inodes.count(inode)) rows.push_back(local);
        }
    }
    return rows;
}

// Times one create() that must fail; returns the seconds it took.
double failing_create_s(const DdpRendezvous& rv, std::string* message) {
    const auto t0 = std::chrono::steady_clock::now();
    auto g = GradAllReduce::create(rv, LinkClass::kIntraReplica);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_FALSE(g);
    if (!g) *message = g.message();
    return s;
}

TEST(Ddp, RendezvousWithNobodyAtTheStoreFailsWithinTheTimeout) {
    auto ctx = std::make_shared<zmq::context_t>();
    const std::string ep = "tcp://127.0.0.1:" + std::to_string(free_port());  // nobody listens there
    DdpRendezvous rv;
    rv.store = store_client(ctx, ep, 2000);
    rv.rank = 1;
    rv.size = 2;
    rv.timeout_ms = 2000;
    std::string message;
    EXPECT_LT(failing_create_s(rv, &message), 4.0);
    EXPECT_NE(message.find("rendezvous at " + ep + " as rank 1 of 2 failed"), std::string::npos) << message;
}

TEST(Ddp, RendezvousWithAMissingPeerFailsWithinTheTimeout) {
    auto ctx = std::make_shared<zmq::context_t>();
    auto server = unwrap(KvStoreServer::start(ctx, "tcp://127.0.0.1:*", {}));
    DdpRendezvous rv;
    rv.store = store_client(ctx, server->endpoint());
    rv.rank = 0;  // rank 1 never comes
    rv.size = 2;
    rv.timeout_ms = 1000;
    std::string message;
    const double waited_s = failing_create_s(rv, &message);
    EXPECT_GT(waited_s, 0.9);  // it did wait for the peer ...
    EXPECT_LT(waited_s, 4.0);  // ... but not forever
    EXPECT_NE(message.find("as rank 0 of 2 failed"), std::string::npos) << message;
}

// Gloo's pair sockets bind the rank's own address. Rank 0 arrives alone, so its pair listens for
// rank 1 while we look: every listening socket of this process, the store's and Gloo's alike, is on
// 127.0.0.1, none on 0.0.0.0 or [::] (c10d's TCPStore listened on every interface).
TEST(Ddp, GlooAndTheStoreListenOnlyOnTheBindHost) {
    auto ctx = std::make_shared<zmq::context_t>();
    auto server = unwrap(KvStoreServer::start(ctx, "tcp://127.0.0.1:*", {}));
    const std::vector<std::string> before = listening_sockets();  // the store's alone
    std::vector<std::string> errors(2);
    auto rank = [&](int r) {
        DdpRendezvous rv;
        rv.store = store_client(ctx, server->endpoint());
        rv.rank = r;
        rv.size = 2;
        rv.timeout_ms = 20000;
        auto g = GradAllReduce::create(rv, LinkClass::kIntraReplica);
        if (!g) {
            errors[static_cast<size_t>(r)] = g.message();
            return;
        }
        auto a = torch::ones({4}, torch::requires_grad());
        a.mutable_grad() = torch::full({4}, static_cast<float>(r));
        if (Status s = (*g)->average_grads({a}); !s) errors[static_cast<size_t>(r)] = s.message();
    };
    std::thread r0(rank, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(700));  // rank 0 is waiting for rank 1 now
    const std::vector<std::string> during = listening_sockets();
    std::thread r1(rank, 1);
    r0.join();
    r1.join();
    expect_all_ok(errors);
    // Not vacuous: the store's listener, and rank 0's Gloo pair listening beside it.
    EXPECT_EQ(before.size(), 1u);
    EXPECT_GT(during.size(), before.size()) << "no Gloo listener seen";
    for (const auto& row : during)
        EXPECT_TRUE(row.rfind("0100007F:", 0) == 0 || row.rfind("0000000000000000FFFF00000100007F:", 0) == 0)
            << "a listener on " << row << " (hex, /proc/net/tcp) is not on 127.0.0.1";
}

TEST(Ddp, BadRankStoreAndBackendAreRejectedUpFront) {
    DdpRendezvous rv;
    rv.size = 2;
    rv.rank = 2;
    EXPECT_NE(GradAllReduce::create(rv, LinkClass::kIntraReplica).message().find("rank 2 is outside 0..1"),
              std::string::npos);
    rv.rank = 0;
    EXPECT_NE(GradAllReduce::create(rv, LinkClass::kIntraReplica).message().find("a group of 2 needs a store"),
              std::string::npos);
    auto ctx = std::make_shared<zmq::context_t>();
    rv.store = store_client(ctx, "inproc://nobody");
    rv.timeout_ms = 500;
    EXPECT_NE(GradAllReduce::create(rv, LinkClass::kIntraReplica).message().find("1000 ms minimum"), std::string::npos);
    rv.timeout_ms = 60000;
    if (!GradAllReduce::nccl_compiled()) {
        rv.backend = DdpBackend::kNccl;
        EXPECT_NE(GradAllReduce::create(rv, LinkClass::kIntraReplica).message().find("NCCL"), std::string::npos);
    }
}

TEST(Ddp, OneReplicaNeedsNoStoreAndKeepsItsGradients) {
    DdpRendezvous rv;  // size 1, port 0: no store, no sockets
    auto g = GradAllReduce::create(rv, LinkClass::kIntraReplica);
    ASSERT_TRUE(g) << g.message();
    auto a = torch::zeros({3}, torch::requires_grad());
    a.mutable_grad() = torch::tensor({1.0f, -2.0f, 3.0f});
    ASSERT_TRUE((*g)->average_grads({a}));
    EXPECT_TRUE(torch::equal(a.grad(), torch::tensor({1.0f, -2.0f, 3.0f})));
    EXPECT_EQ((*g)->counters().sent_bytes[kIntra], 0u);
}

}  // namespace
}  // namespace tw
