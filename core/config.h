// Run configuration: plain aggregate structs with defaults, parsed from TOML (core/config_io.h).
// The resolved config (defaults filled in) is stored with every run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/algorithm_id.h"

namespace tw {

// [model] — LLaMA-style decoder, docs/methods.md §0. `preset` fills the shape; explicit keys override it.
struct ModelConfig {
    std::string preset = "tiny";  // tiny | small | base | paper178m | paper1b | llama8b
    // 0 = take it from the tokenizer / shards; with data.tokenizer = "gpt2" it is 50,257 (set when
    // the config is parsed; another value is an error).
    int64_t vocab_size = 0;
    int64_t d_model = 128;        // residual width
    int64_t n_layer = 4;          // decoder blocks
    int64_t n_head = 4;           // attention heads; d_model % n_head == 0
    int64_t d_ff = 0;             // SwiGLU hidden width; 0 = 8/3·d_model rounded up to a multiple of 32
    int64_t seq_len = 128;        // context length T
    bool tie_embeddings = true;   // head shares the token embedding
    double rope_theta = 10000.0;  // RoPE base
    double norm_eps = 1e-5;       // RMSNorm epsilon
    double init_std = 0.02;       // N(0, init_std) for weights; residual writers scaled by 1/sqrt(2·n_layer)

    int64_t ff_width() const { return d_ff > 0 ? d_ff : ((8 * d_model / 3 + 31) / 32) * 32; }
    int64_t head_dim() const { return d_model / n_head; }
};

// GPT-2's vocabulary (data.tokenizer = "gpt2"): 256 bytes, 50,000 merges, <|endoftext|>.
inline constexpr int64_t kGpt2VocabSize = 50257;

// [data] — corpus, tokenizer, split, loader filters.
struct DataConfig {
    std::string corpus = "brown";        // "brown", or a path to a text or JSON Lines file or a folder of them
    // How a corpus file is read (docs/data_formats.md): "text" (documents cut at blank lines; each
    // file of a folder is one), "lines" (one document per non-empty line), "jsonl" (one JSON object
    // per line, its data.text_field the document), or "auto": JSONL for .jsonl/.json files, one
    // document per line for a file with no blank line and at least 10 lines, else text.
    std::string format = "auto";
    std::string text_field = "text";      // the JSONL field that holds a document's text
    // "bpe" (SentencePiece BPE trained on the corpus, data.vocab_size pieces) | "gpt2" (GPT-2's
    // byte-level BPE, 50,257 ids, files fetched by scripts/setup.sh). The paper178m and paper1b
    // presets default to "gpt2".
    std::string tokenizer = "bpe";
    // Where the corpus, tokenizer and shards are cached, relative to the data root (core/data_root.h;
    // by default the per-user cache folder, e.g. ~/.cache/thinwire); "." = the data root itself.
    std::string cache_dir = ".";
    int64_t vocab_size = 4096;            // pieces of the "bpe" tokenizer; "gpt2" has its own 50,257
    double val_fraction = 0.1;            // held-out documents, every 1/val_fraction-th per genre
    std::vector<std::string> genres;      // Brown genre letters a–r to train on; empty = all
    std::string train_shard;              // optional llm.c .bin shard instead of the corpus
    std::string val_shard;                // its validation shard (required with train_shard)
};

// [train] — inner optimizer and loop.
struct TrainConfig {
    int64_t steps = 500;            // optimizer steps (default: ~1M tokens, under 3 minutes on 2 cores)
    // Training budget in tokens per model parameter (core/token_budget.h); > 0 sets `steps` from it
    // when the config is parsed (the stored config holds both). 20 = compute-optimal (Chinchilla).
    double tokens_per_param = 0;
    int64_t batch_size = 16;        // sequences per step (B)
    double lr = 3e-3;               // peak AdamW learning rate
    double min_lr_frac = 0.1;       // cosine decays to lr·min_lr_frac
    int64_t warmup_steps = 50;      // linear warm-up
    double weight_decay = 0.1;      // AdamW decoupled decay (matrices only)
    double beta1 = 0.9;
    double beta2 = 0.95;
    double grad_clip = 1.0;         // max global grad norm; 0 = off
    int64_t eval_every = 100;       // steps between validation passes; 0 = only at the end
    int64_t eval_batches = 8;       // validation batches per pass
    int64_t log_every = 10;         // steps between plain progress lines (non-terminal output)
    // Steps between checkpoints, every run kind (docs/checkpoints.md): each node writes its own,
    // run-scoped, at the first round boundary at or after each multiple, and where a clean stop
    // leaves it; `thinwire run --resume RUN` continues from them. 0 = none (one-node runs with
    // ckpt_path: only at the end).
    int64_t ckpt_every = 0;
    std::string ckpt_path;          // one-node runs: also this file (every ckpt_every steps and at the end)
    bool resume = false;            // one-node runs: continue from ckpt_path if it exists
};

// [outer] — the cross-replica algorithm. Replicas are engine nodes brought up by the coordinator
// (threads, local processes or other machines, see [cluster]); they talk over ZeroMQ links.
struct OuterConfig {
    std::string algorithm = "none";  // a name of core/algorithm.h's table: none (one node), ddp, diloco, …
    // The row `algorithm` names, set with it when a config is parsed (parse_config, through
    // core/algorithm.h resolve_algorithm), so algorithm_of reads it instead of looking the name up. A
    // config built or changed in code may leave it behind its name: algorithm_of sees the mismatch
    // and looks the name up then. Not a key: the TOML holds the name only.
    Algorithm algorithm_id = Algorithm::kNone;
    int64_t replicas = 1;            // R; each reads a disjoint part of the training stream
    int64_t inner_steps = 50;        // H: inner steps per outer round
    double lr = 0.7;                 // η, outer learning rate
    double momentum = 0.9;           // μ, outer Nesterov momentum (0 = plain outer SGD)
    std::string dtype = "fp32";      // fp32 | bf16 | int8 | fp4: dense outer gradients on the wire
    // ring | mesh (core/topology.h): how a round's payloads travel. Empty = the algorithm's default
    // (core/algorithm.h), filled in when the config is parsed: ring for diloco and streaming_diloco,
    // mesh for noloco (which takes ring too), mesh only for sparseloco and demo (sparse payloads).
    std::string topology;
    // SparseLoCo (docs/methods.md §3)
    int64_t topk_chunk = 64;         // chunk side: 64×64 blocks for matrices, runs of 64² for vectors
    int64_t topk_k = 64;             // kept entries per full chunk (even); density = topk_k / topk_chunk²
    double ef_beta = 0.95;           // β, error-feedback decay
    std::string aggregation = "mean_over_replicas";  // mean_over_replicas | mean_over_selectors
    bool clip_median = false;        // scale each replica's values to at most the median L2 norm
    // Streaming DiLoCo (docs/methods.md §4)
    int64_t fragments = 3;           // F: fragments of the blocks, one syncs every H/F steps
    std::string fragment_order = "sequential";  // sequential (contiguous layers) | strided (every F-th)
    int64_t overlap_steps = 0;       // τ < H/F: inner steps that run while a fragment's exchange is in flight
    double mix_alpha = 0.0;          // α: local fragment ← (1−α)·global + α·local
    // NoLoCo (docs/methods.md §5)
    int64_t group_size = 2;          // g: replicas per random group
    // DeMo (docs/demo.md): momentum, chunked DCT, Top-k coefficients on the wire, sign update
    int64_t demo_chunk = 64;         // s: chunk side: s×s tiles (2-D DCT) for matrices, runs of s (1-D) otherwise
    int64_t demo_topk = 32;          // DCT coefficients kept per full chunk; a partial chunk of n keeps ⌈k·n/s²⌉
    double demo_beta = 0.999;        // β, momentum decay (the transmitted components are taken out of it)
    std::string demo_values = "fp32";  // fp32 (the coefficients) | sign (one bit each, ±1)
    bool demo_sign_update = true;    // θ ← θ − η·sign(IDCT(mean)) as in the paper; false: θ ← θ − η·IDCT(mean)
    // Aggregation guard of every outer algorithm (engine/algo/aggregation_guard.h): a replica's
    // contribution with an L2 norm above guard_ratio × the lower median of the others' is scaled
    // down to that bound (metric round.guard_clipped). 0 = off; healthy replicas never reach 4×.
    double guard_ratio = 4.0;
    // Time-budgeted rounds (core/time_budget.h, docs/time_budget.md): simulated seconds of compute per
    // round; each replica runs as many inner steps as fit (slow nodes fewer), the aggregate weights
    // replicas by their tokens. 0 = off (every replica runs inner_steps). Needs compute.model = "flops".
    double round_time_s = 0;
    // Stragglers (docs/faults.md): simulated seconds after a round's first arrival that the round
    // waits; a replica that arrives later is left out of that round's aggregate (it still applies
    // it) and its pseudo-gradient is carried into its next round. 0 = wait for everyone.
    double round_deadline_s = 0;
};

// [network] — simulated links (docs/methods.md §10); overrides of 0 keep the profile's value.
struct NetworkConfig {
    std::string profile = "wan-1g";  // datacenter | wan-1g | wan-100m | home-20m
    double outer_bandwidth_bps = 0;  // override for the outer-sync link (between replicas)
    double outer_latency_s = 0;      // override for the outer-sync link
    double intra_bandwidth_bps = 0;  // override for the link inside a full replica (its DDP group)
    double intra_latency_s = 0;      // override for the link inside a full replica
    double stage_bandwidth_bps = 0;  // override for the link between pipeline stages
    double stage_latency_s = 0;      // override for the link between pipeline stages
    // Per replica (a participant on its own site), its access link for traffic between replicas:
    // uplink and downlink bandwidth (bits/s) and one-way latency (s). Each list is empty (every
    // replica on the outer link) or has one entry per replica; a missing list takes the outer link's.
    std::vector<double> replica_up_bps, replica_down_bps, replica_latency_s;
    // Replicas that peers reach only through a relay (nodes behind NAT that joined one,
    // docs/relay.md): traffic into them between replicas crosses the relay's own access link, which
    // the relayed replicas of a round share. Up/down 0 = the outer link's bandwidth; latency is added
    // to theirs. Declared like the links above, so threads and a real relay run clock alike.
    std::vector<int64_t> relay_replicas;
    double relay_up_bps = 0, relay_down_bps = 0, relay_latency_s = 0;
    // Make the data plane as slow in wall time as these links (remote/link_shaper.h): a live demo of
    // the network on one machine. Simulated time, losses and bytes do not change.
    bool shape = false;
};

// [compute] — how a compute segment advances the simulated clock (core/compute_model.h,
// docs/compute_model.md). "measured": by its wall seconds on this machine (every run before issue
// 15); "flops": by its FLOPs divided by the node's effective rate, peak_flops × efficiency ×
// node_speed[replica], so the clock no longer depends on machine load. The other keys apply to flops.
struct ComputeConfig {
    std::string model = "measured";     // measured | flops
    std::string hardware = "cpu-here";  // a profile of core/compute_model.cpp: cpu-here | rtx4090 | a100 | h100 | custom
    double peak_flops = 0;              // FLOP/s; 0 = the profile's (custom: required)
    double efficiency = 0;              // share of the peak a training step reaches, (0, 1]; 0 = the profile's
    std::vector<double> node_speed;     // per replica (outer.replicas entries): rate multiplier, > 0; empty = all 1
};

// [cluster] — where the nodes run and how they form replicas (docs/architecture.md §3).
struct ClusterConfig {
    std::string mode = "threads";        // threads (inproc://) | local (child processes, tcp loopback) | remote
    std::vector<std::string> endpoints;  // remote: control endpoints of running `thinwire node`s, tcp://HOST:PORT
    // remote with CurveZMQ: each node's public key (the Z85 text or a public.key file), parallel to
    // endpoints, and this coordinator's secret key file (`thinwire keys new DIR`); empty = no keys.
    std::vector<std::string> node_keys;
    std::string coordinator_key;
    // Nodes nobody can dial (behind NAT or a firewall) join a relay (`thinwire node --join`,
    // remote/relay.h) and are named in endpoints by key: "key:K" (K the Z85 text or a public.key
    // file; its node_keys entry may then be ""). The coordinator asks the relay `relay`
    // (tcp://HOST:PORT, public key `relay_key`) where each is and waits up to join_timeout_s for
    // all of them. relay_listen: this coordinator hosts the relay itself on tcp://ADDRESS:PORT
    // (then `relay` may stay "": nodes join ADDRESS, dialers use relay_public_host or ADDRESS).
    std::string relay;
    std::string relay_key;
    std::string relay_listen;
    std::string relay_public_host;
    double join_timeout_s = 120;
    int64_t nodes = 0;                   // threads/local: nodes to bring up; 0 = as many as the layout needs
    int64_t nodes_per_replica = 1;       // a full replica of n > 1 nodes all-reduces gradients (Gloo) every step
    int64_t stages = 1;                  // stages of a pipeline replica ([pipeline]); 1 = full replicas only
    double heartbeat_s = 0.5;            // heartbeat interval, both ways
    double heartbeat_timeout_s = 5;      // a node (or the coordinator) silent this long fails the run
    // outer.topology = "hub": where the coordinator's relay listens and the replicas connect,
    // tcp://HOST:PORT (an address of the coordinator's machine the nodes reach). "" = loopback on a
    // free port, which thread and child-process nodes reach; a remote cluster must name one.
    std::string hub_endpoint;
    // Survivors go on (docs/faults.md): a run of an outer algorithm continues while at least this
    // many replicas are live; below it the run stops with the reason. 1 = as long as one is left.
    int64_t min_replicas = 1;
    // Standby nodes (docs/faults.md "Spares"): each joins the data-plane mesh idle and takes the
    // place of a replica lost for good (a real loss, or a scheduled kill without rejoin) at the
    // next round boundary. Outer algorithms with one node per replica only. 0 = none.
    int64_t spares = 0;
    // Restarted nodes (docs/faults.md "Restarted nodes"): a replica's node process lost for real is
    // restarted by its coordinator, at most this many times per node, and the fresh process rejoins
    // at the first round boundary after its peers hear that it is up; a replica of several nodes
    // restarts as a whole. Full replicas of an outer algorithm, in child processes (cluster.mode =
    // "local") or on a remote cluster (one-node replicas: its operator restarts the node). 0 = never.
    int64_t restart_lost = 0;
    // Launch limits, checked before any node starts (coordinator/launch_limits.h, docs/launch_limits.md).
    // At most this many child processes (cluster.mode = "local") in one run: each is a LibTorch
    // runtime of its own, and a thousand of them take a machine whatever its memory. Raise it knowingly.
    int64_t max_local_processes = 64;
    // The run's memory estimated from this config (core/memory_estimate.h) against what this machine
    // has available (MemAvailable, or a cgroup's room): "refuse" (default) refuses a run that does not
    // fit and warns above 80%, "warn" only warns, "off" skips the check.
    std::string memory_check = "refuse";
};

// [pipeline] — pipeline replicas and their compressed boundaries (docs/methods.md §5–§7); read when
// cluster.stages > 1. The last `replicas` of outer.replicas are pipelines of cluster.stages nodes
// (one stage each); the others are full replicas (whole model, one node).
struct PipelineConfig {
    int64_t replicas = -1;               // pipeline replicas, the last ones; -1 = all
    std::string schedule = "1f1b";       // gpipe | 1f1b
    int64_t micro_batches = 4;           // m: train.batch_size is split into m micro-batches
    int64_t rank = 0;                    // subspace rank k of every boundary; 0 = dense activations (no compression)
    std::vector<int64_t> boundary_ranks; // per boundary (stages − 1 entries), instead of rank
    std::vector<int64_t> replica_ranks;  // per pipeline replica, instead of rank (0 = that replica sends dense)
    std::string coord_dtype = "fp32";    // fp32 | bf16 | int8: subspace coordinates on the wire
    // The activation codec of compressed boundaries (rank k > 0), by its registered name
    // (engine/pipeline/activation_codec_registry.h: "subspace", or one added there); boundaries of
    // rank 0 send dense fp32 whatever this says.
    std::string codec = "subspace";
    std::string constraint = "project";  // project (W ← U·Uᵀ·W after each step) | reparam (W = U·Z, Z trained;
                                         // pipeline stages only, implies AD1; AD5 full replicas project)
    double frozen_std = 1.0;             // std of the frozen embedding T_fixed (docs/methods.md §6: N(0, 1))
    std::string routing = "fixed";       // fixed (own replica's next stage) | random (NoLoCo: a seeded random replica's)
    // Heterogeneous SparseLoCo adaptations (docs/methods.md §7): any of ad1 ad2 ad3 ad5 ad6
    std::vector<std::string> adaptations = {"ad1", "ad2", "ad6"};

    bool has(const std::string& ad) const {
        for (auto& a : adaptations)
            if (a == ad) return true;
        return false;
    }
};

// [skippipe] — SkipPipe (docs/methods.md §8, docs/skippipe.md): partial pipelines on S·N nodes, node (s, n)
// holding stage s for "replica" n. Off unless `stages` ≥ 2; then every node of the run is a SkipPipe
// stage node and outer.algorithm stays "none" (the holders of a stage average its gradients every
// step themselves). Keys whose default depends on others are filled in when the config is parsed
// (path_stages, memory_per_node, eval_paths), so the stored config holds the values used.
struct SkipPipeConfig {
    int64_t stages = 0;           // S: stages, one node each per replica; 0 = not a SkipPipe run; 2 ≤ S ≤ model.n_layer
    int64_t path_stages = 0;      // L: stages per path; 0 = max(2, S − 1)
    int64_t max_swaps = 2;        // steps back by one stage allowed per path
    int64_t replicas = 2;         // N: nodes per stage (pipelines sharing the nodes)
    int64_t micro_batches = 4;    // m per replica per step; must divide train.batch_size
    int64_t memory_per_node = 0;  // micro-batches whose activations one node can hold; 0 = m
    double head_fraction = -1;    // share of stage 0's time in the head op; −1 = from the stage times
    double transfer_s = -1;       // seconds per hop; −1 = [network] stage link for a dense [b, T, d] fp32 activation
    // [forward_s, backward_s] of one block / the head op (embedding + final norm + head + loss) on one
    // micro-batch; empty = measured once by node (0, 0) and sent to the others.
    std::vector<double> block_s;
    std::vector<double> head_s;
    std::vector<std::vector<int64_t>> eval_paths;  // partial models evaluated besides the full one; [] = default
    bool full = false;            // train the full-pipeline baseline: every micro-batch on 0→1→…→S−1 (GPipe)

    bool enabled() const { return stages >= 2; }
};

// [hdee] — HDEE expert ensembles (docs/methods.md §9, docs/hdee.md; planning in core/hdee_plan.h).
// Active when `domains` is set: the run's nodes are then experts, one per (ensemble, domain) for the
// three ensembles homogeneous, hetero_size and hetero_steps, each training alone on its domain's
// genres. The homogeneous experts train train.steps steps at homogeneous_d_ff and set the FLOPs
// budget; the heterogeneous ensembles' steps are proportions, scaled to that budget. Per-domain
// lists take one entry (every domain alike) or one per domain, in `domains` order.
struct HdeeConfig {
    std::vector<std::string> domains;          // domain names (node names "ENSEMBLE.DOMAIN"); empty = no HDEE
    std::vector<std::string> domain_genres;    // per domain, its Brown genre letters as one string, e.g. "abc"
    double prior_alpha = 1.0;                  // add-alpha smoothing of the posterior rule's prior (> 0)
    int64_t eval_doc_tokens = 0;               // leading tokens of each validation document scored; 0 = all
    int64_t homogeneous_d_ff = 0;              // MLP width of every homogeneous expert; 0 = model.d_ff's
    std::vector<int64_t> hetero_size_d_ff;     // widths per domain (0 = model's); empty = homogeneous_d_ff
    std::vector<int64_t> hetero_size_steps;    // step proportions per domain; empty = equal
    std::vector<int64_t> hetero_steps_d_ff;    // widths per domain; empty = homogeneous_d_ff
    std::vector<int64_t> hetero_steps_steps;   // step proportions per domain; empty = equal

    bool enabled() const { return !domains.empty(); }
};

// [faults] — failures as an experiment variable (core/fault_schedule.h, docs/faults.md): replicas
// killed, paused, slowed or disconnected at given steps and rejoining later, and seeded random
// churn. Carried out for real (a worker stops and a fresh one rejoins) and placed at round
// boundaries, so under compute.model = "flops" the same schedule gives the same losses.
struct FaultConfig {
    // One event per entry: "kill R at S rejoin T", "disconnect R at S rejoin T", "pause R at S until T",
    // "slow R at S until T x K" (R replica, S/T steps, K compute factor); "rejoin T" is optional.
    std::vector<std::string> events;
    int64_t churn_mtbf_steps = 0;  // seeded churn: mean steps between one replica's failures; 0 = none
    int64_t churn_down_steps = 0;  // steps a churned replica stays down before it rejoins
    int64_t churn_seed = 1;        // the churn's own generator (not run.seed)

    bool enabled() const { return !events.empty() || churn_mtbf_steps > 0; }
};

// [run]
struct RunSection {
    std::string name = "default";   // label stored with the run
    int64_t seed = 1337;            // weights, data order
    // Seeds to repeat the run with (`thinwire run`/`sweep`): each variant or sweep point runs once
    // per seed in the experiment's group, each run storing its own run.seed and an empty list.
    // Empty = one run with `seed`.
    std::vector<int64_t> seeds;
    int64_t threads = 2;            // intra-op threads (same seed + threads → identical losses)
};

struct RunConfig {
    RunSection run;
    ModelConfig model;
    DataConfig data;
    TrainConfig train;
    OuterConfig outer;
    NetworkConfig network;
    ComputeConfig compute;
    ClusterConfig cluster;
    PipelineConfig pipeline;
    SkipPipeConfig skippipe;
    HdeeConfig hdee;
    FaultConfig faults;

    // Pipeline replicas among outer.replicas (0 when cluster.stages == 1).
    int64_t pipeline_replicas() const {
        if (cluster.stages <= 1) return 0;
        return pipeline.replicas < 0 ? outer.replicas : pipeline.replicas;
    }
    bool is_pipeline_replica(int64_t r) const { return r >= outer.replicas - pipeline_replicas(); }
    // Subspace rank of boundary b (stage b → b+1) of replica r; 0 = dense.
    int64_t boundary_rank(int64_t r, int64_t b) const {
        if (!is_pipeline_replica(r)) return 0;
        if (!pipeline.boundary_ranks.empty()) return pipeline.boundary_ranks[static_cast<size_t>(b)];
        if (!pipeline.replica_ranks.empty())
            return pipeline.replica_ranks[static_cast<size_t>(r - (outer.replicas - pipeline_replicas()))];
        return pipeline.rank;
    }
};

}  // namespace tw
