// The compute model (docs/methods.md §10 "Compute"): how many FLOPs each
// compute segment of a run does, counted from the model's real shapes, and how long it takes on a
// node of given hardware. Under `[compute] model = "flops"` every worker advances its simulated
// clock by these seconds instead of the measured ones, so two runs of one layout give the same
// clocks bit for bit and nodes can be given different speeds. docs/compute_model.md has the
// conventions and where the hardware numbers come from.
//
// Units: FLOPs (floating-point operations; a multiply-add is 2), FLOP/s, seconds, tokens.
// Torch-free: the coordinator, re-timing and a planner can use it without LibTorch.
//
// Conventions (all per token of a [B, T] batch, d = d_model, f = ff_width(), V = vocab, L = layers):
//   block forward    2·(4d² + 3fd) for its matrices (wqkv, wo, w13, w2) + 4·T·d for attention
//                    (QKᵀ and the weighted sum of V over the full T×T square, as 6N + 12·L·T·d counts
//                    it, core/model_size.h); norms, RoPE, SwiGLU's gate and the attention softmax are
//                    not counted (under 2% of a tiny block).
//   head forward     2·d·V (the logits) + kCeForwardPerLogit·V (max, subtract, exp, sum)
//   backward         2× the forward's matrix and attention FLOPs (the gradients of the input and of
//                    the weights), + kCeBackwardPerLogit·V for the loss
//   embedding        a lookup: 0 (and its backward a scatter: 0)
//   subspace codec   2·d·k per token per encode or decode of a rank-k boundary: the sender projects
//                    its output (forward) and lifts the gradient (backward), the receiver lifts its
//                    input (forward) and projects its input's gradient (backward)
//   optimizer step   kAdamWPerParam per parameter (clipping, AdamW's moments and update)
// So a whole-model step is train_flops_per_token(m)·tokens + 6·V·tokens + 18·P.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/config.h"
#include "core/pipeline_program.h"
#include "core/skippipe.h"
#include "core/status.h"

namespace tw {

inline constexpr double kCeForwardPerLogit = 4;   // max, subtract, exp, sum
inline constexpr double kCeBackwardPerLogit = 2;  // normalise, scale (the one-hot subtraction is per token)
// Squared norm 2 + clip scale 1 + first moment 3 + second moment 4 + bias corrections 2 +
// sqrt, ε and divide 3 + learning rate and subtract 2 + decoupled weight decay 1.
inline constexpr double kAdamWPerParam = 18;

// ---- FLOPs from the model's shapes ----------------------------------------------------------------

// Forward FLOPs per token of one transformer block (matrices + attention).
double block_forward_flops(const ModelConfig& m);
// Forward and backward FLOPs per token of the head: the logits and the softmax cross-entropy.
double head_forward_flops(const ModelConfig& m);
double head_backward_flops(const ModelConfig& m);
// One encode or decode of a rank-k subspace boundary, per token: 2·d·k (0 for k = 0, dense).
double codec_flops(const ModelConfig& m, int64_t rank);

// Blocks of stage `stage` of an even split into `stages` (earlier stages take the remainder: the
// engine's stage_spec rule, engine/model/llama.h). Requires 0 ≤ stage < stages ≤ n_layer.
int64_t stage_blocks(const ModelConfig& m, int64_t stage, int64_t stages);
// Parameters a stage module holds: stage 0 the embedding, the last the final norm and the head (its
// own copy of the embedding when tied); stages = 1 is the whole model (count_parameters).
int64_t stage_parameters(const ModelConfig& m, int64_t stage, int64_t stages);

// FLOPs per token of one stage of a pipeline, forward and backward, with the codecs of the boundary
// it receives (rank_in, boundary stage−1) and the one it sends (rank_out, boundary stage); 0 = dense.
struct PassFlops {
    double forward = 0, backward = 0;
};
PassFlops stage_flops(const ModelConfig& m, int64_t stage, int64_t stages, int64_t rank_in = 0, int64_t rank_out = 0);

// A whole-model training step on `tokens` tokens: forward, backward and AdamW over every parameter.
double train_step_flops(const ModelConfig& m, int64_t tokens);

// ---- hardware -------------------------------------------------------------------------------------

struct HardwareProfile {
    std::string name;
    double peak_flops = 0;   // FLOP/s; 0 = none (custom: compute.peak_flops gives it)
    double efficiency = 1;   // default share of the peak a training step reaches
    std::string source;      // where the numbers come from
};
// cpu-here, rtx4090, a100, h100, custom (core/compute_model.cpp has the numbers and their sources).
const std::vector<HardwareProfile>& hardware_profiles();
const HardwareProfile* find_hardware(std::string_view name);

// Every problem of [compute] against the rest of the config, each naming its key, appended to
// `out` (validate_config calls it): keys that only apply to flops, a custom profile without a peak,
// node_speed's length against outer.replicas and its values, and the runs that cannot take node
// speeds (SkipPipe's scheduler and HDEE's experts assume equal nodes) or pinned SkipPipe times.
void validate_compute(const RunConfig& c, std::vector<std::string>& out);

// The effective FLOP/s of replica `replica`'s nodes: peak × efficiency × node_speed[replica], with
// the profile's values where the config gives 0. Requires compute.model = "flops", a valid config.
double effective_flops(const ComputeConfig& c, int64_t replica);

// ---- what the workers hold ------------------------------------------------------------------------

// One node's compute segments in seconds: each call takes the segment's measured seconds and returns
// them under "measured", or the segment's FLOPs / effective_flops under "flops". The seconds of
// every segment kind are computed once here, so equal segments get equal doubles (the clocks are
// sums of them). It also adds up the measured seconds it was given (take_measured_s), which a node
// under flops stores beside the modelled ones. Not thread-safe; one per worker.
class ComputeTime {
public:
    ComputeTime() = default;  // measured
    // A node of replica `replica` (index into compute.node_speed) holding the whole model (stage −1)
    // or stage `stage` of a pipeline replica of cluster.stages stages. cfg is the worker's checked
    // config with model.vocab_size resolved; the role comes from a coordinator, so a replica or stage
    // outside the config is an error naming it, not an abort. SkipPipe nodes and HDEE experts, which
    // have no node speeds, pass replica 0 and stage −1 (skip_op takes a SkipPipe op's stage).
    static Result<ComputeTime> create(const RunConfig& cfg, int64_t replica, int64_t stage = -1);

    bool modelled() const { return rate_ > 0; }
    double rate_flops() const { return rate_; }  // effective FLOP/s; 0 under measured

    // A whole-model training step of train.batch_size sequences (forward, backward, optimizer).
    double train_step(double measured_s);
    // A pipeline stage node's compute event (core/pipeline_program.h): a micro-batch's forward or
    // backward (train.batch_size / pipeline.micro_batches sequences), or the optimizer step.
    double stage_segment(const StageEvent& e, double measured_s);
    // A SkipPipe op on one micro-batch (train.batch_size / skippipe.micro_batches sequences): 'F' or
    // 'B' through `stage`'s blocks, 'H' the head op's forward and backward.
    double skip_op(char kind, int64_t stage, double measured_s);
    // SkipPipe's per-micro-batch times for its scheduler (core/skippipe.h SkipStageTimes's inputs):
    // one block, and the head op (embedding + final norm + head + loss). Modelled only.
    FwdBwd skip_block() const;
    FwdBwd skip_head() const;

    // The measured seconds given since the last call.
    double take_measured_s() { return std::exchange(measured_s_, 0.0); }

private:
    void fill(const RunConfig& cfg, int64_t replica, int64_t stage);
    double pick(double modelled_s, double measured_s) {
        measured_s_ += measured_s;
        return modelled() ? modelled_s : measured_s;
    }

    double rate_ = 0, measured_s_ = 0;
    double step_s_ = 0;                                   // whole-model step
    double fwd_s_ = 0, bwd_s_ = 0, optim_s_ = 0;          // this stage's micro-batch and optimizer
    double block_fwd_s_ = 0, block_bwd_s_ = 0;            // SkipPipe: one block, one micro-batch
    double head_fwd_s_ = 0, head_bwd_s_ = 0;              // SkipPipe: the head op, one micro-batch
    std::vector<int64_t> skip_blocks_;                    // SkipPipe: blocks per stage
};

}  // namespace tw
