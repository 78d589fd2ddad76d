// The compute model; see compute_model.h for the counting conventions.
#include "core/compute_model.h"
#include "core/number_text.h"
#include "core/run_kind.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/assert.h"
#include "core/model_size.h"

namespace tw {

double block_forward_flops(const ModelConfig& m) {
    const double d = static_cast<double>(m.d_model), f = static_cast<double>(m.ff_width());
    const double T = static_cast<double>(m.seq_len);
    return 2.0 * (4.0 * d * d + 3.0 * f * d) + 4.0 * T * d;
}

double head_forward_flops(const ModelConfig& m) {
    const double d = static_cast<double>(m.d_model), V = static_cast<double>(m.vocab_size);
    return 2.0 * d * V + kCeForwardPerLogit * V;
}

double head_backward_flops(const ModelConfig& m) {
    const double d = static_cast<double>(m.d_model), V = static_cast<double>(m.vocab_size);
    return 4.0 * d * V + kCeBackwardPerLogit * V;
}

double codec_flops(const ModelConfig& m, int64_t rank) {
    return 2.0 * static_cast<double>(m.d_model) * static_cast<double>(rank);
}

int64_t stage_blocks(const ModelConfig& m, int64_t stage, int64_t stages) {
    TW_ASSERT(stages >= 1 && stages <= m.n_layer && stage >= 0 && stage < stages);
    return skip_blocks_per_stage(m.n_layer, stages)[static_cast<size_t>(stage)];
}

int64_t stage_parameters(const ModelConfig& m, int64_t stage, int64_t stages) {
    if (stages == 1) return count_parameters(m);
    const int64_t d = m.d_model, f = m.ff_width();
    const int64_t per_block = 2 * d + 4 * d * d + 3 * f * d;  // two norms, wqkv + wo, w13 + w2
    int64_t p = stage_blocks(m, stage, stages) * per_block;
    if (stage == 0) p += m.vocab_size * d;               // the embedding
    if (stage == stages - 1) p += d + m.vocab_size * d;  // final norm, head (or the tied embedding's copy)
    return p;
}

PassFlops stage_flops(const ModelConfig& m, int64_t stage, int64_t stages, int64_t rank_in, int64_t rank_out) {
    const double blocks = static_cast<double>(stage_blocks(m, stage, stages)) * block_forward_flops(m);
    const bool last = stage == stages - 1;
    const double head_matrix = last ? 2.0 * m.d_model * static_cast<double>(m.vocab_size) : 0.0;
    PassFlops p;
    p.forward = blocks + (last ? head_forward_flops(m) : 0.0);
    p.backward = 2.0 * (blocks + head_matrix) + (last ? kCeBackwardPerLogit * static_cast<double>(m.vocab_size) : 0.0);
    // Each compressed boundary costs one projection each way at each end (compute_model.h).
    const double codecs = codec_flops(m, rank_in) + codec_flops(m, rank_out);
    p.forward += codecs;
    p.backward += codecs;
    return p;
}

double train_step_flops(const ModelConfig& m, int64_t tokens) {
    const PassFlops p = stage_flops(m, 0, 1);
    return (p.forward + p.backward) * static_cast<double>(tokens) +
           kAdamWPerParam * static_cast<double>(count_parameters(m));
}

const std::vector<HardwareProfile>& hardware_profiles() {
    // Peaks are dense (no 2:4 sparsity) tensor-core BF16 with FP32 accumulation, from the vendor's
    // datasheets: A100 SXM4 312 TFLOP/s, H100 SXM5 989.4 TFLOP/s, and the Ada whitepaper's
    // GeForce RTX 4090 figure, 165.2 TFLOP/s. Their efficiency, 0.4, is a typical model-FLOPs
    // utilisation of well-tuned large-model training on them (reports range from 30% to 50%);
    // small models reach less: set compute.efficiency for a measured figure.
    static const std::vector<HardwareProfile> kProfiles = {
        // This machine (2 cores of an AMD EPYC, AVX-512, OpenBLAS through LibTorch 1.13), measured
        // 2026-11-24 with `thinwire bench compute` while nothing else ran: the best 1024² fp32 sgemm
        // at 2 threads (run.threads' default) was 208.7–212.0 GFLOP/s over five runs of 5–10 rounds,
        // pinned as 210; the tiny preset's training step (batch 16, median of 30) reached 32.6–33.7%
        // of it, pinned as efficiency 0.33 (the small preset reaches 58%). docs/compute_model.md.
        {"cpu-here", 210.0e9, 0.33,
         "this machine's 1024^2 sgemm at 2 threads and the tiny preset's MFU (thinwire bench compute)"},
        {"rtx4090", 165.2e12, 0.4, "GeForce RTX 4090, dense BF16 tensor cores, FP32 accumulate (Ada whitepaper)"},
        {"a100", 312.0e12, 0.4, "A100 SXM4, dense BF16 tensor cores (NVIDIA datasheet)"},
        {"h100", 989.4e12, 0.4, "H100 SXM5, dense BF16 tensor cores (NVIDIA datasheet)"},
        {"custom", 0.0, 1.0, "compute.peak_flops (required) and compute.efficiency (default 1)"},
    };
    return kProfiles;
}

const HardwareProfile* find_hardware(std::string_view name) {
    for (auto& p : hardware_profiles())
        if (p.name == name) return &p;
    return nullptr;
}

void validate_compute(const RunConfig& c, std::vector<std::string>& out) {
    const ComputeConfig& k = c.compute;
    const HardwareProfile* hw = find_hardware(k.hardware);
    if (!hw) {
        std::string names;
        for (auto& p : hardware_profiles()) names += (names.empty() ? "" : ", ") + p.name;
        out.push_back("compute.hardware \"" + k.hardware + "\" is unknown (expected one of: " + names + ")");
    }
    if (k.model != "flops") {
        // Under measured these would change nothing, silently: refused so a layout says what it does.
        const char* only = " applies only with compute.model = \"flops\"";
        if (k.hardware != "cpu-here") out.push_back("compute.hardware" + std::string(only));
        if (k.peak_flops != 0) out.push_back("compute.peak_flops" + std::string(only));
        if (k.efficiency != 0) out.push_back("compute.efficiency" + std::string(only));
        if (!k.node_speed.empty()) out.push_back("compute.node_speed" + std::string(only));
        return;
    }
    if (hw && hw->peak_flops <= 0 && k.peak_flops <= 0)
        out.push_back("compute.peak_flops: compute.hardware \"" + k.hardware + "\" needs the node's peak FLOP/s");
    if (!k.node_speed.empty()) {
        if (is_run_kind(c, RunKind::kSkipPipe))
            out.push_back("compute.node_speed: SkipPipe's scheduler takes one time per stage for every node; "
                          "leave it empty");
        else if (is_run_kind(c, RunKind::kHdee))
            out.push_back("compute.node_speed: HDEE experts are not replicas; leave it empty");
        else if (static_cast<int64_t>(k.node_speed.size()) != c.outer.replicas)
            out.push_back("compute.node_speed has " + std::to_string(k.node_speed.size()) + " entries for " +
                          std::to_string(c.outer.replicas) + " replicas (outer.replicas): one multiplier per replica");
        for (size_t i = 0; i < k.node_speed.size(); ++i)
            if (!(k.node_speed[i] > 0))
                out.push_back("compute.node_speed[" + std::to_string(i) + "] must be above 0 (a multiplier of the rate)");
    }
    // A rate that rounds to nothing would turn every segment into infinite time.
    const double peak = k.peak_flops > 0 ? k.peak_flops : hw ? hw->peak_flops : 0;
    const double eff = k.efficiency > 0 ? k.efficiency : hw ? hw->efficiency : 0;
    for (size_t i = 0; i < std::max<size_t>(1, k.node_speed.size()); ++i) {
        const double speed = k.node_speed.empty() ? 1.0 : k.node_speed[i];
        if (peak > 0 && speed > 0 && peak * eff * speed < 1.0) {
            out.push_back("compute: the rate peak_flops × efficiency × node_speed" +
                          (k.node_speed.empty() ? std::string() : "[" + std::to_string(i) + "]") + " is " +
                          number_text(peak * eff * speed) + " FLOP/s; it must be at least 1 FLOP/s");
            break;
        }
    }
    if (is_run_kind(c, RunKind::kSkipPipe) && (!c.skippipe.block_s.empty() || !c.skippipe.head_s.empty()))
        out.push_back("skippipe.block_s / skippipe.head_s pin the stage times; under compute.model = \"flops\" "
                      "the compute model gives them: leave them empty");
}

double effective_flops(const ComputeConfig& c, int64_t replica) {
    const HardwareProfile* hw = find_hardware(c.hardware);
    TW_ASSERT(c.model == "flops" && hw);
    const double peak = c.peak_flops > 0 ? c.peak_flops : hw->peak_flops;
    const double eff = c.efficiency > 0 ? c.efficiency : hw->efficiency;
    const double speed = c.node_speed.empty() ? 1.0 : c.node_speed.at(static_cast<size_t>(replica));
    TW_ASSERT(peak > 0 && eff > 0 && speed > 0);
    return peak * eff * speed;
}

Result<ComputeTime> ComputeTime::create(const RunConfig& cfg, int64_t replica, int64_t stage) {
    using R = Result<ComputeTime>;
    ComputeTime t;
    if (cfg.compute.model != "flops") return t;
    const int64_t S = cfg.cluster.stages;
    if (cfg.model.vocab_size <= 0) return R::error("compute model: model.vocab_size is not resolved");
    if (replica < 0 || replica >= cfg.outer.replicas)
        return R::error("compute model: replica " + std::to_string(replica) + " is not one of outer.replicas " +
                        std::to_string(cfg.outer.replicas));
    if (stage < -1 || stage >= S || (stage >= 0 && !cfg.is_pipeline_replica(replica)))
        return R::error("compute model: replica " + std::to_string(replica) + " has no stage " + std::to_string(stage) +
                        " (cluster.stages " + std::to_string(S) + ")");
    t.fill(cfg, replica, stage);
    return t;
}

void ComputeTime::fill(const RunConfig& cfg, int64_t replica, int64_t stage) {
    rate_ = effective_flops(cfg.compute, replica);
    const ModelConfig& m = cfg.model;
    const int64_t T = m.seq_len;
    step_s_ = train_step_flops(m, cfg.train.batch_size * T) / rate_;
    if (stage >= 0) {
        const int64_t S = cfg.cluster.stages;  // checked by create
        const double tokens = static_cast<double>(cfg.train.batch_size / cfg.pipeline.micro_batches * T);
        const int64_t k_in = stage > 0 ? cfg.boundary_rank(replica, stage - 1) : 0;
        const int64_t k_out = stage < S - 1 ? cfg.boundary_rank(replica, stage) : 0;
        const PassFlops p = stage_flops(m, stage, S, k_in, k_out);
        fwd_s_ = p.forward * tokens / rate_;
        bwd_s_ = p.backward * tokens / rate_;
        optim_s_ = kAdamWPerParam * static_cast<double>(stage_parameters(m, stage, S)) / rate_;
    }
    if (is_run_kind(cfg, RunKind::kSkipPipe)) {
        const double tokens = static_cast<double>(cfg.train.batch_size / cfg.skippipe.micro_batches * T);
        block_fwd_s_ = block_forward_flops(m) * tokens / rate_;
        block_bwd_s_ = 2.0 * block_forward_flops(m) * tokens / rate_;
        head_fwd_s_ = head_forward_flops(m) * tokens / rate_;
        head_bwd_s_ = head_backward_flops(m) * tokens / rate_;
        skip_blocks_ = skip_blocks_per_stage(m.n_layer, cfg.skippipe.stages);
    }
}

double ComputeTime::train_step(double measured_s) { return pick(step_s_, measured_s); }

double ComputeTime::stage_segment(const StageEvent& e, double measured_s) {
    TW_ASSERT(e.kind == StageEventKind::kCompute);
    if (e.optimizer) return pick(optim_s_, measured_s);
    return pick(e.op.kind == PipeOpKind::kBackward ? bwd_s_ : fwd_s_, measured_s);
}

double ComputeTime::skip_op(char kind, int64_t stage, double measured_s) {
    if (!modelled()) return pick(0, measured_s);
    if (kind == 'H') return pick(head_fwd_s_ + head_bwd_s_, measured_s);
    const double n = static_cast<double>(skip_blocks_.at(static_cast<size_t>(stage)));
    return pick(n * (kind == 'B' ? block_bwd_s_ : block_fwd_s_), measured_s);
}

FwdBwd ComputeTime::skip_block() const {
    TW_ASSERT(modelled());
    return {block_fwd_s_, block_bwd_s_};
}

FwdBwd ComputeTime::skip_head() const {
    TW_ASSERT(modelled());
    return {head_fwd_s_, head_bwd_s_};
}

}  // namespace tw
