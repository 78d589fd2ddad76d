// `thinwire bench pipeline`: what the data plane adds per micro-batch to a pipeline stage. Two
// threads, stage 0 and stage 1 of a 2-stage split, exchange one micro-batch's real boundary payloads
// over a ZeroMQ mesh (inproc, ipc, tcp loopback): encode the activations, send, receive, decode;
// then the gradient back the same way. The round trip is set against the same micro-batch's
// forward + backward of stage 0, measured in the same command.
#include <CLI/CLI.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <zmq.hpp>

#include "app/commands.h"
#include "app/list_option.h"
#include "core/config_io.h"
#include "engine/pipeline/activation_codec.h"
#include "engine/pipeline/activation_codec_registry.h"
#include "engine/pipeline/stage.h"
#include "engine/pipeline/subspace.h"
#include "engine/runtime/threads.h"
#include "remote/zmq_collective.h"

namespace tw::cli {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

struct PipelineBenchArgs {
    std::string preset = "tiny";
    int64_t micro_batch = 4, iters = 100, runs = 3;
    std::vector<int64_t> ranks = {0, 16};
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Median milliseconds of one round trip (activations there, gradient back, codecs included).
double round_trip_ms(const std::string& base, const ActivationCodec& codec, const torch::Tensor& x,
                     const torch::Tensor& ids, const ModelConfig& m, int64_t b, int64_t iters) {
    auto ctx = std::make_shared<zmq::context_t>();
    const std::vector<std::string> eps{base + "0", base + "1"};
    auto a = unwrap(ZmqCollective::create(ctx, eps, 0));
    auto c = unwrap(ZmqCollective::create(ctx, eps, 1));
    std::thread echo([&] {
        for (int64_t i = 0; i <= iters; ++i) {
            auto in = unwrap(c->recv(0));
            auto xr = unwrap(codec.decode_activations(in, b, m.seq_len, nullptr));
            check(c->send(0, codec.encode_gradient(xr), LinkClass::kInterStage, 0));
        }
    });
    std::vector<double> t;
    for (int64_t i = 0; i <= iters; ++i) {  // the first trip connects; not timed
        const auto t0 = Clock::now();
        check(a->send(1, codec.encode_activations(x, ids), LinkClass::kInterStage, 0));
        auto g = unwrap(a->recv(1));
        unwrap(codec.decode_gradient(g, b, m.seq_len));
        if (i > 0) t.push_back(ms_since(t0));
    }
    echo.join();
    return median(t);
}

int run_pipeline_bench(const PipelineBenchArgs& a) {
    RunConfig rc = unwrap(parse_config("", "<bench>", {"model.preset=\"" + a.preset + "\""}));
    ModelConfig m = rc.model;
    m.vocab_size = 4096;
    m.tie_embeddings = false;
    configure_compute_threads(1);
    const uint64_t seed = static_cast<uint64_t>(rc.run.seed);
    const int64_t b = a.micro_batch;
    auto t_fixed = frozen_embedding(m.vocab_size, m.d_model, seed);
    PipelineStage stage(m, seed, 0, 2, nullptr, nullptr, t_fixed);
    torch::manual_seed(1);
    auto ids = torch::randint(0, m.vocab_size, {b, m.seq_len}, torch::kLong);
    // Stage 0's forward + backward of one micro-batch (the gradient a random upstream one).
    std::vector<double> comp;
    torch::Tensor x;
    for (int i = 0; i < 5; ++i) {
        auto t0 = Clock::now();
        auto out = stage.model()->forward(ids);
        out.backward(torch::randn_like(out));
        if (i > 0) comp.push_back(ms_since(t0));
        x = out.detach();
    }
    const double stage_ms = median(comp);
    std::printf("preset %s: micro-batch %lld × %lld tokens, d_model %lld; stage 0 of 2 forward + backward %.2f ms\n"
                "round trip = activations to stage 1 and the gradient back, encode/decode included (median of %lld)\n\n",
                a.preset.c_str(), (long long)b, (long long)m.seq_len, (long long)m.d_model, stage_ms, (long long)a.iters);
    std::printf("%-8s %6s %12s %12s %12s %10s\n", "link", "rank", "fwd bytes", "bwd bytes", "trip ms", "vs stage");
    const std::pair<const char*, std::string> links[] = {
        {"inproc", "inproc://tw-bench-pipe-"}, {"ipc", "ipc:///tmp/tw-bench-pipe-"}, {"tcp", "tcp://127.0.0.1:"}};
    for (auto& [name, base] : links)
        for (int64_t k : a.ranks) {
            // The run's rule (activation_codec_registry.h): dense at rank 0, the subspace codec above.
            BoundaryCodecSpec spec;
            spec.d_model = m.d_model;
            spec.vocab = m.vocab_size;
            spec.rank = k;
            spec.seed = seed;
            spec.t_fixed = t_fixed;
            auto codec = activation_codec(k > 0 ? "subspace" : "dense")->make(spec);
            std::vector<double> runs;
            for (int64_t r = 0; r < a.runs; ++r) {
                // Members bind ep + "0" and ep + "1": tcp ports 471r0 and 471r1.
                const std::string ep = std::string(name) == "tcp" ? base + "471" + std::to_string(r)
                                                                  : base + std::to_string(r) + "-";
                runs.push_back(round_trip_ms(ep, *codec, x, ids, m, b, a.iters));
            }
            const double trip = median(runs);
            std::printf("%-8s %6s %12llu %12llu %12.3f %9.2f%%\n", name, k == 0 ? "dense" : std::to_string(k).c_str(),
                        (unsigned long long)codec->forward_bytes(b, m.seq_len),
                        (unsigned long long)codec->backward_bytes(b, m.seq_len),
                        trip, 100 * trip / stage_ms);
        }
    return 0;
}

}  // namespace

Command add_bench_pipeline(CLI::App& bench) {
    auto args = std::make_shared<PipelineBenchArgs>();
    auto* sub = bench.add_subcommand("pipeline", "Data-plane round trip of one micro-batch between two stages");
    sub->add_option("--preset", args->preset, "model preset")->capture_default_str();
    sub->add_option("--micro-batch", args->micro_batch, "sequences per micro-batch")->capture_default_str();
    sub->add_option("--iters", args->iters, "round trips per measurement")->capture_default_str();
    sub->add_option("--runs", args->runs, "measurements (median)")->capture_default_str();
    add_list_option(*sub, "--ranks", args->ranks, "subspace ranks (0 = dense)");
    return {sub, [args] { return run_pipeline_bench(*args); }};
}

}  // namespace tw::cli
