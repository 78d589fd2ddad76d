// SkipPipe (Blagoev et al., arXiv 2502.19913), docs/methods.md §8: partial pipelines in which every
// micro-batch visits only L of the S stages, scheduled over N replicas' nodes so that no node runs
// two ops at once or holds more micro-batches than its memory allows.
//
// Model. Stage 0 holds the embedding and first blocks AND the final norm, head and loss, so every
// path starts on stage 0 and ends there; stage 0 is never skipped. Node (s, n) is replica n's node
// of stage s. Each replica feeds m micro-batches per iteration, which start and end on its own
// stage-0 node; between stages a micro-batch may go to any replica's node of the next stage.
//
// Paths. A path is a stage sequence of exactly L distinct stages starting at 0; each move goes to a
// higher stage (skipping any number) or back by exactly one stage (a swap, e.g. 0→2→1→3), at most
// max_swaps times. Consecutive swaps are allowed by this rule (0→3→2→1 has two).
//
// Time model (the rules of pipeline_schedule.h). Every node runs one op at a time; every hop between
// two visits costs transfer_s. Stage 0's two visits are costed as two ops on the replica's own
// stage-0 node, splitting fwd_s[0] and bwd_s[0] by head_fraction h:
//   first visit    forward (1−h)·fwd_s[0], and at the very end its backward (1−h)·bwd_s[0];
//   head (last)    one op of h·(fwd_s[0] + bwd_s[0]): head + loss forward and the head's backward run
//                  back to back (the loss gradient is ready at once, so there is nothing to wait for);
// a visit to stage s > 0 costs fwd_s[s] forward and bwd_s[s] backward. So a micro-batch runs
//   F(v0) → F(v1) → … → F(v_{L−1}) → head on (0, replica) → B(v_{L−1}) → … → B(v0),
// paying transfer_s before each op except the first (2·L hops). With h = 0 the head is a zero-cost
// turnaround and the whole of stage 0's time is spent in the first visit.
//
// Memory. A node holds a micro-batch's activations from the start of its forward visit to the end
// of its backward visit ([fwd_start, bwd_end), half-open: a hold ending at t frees its slot for one
// starting at t); at no time may a node hold more than memory_per_node micro-batches. On stage 0 the
// hold spans the head as well.
//
// Collisions. No two ops (forwards, backwards, heads) overlap in time on one node; zero-length ops
// never overlap anything. An op that finds its node busy waits, which costs makespan.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/network.h"
#include "core/status.h"

namespace tw {

// ---- problem and schedule --------------------------------------------------------------------------

struct SkipPipeProblem {
    int stages = 4;             // S ≥ 2
    int replicas = 2;           // N ≥ 1 nodes per stage
    int path_stages = 3;        // L, 2 ≤ L ≤ S (L = S is the full pipeline); skip ratio 1 − L/S
    int max_swaps = 2;          // ≥ 0 steps back by one stage per path
    int micro_batches = 4;      // m ≥ 1 per replica per iteration (N·m paths in all)
    int memory_per_node = 4;    // ≥ 1 micro-batches whose activations one node can hold at once
    std::vector<double> fwd_s;  // [S] seconds, forward of one micro-batch on each stage (stage 0 incl. head)
    std::vector<double> bwd_s;  // [S] seconds, backward of one micro-batch on each stage (stage 0 incl. head)
    double transfer_s = 0;      // seconds per hop (activation forward or gradient backward), ≥ 0
    double head_fraction = 0;   // h in [0, 1]: share of fwd_s[0] and bwd_s[0] spent in the head op
};

struct SkipVisit {
    int stage = 0;           // 0..S−1
    int node = 0;            // replica index 0..N−1 of the node of `stage` that runs this visit
    double fwd_start_s = 0;  // forward op on node (stage, node), seconds from the iteration's start
    double fwd_end_s = 0;
    double bwd_start_s = 0;  // backward op on the same node
    double bwd_end_s = 0;
};

struct SkipPath {
    int replica = 0;                // the replica that feeds it: starts and ends on node (0, replica)
    int micro_batch = 0;            // 0..m−1 within that replica
    std::vector<SkipVisit> visits;  // [L] in forward order; visits[0] is stage 0 on node (0, replica)
    double head_start_s = 0;        // the head op on node (0, replica), between the last forward
    double head_end_s = 0;          // visit and the first backward visit
};

struct SkipSchedule {
    std::vector<SkipPath> paths;  // [N·m], replica-major: paths[r·m + j] is replica r's micro-batch j
    double makespan_s = 0;        // end of the last op on any node
    int max_held = 0;             // peak number of micro-batches held on any node at any time
};

// ---- functions -------------------------------------------------------------------------------------

// "" when the problem is well formed, else every problem at once, one per line, e.g.
// "path_stages 7 exceeds stages 4".
std::string validate(const SkipPipeProblem& p);

// Every stage sequence that satisfies the path rules for (S, L, max_swaps), in lexicographic order;
// each starts with 0. Used by the scheduler and by tests.
std::vector<std::vector<int>> skip_paths(int stages, int path_stages, int max_swaps);

// Greedy list scheduler with a simulated-time objective:
//   1. Micro-batches are taken in the order (j = 0, replica 0), (0, 1), …, (1, 0), … so replicas
//      share the nodes fairly. Each is inserted into per-node reservation tables (busy intervals and
//      holds) that already contain every earlier micro-batch; later ones may fill earlier gaps.
//   2. Candidates: all stage sequences of skip_paths(), or a seeded sample of 64 of them when there are
//      more. For a sequence, nodes are chosen hop by hop: each forward goes to the node of that stage
//      where it would finish earliest (earliest gap that fits, after the activation arrives and
//      after the node has a free memory slot); ties go to the node with the least busy time so far,
//      then to a seeded choice. The head and the backwards then take the earliest gaps on the nodes
//      the forwards used, in reverse path order.
//   3. A candidate is feasible when every hold it adds keeps its node within memory_per_node over
//      the hold's whole interval. The feasible candidate whose last backward ends earliest wins (ties:
//      less busy time on the nodes it visits, then the seeded candidate order).
//   4. When no candidate is feasible, the micro-batch's first op may not start before the next time
//      a hold ends, and step 2 repeats. Past the last hold every node is empty, so this terminates;
//      the scheduler waits rather than violate a constraint.
// `seed` drives the sampling and tie-breaks only; the same (problem, seed) gives the same schedule.
// Fails only when validate(p) does, with its text.
Result<SkipSchedule> schedule_skippipe(const SkipPipeProblem& p, uint64_t seed);

// "" when `s` is a valid schedule for `p`, else the first violated constraint, starting with its
// name: "problem" (validate failed), "paths" (count, or a (replica, micro-batch) missing or twice),
// "path" (rules: start on (0, replica), L distinct stages, steps back only by one, swaps ≤ max_swaps,
// nodes in range), "duration" (an op's length differs from its cost), "order" (an op starts before its
// input arrives), "collision" (two ops overlap on one node), "memory" (a node holds more than
// memory_per_node), "max_held" (differs from the peak), "makespan" (differs from the last op's end).
// Durations and arrivals are compared with a tolerance of 1e-9 relative to the makespan.
std::string check_schedule(const SkipPipeProblem& p, const SkipSchedule& s);

// The full pipeline on the same nodes, for the comparison: L = S, path 0→1→…→S−1, no swaps, each
// replica's micro-batches on its own replica's nodes (replicas never share nodes). Each replica runs
// GPipe in waves of w = min(memory_per_node, m) micro-batches (gradient accumulation over waves, so
// no node holds more than w): per wave, node (s ≥ 1) runs the wave's forwards in micro-batch order,
// then its backwards in reverse order; node (0, r) runs the forwards, then the heads in order, then
// the backwards in reverse order; a wave starts on a node only after the previous wave's ops there.
// With h = 0 and memory ≥ m its makespan equals simulate_pipeline(kGPipe) over S + 1 stages whose
// last stage is the zero-cost head, every transfer being transfer_s (and the S-stage figure itself
// when transfer_s = 0). Ignores path_stages and max_swaps; fails only when validate(p) does.
Result<SkipSchedule> schedule_full_pipeline(const SkipPipeProblem& p);

// ---- per-stage times -------------------------------------------------------------------------------

// Seconds of one micro-batch's forward and backward through some part of the model.
struct FwdBwd {
    double fwd_s = 0, bwd_s = 0;
};

// What a SkipPipeProblem's fwd_s, bwd_s and head_fraction are built from (`thinwire skippipe`).
struct SkipStageTimes {
    FwdBwd block;                      // one transformer block, on one micro-batch [b, T, d]
    FwdBwd head;                       // the head op: embedding + final norm + head + loss, no blocks
    std::vector<double> fwd_s, bwd_s;  // [S] seconds per stage, as SkipPipeProblem::fwd_s / bwd_s
    double head_fraction = 0;          // (head.fwd_s + head.bwd_s) / (fwd_s[0] + bwd_s[0]), in [0, 1]
};

// Per-stage times from the two measurements: stage s costs blocks_per_stage[s] × block, and stage 0
// the head op on top (stage 0 holds the embedding and the head, see the model above):
//   fwd_s[s] = n_s·block.fwd_s + [s = 0]·head.fwd_s,   bwd_s[s] = n_s·block.bwd_s + [s = 0]·head.bwd_s.
// Every block has the same shape, so stages of equal size get exactly equal times (timing stages
// separately would add noise that the greedy scheduler then chases). blocks_per_stage is [S], S ≥ 1,
// e.g. {2, 2, 1, 1} for 6 layers on 4 stages (stage_spec, engine/model/llama.h, puts the remainder
// on the first stages). head_fraction is NaN when stage 0 costs nothing.
SkipStageTimes skip_stage_times(const FwdBwd& block, const FwdBwd& head, const std::vector<int64_t>& blocks_per_stage);

// ---- SkipPipe as a run: the [skippipe] section (core/config.h) and the node form's clock ----------------

// Fills the keys of an enabled section whose default depends on others: path_stages 0 → max(2, S − 1),
// memory_per_node 0 → micro_batches, eval_paths [] → {0, 2, 4, …} and the first half {0, …, S/2 − 1};
// then drops from eval_paths the in-order full path (always evaluated, as val.loss) and repeats.
// Idempotent; a no-op when the section is off (stages 0).
void resolve_skippipe_defaults(SkipPipeConfig& c);

// Every problem of [skippipe] against the rest of the config, each naming its key, appended to `out`
// (validate_config calls it): the scheduler's own rules (validate() above), stages ≤ model.n_layer,
// micro_batches dividing train.batch_size, two-entry times, eval paths that start at 0 and visit
// distinct stages below S, and the keys SkipPipe replaces (outer.algorithm "none", one outer replica,
// cluster.stages 1, cluster.nodes_per_replica 1, no checkpoints).
void validate_skippipe(const RunConfig& c, std::vector<std::string>& out);

// Blocks per stage of an S split of n_layer, earlier stages taking the remainder (the engine's
// stage_spec rule), [S]; requires 1 ≤ S ≤ n_layer.
std::vector<int64_t> skip_blocks_per_stage(int64_t n_layer, int64_t stages);

// Parameters each SkipPipe stage holds, [S]: stage 0 the embedding, its blocks, the final norm and an
// untied head; stage s > 0 its blocks. m.vocab_size must be resolved.
std::vector<int64_t> skip_stage_parameters(const ModelConfig& m, int64_t stages);

// What one step of a SkipPipe run costs in simulated time (the node form: engine/worker/skippipe_worker.cpp).
struct SkipStepTiming {
    SkipSchedule schedule;      // what the step trains on: the SkipPipe schedule, or the full pipeline's (skippipe.full)
    SkipSchedule skip;          // the SkipPipe schedule of the step (the reference when training the full pipeline)
    std::vector<char> visited;  // [S] 1 where some path of `schedule` visits the stage
    double iter_s = 0;          // schedule.makespan_s: skippipe.iter_s
    double sync_s = 0;          // stage sync after the schedule: skippipe.sync_s (see SkipPipeTiming)
};

// The scheduling problem of a run and its per-step clock. Built from the resolved config, the run's
// network and the two measured-or-pinned compute times, so that every node, and `runs retime` later,
// computes exactly the same schedules and clocks:
//   problem      fwd_s/bwd_s from skip_stage_times(block, head, skip_blocks_per_stage), head_fraction
//                and transfer_s from the section or (when −1) from the times and net.stage for one
//                dense fp32 activation [b, T, d], b = train.batch_size / micro_batches;
//   step(t)      schedule_skippipe(problem, run.seed + t) (schedule_full_pipeline with skippipe.full);
//                both are checked with check_schedule, a violation is an error (a scheduler bug);
//   sync_s       every visited stage's N holders all-gather their gradients over net.intra (each sends
//                stage_sync_bytes(s) in one hop, all stages at once), then each node sends its squared
//                gradient norm (8 B) to the other S − 1 stages of its replica over net.stage:
//                max over visited s of transfer_s(intra, stage_sync_bytes(s)) + transfer_s(stage, 8·(S − 1)),
//                the first term 0 when N = 1.
// The clock after step t is the sum of iter_s + sync_s over steps 0..t, in that order.
class SkipPipeTiming {
public:
    static Result<SkipPipeTiming> create(const RunConfig& cfg, const NetworkProfile& net, const FwdBwd& block,
                                         const FwdBwd& head);
    const SkipPipeProblem& problem() const { return p_; }
    const SkipSchedule& full_schedule() const { return full_; }
    Result<SkipStepTiming> step(int64_t step) const;
    uint64_t activation_bytes() const { return act_bytes_; }  // one dense hop: b·T·d·4
    // Bytes one holder of stage s sends in its stage's gradient all-gather: (N − 1)·4·P_s.
    uint64_t stage_sync_bytes(int64_t s) const;

private:
    SkipPipeProblem p_, p_full_;
    SkipSchedule full_;
    bool train_full_ = false;
    uint64_t seed_ = 0, act_bytes_ = 0;
    std::vector<int64_t> params_;
    LinkSpec intra_, stage_;
};

// `runs retime` of a SkipPipe run: the clock after each step 1..steps (index t−1) on `net`, replayed
// with SkipPipeTiming from the stored config and the recorded stage times. On the network the run was
// recorded on it reproduces the recorded clocks exactly (same doubles, same order).
Result<std::vector<double>> skippipe_clocks(const RunConfig& cfg, const NetworkProfile& net, const FwdBwd& block,
                                            const FwdBwd& head, int64_t steps);

// Intended usage: build a SkipPipeProblem from measured (or FLOP-derived) per-stage times and the
// stage link's transfer_s for one micro-batch's activations, then compare
// schedule_skippipe(p, seed)->makespan_s with schedule_full_pipeline(p)->makespan_s; the paths give
// every micro-batch's stage sequence and nodes for the pipeline workers to follow.

}  // namespace tw
