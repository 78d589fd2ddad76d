// DDP gradient averaging over a c10d process group (Gloo; NCCL only with a CUDA LibTorch).
// Compiled with USE_C10D_GLOO (engine/CMakeLists.txt): ProcessGroupGloo.hpp is empty without it.
#include "engine/algo/ddp.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#ifdef TW_HAVE_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <chrono>

#include "core/assert.h"
#include "core/ring_schedule.h"
#include "engine/algo/c10d_store.h"

namespace tw {

// Null group for size 1: there is nobody to talk to, so no store and no sockets.
struct GradAllReduce::Impl {
    c10::intrusive_ptr<c10d::Store> store;
    c10::intrusive_ptr<c10d::ProcessGroup> group;
};

namespace {

using Ms = std::chrono::milliseconds;

// c10::Error's what() carries a C++ backtrace; users need only the reason.
std::string reason(const std::exception& e) {
    if (auto* c = dynamic_cast<const c10::Error*>(&e)) return c->what_without_backtrace();
    return e.what();
}

std::string describe(const DdpRendezvous& r) {
    return (r.store ? r.store->address() : std::string("(no store)")) + " as rank " + std::to_string(r.rank) + " of " +
           std::to_string(r.size);
}

Status validate(const DdpRendezvous& r) {
    if (r.size < 1 || r.rank < 0 || r.rank >= r.size)
        return Status::error("ddp: rank " + std::to_string(r.rank) + " is outside 0.." + std::to_string(r.size - 1));
    if (r.size > 1 && !r.store) return Status::error("ddp: a group of " + std::to_string(r.size) + " needs a store");
    if (r.size > 1 && r.bind_host.empty()) return Status::error("ddp: no bind_host for Gloo's sockets");
    // Gloo's full-mesh connect and the store's waits share this budget: below a second a merely
    // busy peer looks dead.
    if (r.timeout_ms < 1000)
        return Status::error("ddp: timeout_ms " + std::to_string(r.timeout_ms) + " is below c10d's 1000 ms minimum");
#ifndef TW_HAVE_NCCL
    if (r.backend == DdpBackend::kNccl)
        return Status::error("ddp: the NCCL backend is not compiled in (LibTorch without CUDA); use Gloo");
#endif
    return Status::ok();
}

// The prefix keeps this group's keys apart from anything else sharing the store.
c10::intrusive_ptr<c10d::Store> connect_store(const DdpRendezvous& r) {
    auto kv = c10::make_intrusive<C10dKvStore>(r.store, Ms(r.timeout_ms));
    return c10::make_intrusive<c10d::PrefixStore>(r.prefix, kv);
}

// The constructor blocks until every rank has joined (full mesh of pairs), or throws at the timeout.
c10::intrusive_ptr<c10d::ProcessGroup> make_group(const DdpRendezvous& r, const c10::intrusive_ptr<c10d::Store>& s) {
#ifdef TW_HAVE_NCCL
    if (r.backend == DdpBackend::kNccl) {
        auto o = c10d::ProcessGroupNCCL::Options::create();
        o->timeout = Ms(r.timeout_ms);
        return c10::make_intrusive<c10d::ProcessGroupNCCL>(s, r.rank, r.size, o);
    }
#endif
    auto o = c10d::ProcessGroupGloo::Options::create(Ms(r.timeout_ms));
    o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(r.bind_host));
    o->threads = 1;  // we issue one collective at a time and wait for it; a second thread would only idle
    return c10::make_intrusive<c10d::ProcessGroupGloo>(s, r.rank, r.size, o);
}

}  // namespace

Result<std::unique_ptr<GradAllReduce>> GradAllReduce::create(const DdpRendezvous& r, LinkClass link) {
    if (Status s = validate(r); !s) return s;
    auto impl = std::make_unique<Impl>();
    if (r.size > 1) {
        try {
            impl->store = connect_store(r);
            impl->group = make_group(r, impl->store);
        } catch (const std::exception& e) {
            return Result<std::unique_ptr<GradAllReduce>>::error(
                "ddp: rendezvous at " + describe(r) + " failed: " + reason(e) + " (did all " + std::to_string(r.size) +
                " ranks start within " + std::to_string(r.timeout_ms) + " ms, and can they reach the store and " + r.bind_host + "?)");
        }
    }
    return std::unique_ptr<GradAllReduce>(new GradAllReduce(std::move(impl), r.rank, r.size, link));
}

GradAllReduce::GradAllReduce(std::unique_ptr<Impl> impl, int rank, int size, LinkClass link)
    : impl_(std::move(impl)), rank_(rank), size_(size), link_(link) {}

GradAllReduce::~GradAllReduce() = default;

Status GradAllReduce::run_collective(const char* what, torch::Tensor& flat, int broadcast_root) {
    const auto t0 = std::chrono::steady_clock::now();
    if (impl_->group) {
        try {
            std::vector<at::Tensor> v{flat};
            c10d::BroadcastOptions b;
            b.rootRank = broadcast_root;
            auto work = broadcast_root < 0 ? impl_->group->allreduce(v) : impl_->group->broadcast(v, b);
            work->wait();  // rethrows the collective's error (peer gone, timeout, size mismatch)
        } catch (const std::exception& e) {
            return Status::error(std::string("ddp: ") + what + " of " + std::to_string(flat.numel()) +
                                 " values failed on rank " + std::to_string(rank_) + ": " + reason(e));
        }
    }
    last_comm_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return Status::ok();
}

Status GradAllReduce::average_grads(const std::vector<torch::Tensor>& params) {
    if (params.empty()) return Status::ok();
    torch::NoGradGuard no_grad;
    // One bucket, one collective: the per-message latency is paid once per step, not per parameter.
    std::vector<torch::Tensor> parts;
    parts.reserve(params.size());
    for (const auto& p : params) {
        const auto& g = p.grad();
        parts.push_back(g.defined() ? g.reshape({-1}).to(torch::kFloat32)
                                    : torch::zeros({p.numel()}, p.options().dtype(torch::kFloat32)));
    }
    auto flat = torch::cat(parts);  // [P] fp32, a fresh tensor
    if (Status s = run_collective("all-reduce", flat, -1); !s) return s;
    flat.div_(size_);

    int64_t off = 0;
    for (const auto& p : params) {
        auto mean = flat.narrow(0, off, p.numel()).view(p.sizes());
        off += p.numel();
        auto& g = p.mutable_grad();
        if (g.defined())
            g.copy_(mean);
        else
            g = mean.to(p.scalar_type());  // a view of `flat`, which nobody else holds
    }

    // Modelled, not measured (see ddp.h): a ring member sends to its right neighbour and receives
    // what its left neighbour sends.
    const int k = static_cast<int>(link_);
    const int64_t n = flat.numel();
    counters_.sent_bytes[k] += ring_allreduce_bytes(n, 4, size_, rank_);
    counters_.recv_bytes[k] += ring_allreduce_bytes(n, 4, size_, (rank_ + size_ - 1) % size_);
    counters_.sent_msgs[k] += 2 * static_cast<uint64_t>(size_ - 1);
    counters_.recv_msgs[k] += 2 * static_cast<uint64_t>(size_ - 1);
    return Status::ok();
}

Status GradAllReduce::broadcast(const std::vector<torch::Tensor>& tensors, int root) {
    if (root < 0 || root >= size_)
        return Status::error("ddp: broadcast root " + std::to_string(root) + " is outside 0.." + std::to_string(size_ - 1));
    if (tensors.empty()) return Status::ok();
    torch::NoGradGuard no_grad;
    // One bucket in the tensors' own dtype, so nothing is rounded on the way.
    const auto dtype = tensors[0].scalar_type();
    std::vector<torch::Tensor> parts;
    for (const auto& t : tensors) {
        if (t.scalar_type() != dtype) return Status::error("ddp: broadcast needs tensors of one dtype");
        parts.push_back(t.reshape({-1}));
    }
    auto flat = torch::cat(parts);
    if (Status s = run_collective("broadcast", flat, root); !s) return s;
    int64_t off = 0;
    for (const auto& t : tensors) {
        t.copy_(flat.narrow(0, off, t.numel()).view(t.sizes()));
        off += t.numel();
    }

    // Modelled as the root sending the whole bucket to each other rank.
    const int k = static_cast<int>(link_);
    const uint64_t bytes = static_cast<uint64_t>(flat.numel()) * flat.element_size();
    if (rank_ == root) {
        counters_.sent_bytes[k] += static_cast<uint64_t>(size_ - 1) * bytes;
        counters_.sent_msgs[k] += static_cast<uint64_t>(size_ - 1);
    } else {
        counters_.recv_bytes[k] += bytes;
        counters_.recv_msgs[k] += 1;
    }
    return Status::ok();
}

bool GradAllReduce::nccl_compiled() {
#ifdef TW_HAVE_NCCL
    return true;
#else
    return false;
#endif
}

uint64_t GradAllReduce::ring_allreduce_bytes(int64_t numel, int elem_bytes, int size, int rank) {
    TW_ASSERT(numel >= 0 && elem_bytes > 0 && size >= 1 && rank >= 0 && rank < size);
    // The schedule and chunk split of core/ring_schedule.h, which the outer rounds' ring runs for real.
    return ring_sent_bytes_dense(numel, static_cast<uint64_t>(elem_bytes), size, rank);
}

namespace {

class DdpRounds : public RoundCostModel {
public:
    explicit DdpRounds(int replicas) : R_(replicas) {}
    RoundCost at(int64_t, int r, const std::vector<TensorShape>& tensors) const override {
        RoundCost cost;
        if (R_ > 1)
            cost.synced = true, cost.bytes = ring_sent_bytes_dense(sum_numel(tensors), 4, R_, r), cost.hops = ring_hops(R_);
        return cost;
    }

private:
    int R_;
};

}  // namespace

Result<std::unique_ptr<RoundCostModel>> plan_ddp_rounds(const RunConfig& cfg) {
    return std::unique_ptr<RoundCostModel>(std::make_unique<DdpRounds>(static_cast<int>(cfg.outer.replicas)));
}

}  // namespace tw
