// Validation of a whole RunConfig (config_io.h validate_config): the cross-field rules of the outer
// algorithms, pipelines, HDEE, the hub endpoint and fault schedules, each problem naming its key.
#include "core/config_io.h"

#include <algorithm>
#include <sstream>

#include "core/algorithm.h"
#include "core/compute_model.h"
#include "core/fault_schedule.h"
#include "core/hub_endpoint.h"
#include "core/joined_nodes.h"
#include "core/number_text.h"
#include "core/run_kind.h"
#include "core/run_kind_parts.h"
#include "core/skippipe.h"
#include "core/time_budget.h"
#include "core/token_budget.h"

namespace tw {
// [pipeline] against the rest of the config; appends every problem.
void validate_pipeline(const RunConfig& c, std::vector<std::string>& p) {
    const PipelineConfig& pl = c.pipeline;
    const int64_t S = c.cluster.stages, R = c.outer.replicas, d = c.model.d_model;
    if (S <= 1) return;
    if (pl.replicas > R)
        p.push_back("pipeline.replicas " + std::to_string(pl.replicas) + " exceeds outer.replicas " + std::to_string(R));
    const auto algo = named_algorithm(c);
    if (algo && !traits_of(*algo).pipelines)
        p.push_back("cluster.stages " + std::to_string(S) + ": pipeline replicas sync by stage with " +
                    algorithm_names_where([](const AlgorithmTraits& t) { return t.pipelines && t.outer_rounds; }) +
                    " (or none for one replica), not " + c.outer.algorithm);
    if (algo == Algorithm::kNone && R > 1)
        p.push_back("outer.replicas " + std::to_string(R) + " needs an outer.algorithm");
    if (c.cluster.nodes_per_replica > 1)
        p.push_back("cluster.nodes_per_replica must be 1 with pipeline replicas (cluster.stages > 1)");
    if (c.model.tie_embeddings)
        p.push_back("model.tie_embeddings must be false with pipeline replicas: the head lives on the last stage, "
                    "the embedding on the first");
    if (c.train.batch_size % pl.micro_batches != 0)
        p.push_back("train.batch_size " + std::to_string(c.train.batch_size) + " is not a multiple of " +
                    "pipeline.micro_batches " + std::to_string(pl.micro_batches));
    if (!pl.boundary_ranks.empty() && static_cast<int64_t>(pl.boundary_ranks.size()) != S - 1)
        p.push_back("pipeline.boundary_ranks has " + std::to_string(pl.boundary_ranks.size()) + " entries, " +
                    "cluster.stages " + std::to_string(S) + " has " + std::to_string(S - 1) + " boundaries");
    if (!pl.boundary_ranks.empty() && !pl.replica_ranks.empty())
        p.push_back("pipeline.boundary_ranks and pipeline.replica_ranks: give one of them");
    const int64_t P = pl.replicas < 0 ? R : pl.replicas;
    if (!pl.replica_ranks.empty() && static_cast<int64_t>(pl.replica_ranks.size()) != P)
        p.push_back("pipeline.replica_ranks has " + std::to_string(pl.replica_ranks.size()) + " entries for " +
                    std::to_string(P) + " pipeline replicas");
    auto check_rank = [&](int64_t k, const std::string& where) {
        if (k > d) p.push_back(where + " " + std::to_string(k) + " exceeds model.d_model " + std::to_string(d));
    };
    check_rank(pl.rank, "pipeline.rank");
    // A codec's name: which ones exist is the engine's registry's to say (a node refuses an unknown
    // one naming those it has); here only its form.
    const bool name_ok = !pl.codec.empty() && pl.codec.size() <= 32 &&
                         std::all_of(pl.codec.begin(), pl.codec.end(),
                                     [](char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_'; });
    if (!name_ok)
        p.push_back("pipeline.codec \"" + pl.codec.substr(0, 40) +
                    "\" is not a codec name (1–32 characters of a–z, 0–9 and _)");
    for (size_t i = 0; i < pl.boundary_ranks.size(); ++i)
        check_rank(pl.boundary_ranks[i], "pipeline.boundary_ranks[" + std::to_string(i) + "]");
    for (size_t i = 0; i < pl.replica_ranks.size(); ++i)
        check_rank(pl.replica_ranks[i], "pipeline.replica_ranks[" + std::to_string(i) + "]");
    if (pl.routing == "random" && P != R)
        p.push_back("pipeline.routing \"random\" routes between pipeline replicas: every replica must be one "
                    "(pipeline.replicas = -1)");
    if (pl.routing == "random" && !pl.replica_ranks.empty())
        p.push_back("pipeline.routing \"random\" needs one rank for all replicas (pipeline.replica_ranks differs per replica)");
    bool dense = false, compressed = false;
    for (auto k : pl.boundary_ranks) (k == 0 ? dense : compressed) = true;
    if (dense && compressed)
        p.push_back("pipeline.boundary_ranks mixes 0 (dense) with compressed boundaries; the token ids travel only "
                    "with compressed ones");
}

// [hdee] against the rest of the config (core/hdee_plan.h plans the experts from it).
void validate_hdee(const RunConfig& c, std::vector<std::string>& p) {
    const HdeeConfig& h = c.hdee;
    const size_t D = h.domains.size();
    if (!h.enabled()) {
        if (!h.domain_genres.empty() || !h.hetero_size_d_ff.empty() || !h.hetero_size_steps.empty() ||
            !h.hetero_steps_d_ff.empty() || !h.hetero_steps_steps.empty())
            p.push_back("hdee.domains: the [hdee] section needs its domains");
        return;
    }
    std::vector<std::string> seen_names;
    for (const std::string& d : h.domains) {
        const bool plain = !d.empty() && d.size() <= 24 &&
                           std::all_of(d.begin(), d.end(), [](char ch) {
                               return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                                      ch == '_' || ch == '-';
                           });
        if (!plain)
            p.push_back("hdee.domains: \"" + d + "\" must be 1-24 letters, digits, '_' or '-' (it names nodes)");
        if (std::find(seen_names.begin(), seen_names.end(), d) != seen_names.end())
            p.push_back("hdee.domains: \"" + d + "\" is listed twice");
        seen_names.push_back(d);
    }
    if (h.domain_genres.size() != D)
        p.push_back("hdee.domain_genres has " + std::to_string(h.domain_genres.size()) + " entries for " +
                    std::to_string(D) + " domains (one string of Brown genre letters per domain, e.g. \"abc\")");
    std::string used;
    for (size_t d = 0; d < h.domain_genres.size(); ++d) {
        const std::string& g = h.domain_genres[d];
        if (g.empty()) p.push_back("hdee.domain_genres[" + std::to_string(d) + "] is empty");
        for (char ch : g) {
            if (std::string("abcdefghjklmnpr").find(ch) == std::string::npos)
                p.push_back("hdee.domain_genres[" + std::to_string(d) + "]: '" + std::string(1, ch) +
                            "' is not a Brown genre (a-h, j-n, p, r)");
            else if (used.find(ch) != std::string::npos)
                p.push_back("hdee.domain_genres: genre '" + std::string(1, ch) + "' is in two domains");
            else
                used += ch;
        }
    }
    for (auto [key, v] : {std::pair<const char*, const std::vector<int64_t>*>{"hdee.hetero_size_d_ff", &h.hetero_size_d_ff},
                          {"hdee.hetero_size_steps", &h.hetero_size_steps},
                          {"hdee.hetero_steps_d_ff", &h.hetero_steps_d_ff},
                          {"hdee.hetero_steps_steps", &h.hetero_steps_steps}})
        if (v->size() > 1 && v->size() != D)
            p.push_back(std::string(key) + " has " + std::to_string(v->size()) + " entries for " + std::to_string(D) +
                        " domains (give one for all or one per domain)");
    if (named_algorithm(c) != Algorithm::kNone)
        p.push_back("outer.algorithm \"" + c.outer.algorithm + "\": HDEE experts train alone (\"none\")");
    if (c.cluster.stages > 1 || c.cluster.nodes_per_replica > 1)
        p.push_back("cluster.stages / cluster.nodes_per_replica: an HDEE expert is one node");
    if (!c.data.genres.empty()) p.push_back("data.genres: leave unset with [hdee] (hdee.domain_genres sets it per expert)");
    if (!c.data.train_shard.empty()) p.push_back("data.train_shard: HDEE needs the corpus's genres");
    if (!c.train.ckpt_path.empty())
        p.push_back("train.ckpt_path: a one-node run's file; HDEE experts checkpoint with train.ckpt_every alone");
    if (c.train.steps < 1) p.push_back("train.steps: the homogeneous experts' steps must be at least 1");
    if (h.eval_doc_tokens > 0 && h.eval_doc_tokens <= c.model.seq_len)
        p.push_back("hdee.eval_doc_tokens " + std::to_string(h.eval_doc_tokens) + " is not above model.seq_len " +
                    std::to_string(c.model.seq_len) + " (0 = whole documents)");
}


Status validate_config(const RunConfig& c) {
    std::vector<std::string> p;
    if (c.model.d_model % c.model.n_head != 0)
        p.push_back("model.d_model " + std::to_string(c.model.d_model) + " is not divisible by model.n_head " +
                    std::to_string(c.model.n_head));
    else if (c.model.head_dim() % 2 != 0)
        p.push_back("model.d_model / model.n_head must be even for RoPE (it is " + std::to_string(c.model.head_dim()) +
                    ")");
    if (!c.data.train_shard.empty() && c.data.val_shard.empty())
        p.push_back("data.val_shard is required when data.train_shard is set");
    if (!c.data.train_shard.empty() && c.model.vocab_size == 0)
        p.push_back("model.vocab_size must be set when training from shards (the tokenizer is not known)");
    if (c.data.tokenizer == "gpt2" && c.model.vocab_size != 0 && c.model.vocab_size != kGpt2VocabSize)
        p.push_back("model.vocab_size " + std::to_string(c.model.vocab_size) + " conflicts with data.tokenizer \"gpt2\", "
                    "whose vocabulary is 50257 ids (leave model.vocab_size unset)");
    if (c.data.text_field.empty()) p.push_back("data.text_field is empty (the JSONL field that holds a document's text)");
    if (c.data.corpus == "brown" && c.data.format != "auto" && c.data.format != "text")
        p.push_back("data.format \"" + c.data.format + "\" does not apply to the Brown Corpus (data.corpus = \"brown\")");
    for (auto& g : c.data.genres)
        if (g.size() != 1 || g[0] < 'a' || g[0] > 'r')
            p.push_back("data.genres: \"" + g + "\" is not a Brown genre letter a-r");
    if (c.train.resume && c.train.ckpt_path.empty()) p.push_back("train.resume needs train.ckpt_path");
    // What an algorithm supports is its traits' answer (core/algorithm.h); its own settings are
    // checked by its row's check function.
    const auto algo = named_algorithm(c);
    if (!algo) p.push_back("outer.algorithm \"" + c.outer.algorithm + "\" is unknown (expected one of: " + algorithm_names() + ")");
    const bool single = algo == Algorithm::kNone;
    // train.ckpt_path is one node's file (`thinwire train`, train.resume); every run kind
    // checkpoints with train.ckpt_every alone, run-scoped (docs/checkpoints.md).
    if (algo && !single && !c.train.ckpt_path.empty())
        p.push_back("train.ckpt_path: a one-node run's file; a " + c.outer.algorithm +
                    " run checkpoints every node with train.ckpt_every alone (resume: thinwire run --resume RUN)");
    if (single && c.outer.replicas > 1)
        p.push_back("outer.replicas " + std::to_string(c.outer.replicas) + " needs an outer.algorithm (e.g. \"diloco\")");
    auto multi_node = [](const AlgorithmTraits& t) { return t.multi_node_replicas; };
    if (single && c.cluster.nodes_per_replica > 1)
        p.push_back("cluster.nodes_per_replica " + std::to_string(c.cluster.nodes_per_replica) +
                    " needs an outer.algorithm (" + algorithm_names_where(multi_node) + ")");
    if (algo && !single && c.cluster.nodes_per_replica > 1 && !traits_of(*algo).multi_node_replicas)
        p.push_back("cluster.nodes_per_replica " + std::to_string(c.cluster.nodes_per_replica) + ": replicas of several nodes run " +
                    algorithm_names_where(multi_node) + "; " + c.outer.algorithm + " needs one node per replica");
    if (algo && traits_of(*algo).outer_rounds && !traits_of(*algo).dense_wire_dtypes && c.outer.dtype != "fp32")
        p.push_back("outer.dtype \"" + c.outer.dtype + "\" does not apply to " + c.outer.algorithm +
                    " (its wire format is its own); leave it at fp32");
    if (algo && traits_of(*algo).check) traits_of(*algo).check(c, p);
    if (std::string t = topology_problem(c); !t.empty()) p.push_back(t);
    if (c.outer.guard_ratio > 0 && c.outer.guard_ratio < 1)
        p.push_back("outer.guard_ratio " + number_text(c.outer.guard_ratio) +
                    " must be 0 (off) or at least 1 (below 1 it scales healthy replicas down every round)");
    if (c.cluster.stages > c.model.n_layer)
        p.push_back("cluster.stages " + std::to_string(c.cluster.stages) + " exceeds model.n_layer " +
                    std::to_string(c.model.n_layer) + " (a stage holds at least one block)");
    // Each run kind's own section (a section set for another kind is a problem too).
    for (const RunKindRow& kind : run_kind_table())
        if (kind.check) kind.check(c, p);
    for (auto [key, list] : {std::pair{"network.replica_up_bps", &c.network.replica_up_bps},
                             std::pair{"network.replica_down_bps", &c.network.replica_down_bps},
                             std::pair{"network.replica_latency_s", &c.network.replica_latency_s}})
        if (!list->empty() && static_cast<int64_t>(list->size()) != c.outer.replicas)
            p.push_back(std::string(key) + ": " + std::to_string(list->size()) + " entries for " +
                        std::to_string(c.outer.replicas) + " replicas (one per replica, or none)");
    for (size_t i = 0; i < c.network.relay_replicas.size(); ++i) {
        const int64_t r = c.network.relay_replicas[i];
        if (r >= c.outer.replicas)
            p.push_back("network.relay_replicas[" + std::to_string(i) + "] = " + std::to_string(r) + ": the run has " +
                        std::to_string(c.outer.replicas) + " replicas (0.." + std::to_string(c.outer.replicas - 1) + ")");
        for (size_t j = 0; j < i; ++j)
            if (c.network.relay_replicas[j] == r)
                p.push_back("network.relay_replicas names replica " + std::to_string(r) + " twice");
    }
    validate_compute(c, p);
    validate_time_budget(c, p);
    if (c.cluster.heartbeat_timeout_s <= 2 * c.cluster.heartbeat_s)
        p.push_back("cluster.heartbeat_timeout_s must exceed twice cluster.heartbeat_s");
    if (c.cluster.mode == "remote" && c.cluster.endpoints.empty())
        p.push_back("cluster.endpoints: a remote cluster needs the endpoints of its nodes");
    validate_joined_nodes(c, p);
    if (!c.cluster.node_keys.empty() && c.cluster.node_keys.size() != c.cluster.endpoints.size())
        p.push_back("cluster.node_keys: " + std::to_string(c.cluster.node_keys.size()) + " keys for " +
                    std::to_string(c.cluster.endpoints.size()) + " endpoints (one public key per node)");
    if (c.cluster.node_keys.empty() != c.cluster.coordinator_key.empty())
        p.push_back("cluster.node_keys and cluster.coordinator_key go together: keyed nodes need both");
    validate_hub_endpoint(c, p);
    FaultSchedule::problems(c, p);
    if (p.empty()) return Status::ok();
    std::string msg = p[0];
    for (size_t i = 1; i < p.size(); ++i) msg += "\n  " + p[i];
    return Status::error(msg);
}

}  // namespace tw
