// The names of every metric a worker writes and a reader (the run store's summaries, `runs`,
// `report`, the workbench, re-timing) reads, and the keys of a worker's final summary. A metric
// name reaches the run store and so every database ever written: renaming one breaks old runs, so
// these strings are part of the store's format. Writers and readers refer to these constants only,
// so a name cannot drift between the two sides.
//
// Pure constants, no dependencies; thread-safe.
#pragma once

#include <string>

namespace tw::metric {

// ---- per inner step (every node) -----------------------------------------------------------------
inline constexpr const char* kTrainLoss = "train.loss";              // mean cross-entropy of the step, nats/token
inline constexpr const char* kTrainLr = "train.lr";                  // inner learning rate used by the step
inline constexpr const char* kTrainGradNorm = "train.grad_norm";      // global gradient norm before clipping
inline constexpr const char* kTrainTokens = "train.tokens";          // cumulative tokens this node's replica trained on
// The step's compute seconds as the clock counts them: measured, or modelled under compute.model =
// "flops" (core/compute_model.h), and then also the measured ones, which only such runs store.
inline constexpr const char* kTrainComputeS = "train.compute_s";
inline constexpr const char* kTrainRealComputeS = "train.real_compute_s";
inline constexpr const char* kTrainTokensPerS = "train.tokens_per_s";  // tokens / train.compute_s
inline constexpr const char* kValLoss = "val.loss";                  // validation loss of the global model
inline constexpr const char* kPipeIdleS = "pipe.idle_s";             // a stage node's simulated idle time in the step

// A stage node's simulated clock, segment by segment (core/sim_clock.h, core/pipeline_program.h):
// one row per compute segment (a micro-batch's forward or backward, the optimizer step) and one
// per message it sent (activations, gradients, its squared gradient norm, the frozen table), each
// in the order the node ran them. Re-timing a pipeline run replays them (core/timeline.h).
inline constexpr const char* kClockComputeS = "clock.compute_s";
inline constexpr const char* kClockSendBytes = "clock.send_bytes";

// ---- per synchronisation round ------------------------------------------------------------------
inline constexpr const char* kRoundBytes = "round.bytes";                // payload bytes this node sent
inline constexpr const char* kRoundHops = "round.hops";                  // sequential transfers (latencies)
inline constexpr const char* kRoundComputeS = "round.compute_s";         // compute since the last round
inline constexpr const char* kRoundCommS = "round.comm_s";               // the transfer's cost on the link
inline constexpr const char* kRoundRealCommS = "round.real_comm_s";      // measured exchange wall seconds
inline constexpr const char* kRoundExposedCommS = "round.exposed_comm_s";  // time the node's clock waited
inline constexpr const char* kRoundUtilisation = "round.utilisation";    // compute / (compute + waited)
inline constexpr const char* kRoundOverlapSteps = "round.overlap_steps";  // τ: result applied this many steps later
// Bitmask of the replicas a round exchanged with (absent: all). A pipeline run's node writes one
// row per stage it holds, in stage order.
inline constexpr const char* kRoundGroupMask = "round.group_mask";
inline constexpr const char* kRoundGuardClipped = "round.guard_clipped";  // contributions the guard scaled
// Rounds among fewer than every replica (docs/faults.md): the members that took part, the attempts
// the round took (1 = no member was lost in it) and, for a straggler, how late it arrived.
inline constexpr const char* kRoundMembers = "round.members";
inline constexpr const char* kRoundAttempts = "round.attempts";
inline constexpr const char* kRoundLateS = "round.late_s";
// Wall seconds of a round in which a member was lost, from its first attempt to its commit: the
// wait that found the loss (the heartbeat timeout) and the redo among the survivors.
inline constexpr const char* kRoundLossWallS = "round.loss_wall_s";
inline constexpr const char* kRoundStateHash = "round.state_hash";  // 52 bits of the agreed state's hash
// Replicas of several nodes with outer.round_deadline_s: 52 bits of the hash of the weights every
// node of the replica holds after the round's broadcast from its leader.
inline constexpr const char* kRoundWeightsHash = "round.weights_hash";
inline constexpr const char* kRoundTFixedHash = "round.t_fixed_hash";     // 52 bits of T_fixed's state hash
// "round.stage<s>_hash": 52 bits of the hash of stage s's global weights after the round.
inline std::string round_stage_hash(long long stage) { return "round.stage" + std::to_string(stage) + "_hash"; }

// ---- run-scoped checkpoints (engine/worker/run_checkpoint.h) --------------------------------------
// Written at the step a node's checkpoint holds, after every other row of that step: a row means
// the file is in place and every earlier row of the node is in the store (one stream, in order).
// `thinwire run --resume` restarts at the latest step where every node of the run wrote one.
inline constexpr const char* kCkptBytes = "ckpt.bytes";    // the checkpoint file's size
inline constexpr const char* kCkptWriteS = "ckpt.write_s";  // wall seconds to serialise and write it

// ---- cumulative bytes per link class and direction (core/collective.h byte_metrics) -------------
inline constexpr const char* kBytesPrefix = "bytes.";  // "bytes.<intra|stage|outer>.<sent|recv>"
inline constexpr const char* kSentSuffix = ".sent";
inline constexpr const char* kRecvSuffix = ".recv";
inline constexpr const char* kBytesOuterSent = "bytes.outer.sent";
inline constexpr const char* kBytesOuterRecv = "bytes.outer.recv";
// State sent to a replica that joins or missed a deadline (docs/faults.md), apart from the rounds' bytes.
inline constexpr const char* kBytesRecoverySent = "bytes.outer.recovery.sent";
inline constexpr const char* kBytesRecoveryRecv = "bytes.outer.recovery.recv";
inline constexpr const char* kBytesIntraSent = "bytes.intra.sent";
inline constexpr const char* kBytesStageSent = "bytes.stage.sent";
// What came into a node that joined a relay through its data port, per link class: every frame's
// payload, counted or not (ByteCounters::relayed_recv_bytes). "relayed.<intra|stage|outer>.recv"
inline constexpr const char* kRelayedPrefix = "relayed.";
// True for the cumulative "bytes.*.sent" counters.
inline bool is_bytes_sent(const std::string& name) {
    const std::string suffix = kSentSuffix;
    return name.rfind(kBytesPrefix, 0) == 0 && name.size() > suffix.size() &&
           name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// ---- HDEE (names in core/hdee_plan.h) and SkipPipe runs ------------------------------------------
inline constexpr const char* kHdeePrefix = "hdee.";             // "hdee.<ensemble>.<figure>"
inline constexpr const char* kHdeeUnigramPrefix = "hdee.unigram.";  // "hdee.unigram.<domain>"
inline constexpr const char* kValLossPathPrefix = "val.loss.";  // SkipPipe: "val.loss.<path>"
// A SkipPipe run's stage times (seconds, one micro-batch), recorded once at step 0 by node (0, 0):
// what every node scheduled with, and what re-timing replays (core/skippipe.h skippipe_clocks).
inline constexpr const char* kSkipPipeBlockFwdS = "skippipe.block_fwd_s";
inline constexpr const char* kSkipPipeBlockBwdS = "skippipe.block_bwd_s";
inline constexpr const char* kSkipPipeHeadFwdS = "skippipe.head_fwd_s";
inline constexpr const char* kSkipPipeHeadBwdS = "skippipe.head_bwd_s";
inline constexpr const char* kSkipPipeHeadFraction = "skippipe.head_fraction";
inline constexpr const char* kSkipPipeTransferS = "skippipe.transfer_s";
// Per step: the step's simulated time (makespan + stage sync), the SkipPipe schedule's and the
// full pipeline's makespans, the peak of micro-batches held on one node, the stage sync's time.
inline constexpr const char* kSkipPipeIterS = "skippipe.iter_s";
inline constexpr const char* kSkipPipeSkipIterS = "skippipe.skip_iter_s";
inline constexpr const char* kSkipPipeFullIterS = "skippipe.full_iter_s";
inline constexpr const char* kSkipPipeMaxHeld = "skippipe.max_held";
inline constexpr const char* kSkipPipeSyncS = "skippipe.sync_s";
// Summary keys of node (0, 0): mean step time, mean SkipPipe makespan.
inline constexpr const char* kSkipPipeMeanIterS = "skippipe.mean_iter_s";
inline constexpr const char* kSkipPipeMeanSkipIterS = "skippipe.mean_skip_iter_s";

}  // namespace tw::metric

// The keys of a worker's final summary (core/worker.h WorkerSummary) besides the metric names above.
namespace tw::summary {
inline constexpr const char* kSteps = "steps";
inline constexpr const char* kValStep = "val_step";              // the step of the node's last val.loss (−1: none)
inline constexpr const char* kSimS = "sim_s";                      // final simulated clock
inline constexpr const char* kComputeS = "compute_s";              // total compute seconds
inline constexpr const char* kExposedCommS = "exposed_comm_s";     // total simulated waiting
inline constexpr const char* kUtilisation = "utilisation";         // compute / simulated time
inline constexpr const char* kSyncUtilisation = "sync_utilisation";  // compute / (compute + outer-sync waiting)
inline constexpr const char* kWallS = "wall_s";
}  // namespace tw::summary
