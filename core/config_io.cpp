// TOML parsing for RunConfig through one table of field descriptors, so parsing, overrides,
// range checks and serialisation cannot drift apart.
#include "core/config_io.h"
#include "core/config_toml.h"

#include "core/algorithm.h"
#include "core/assert.h"
#include "core/compute_model.h"
#include "core/number_text.h"
#include "core/time_budget.h"
#include "core/token_budget.h"
#include "core/hub_endpoint.h"
#include "core/hash.h"
#include "core/skippipe.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <variant>

#include <toml++/toml.h>

#include "core/fault_schedule.h"

namespace tw {

using namespace config_toml;

namespace {

std::vector<std::string> algorithm_choices() {
    std::vector<std::string> v;
    for (auto& t : algorithm_table()) v.push_back(t.name);
    return v;
}

std::vector<std::string> hardware_choices() {
    std::vector<std::string> v;
    for (auto& p : hardware_profiles()) v.push_back(p.name);
    return v;
}

using Ptr = FieldPtr;

struct Field {
    std::string key;  // dotted, e.g. "model.d_model"
    Ptr ptr;
    double min = -INFINITY;  // inclusive numeric range
    double max = INFINITY;
    std::vector<std::string> choices;  // allowed strings (empty = any)
    std::string label;                 // the layout editor's short label ("" = drawn by name only)
};

std::vector<Field> fields_of(RunConfig& c) {
    const double inf = INFINITY;
    return {
        {"run.name", &c.run.name},
        {"run.seed", &c.run.seed, 0, 9.0e15},
        {"run.threads", &c.run.threads, 1, 256},
        {"run.seeds", &c.run.seeds, 0, 9.0e15, {}, "seeds (one run each)"},

        {"model.preset", &c.model.preset, -inf, inf, {"micro", "tiny", "small", "base", "paper178m", "paper1b", "llama8b"}},
        {"model.vocab_size", &c.model.vocab_size, 0, 1 << 20},
        {"model.d_model", &c.model.d_model, 8, 65536},
        {"model.n_layer", &c.model.n_layer, 1, 1024},
        {"model.n_head", &c.model.n_head, 1, 1024},
        {"model.d_ff", &c.model.d_ff, 0, 1 << 20},
        {"model.seq_len", &c.model.seq_len, 2, 1 << 20},
        {"model.tie_embeddings", &c.model.tie_embeddings},
        {"model.rope_theta", &c.model.rope_theta, 1, inf},
        {"model.norm_eps", &c.model.norm_eps, 1e-12, 1},
        {"model.init_std", &c.model.init_std, 1e-6, 10},

        {"data.corpus", &c.data.corpus},
        {"data.cache_dir", &c.data.cache_dir},
        {"data.format", &c.data.format, -inf, inf, {"auto", "text", "lines", "jsonl"}},
        {"data.text_field", &c.data.text_field},
        {"data.tokenizer", &c.data.tokenizer, -inf, inf, {"bpe", "gpt2"}},
        {"data.vocab_size", &c.data.vocab_size, 64, 65535},
        {"data.val_fraction", &c.data.val_fraction, 0.01, 0.5},
        {"data.genres", &c.data.genres},
        {"data.train_shard", &c.data.train_shard},
        {"data.val_shard", &c.data.val_shard},

        {"train.steps", &c.train.steps, 0, 1e12},
        {"train.tokens_per_param", &c.train.tokens_per_param, 0, 1e9, {}, "budget: tokens per parameter (sets steps)"},
        {"train.batch_size", &c.train.batch_size, 1, 1 << 20},
        {"train.lr", &c.train.lr, 0, 10},
        {"train.min_lr_frac", &c.train.min_lr_frac, 0, 1},
        {"train.warmup_steps", &c.train.warmup_steps, 0, 1e12},
        {"train.weight_decay", &c.train.weight_decay, 0, 10},
        {"train.beta1", &c.train.beta1, 0, 0.999999},
        {"train.beta2", &c.train.beta2, 0, 0.999999},
        {"train.grad_clip", &c.train.grad_clip, 0, 1e9},
        {"train.eval_every", &c.train.eval_every, 0, 1e12},
        {"train.eval_batches", &c.train.eval_batches, 1, 1e6},
        {"train.log_every", &c.train.log_every, 1, 1e12},
        {"train.ckpt_every", &c.train.ckpt_every, 0, 1e12},
        {"train.ckpt_path", &c.train.ckpt_path},
        {"train.resume", &c.train.resume},

        {"outer.algorithm", &c.outer.algorithm, -inf, inf, algorithm_choices(), "outer algorithm"},
        {"outer.replicas", &c.outer.replicas, 1, 1024, {}, "replicas"},
        {"outer.inner_steps", &c.outer.inner_steps, 1, 1e12, {}, "H (inner steps)"},
        {"outer.lr", &c.outer.lr, 0, 100, {}, "outer lr (eta)"},
        {"outer.momentum", &c.outer.momentum, 0, 0.999999, {}, "outer momentum (mu)"},
        {"outer.dtype", &c.outer.dtype, -inf, inf, {"fp32", "bf16", "int8", "fp4"}, "wire dtype"},
        {"outer.topology", &c.outer.topology, -inf, inf, {"ring", "mesh", "hub"}, "exchange topology"},
        {"outer.topk_chunk", &c.outer.topk_chunk, 2, 64, {}, "top-k chunk side"},
        {"outer.topk_k", &c.outer.topk_k, 2, 4096, {}, "top-k per chunk"},
        {"outer.ef_beta", &c.outer.ef_beta, 0, 1, {}, "error feedback beta"},
        {"outer.aggregation", &c.outer.aggregation, -inf, inf, {"mean_over_replicas", "mean_over_selectors"},
         "aggregation"},
        {"outer.clip_median", &c.outer.clip_median, -inf, inf, {}, "median-norm clipping"},
        {"outer.fragments", &c.outer.fragments, 1, 1024, {}, "fragments (F)"},
        {"outer.fragment_order", &c.outer.fragment_order, -inf, inf, {"sequential", "strided"}, "fragment order"},
        {"outer.overlap_steps", &c.outer.overlap_steps, 0, 1e12, {}, "overlap steps (tau)"},
        {"outer.mix_alpha", &c.outer.mix_alpha, 0, 1, {}, "mixing (alpha)"},
        {"outer.group_size", &c.outer.group_size, 1, 1024, {}, "group size (g)"},
        {"outer.demo_chunk", &c.outer.demo_chunk, 2, 64, {}, "DCT chunk side"},
        {"outer.demo_topk", &c.outer.demo_topk, 1, 4096, {}, "DCT coefficients per chunk"},
        {"outer.demo_beta", &c.outer.demo_beta, 0, 1, {}, "momentum decay (beta)"},
        {"outer.demo_values", &c.outer.demo_values, -inf, inf, {"fp32", "sign"}, "values on the wire"},
        {"outer.demo_sign_update", &c.outer.demo_sign_update, -inf, inf, {}, "sign update"},
        {"outer.guard_ratio", &c.outer.guard_ratio, 0, 1e6, {}, "aggregation guard ratio (0 = off)"},
        {"outer.round_time_s", &c.outer.round_time_s, 0, 1e12, {}, "simulated seconds per round (0 = off)"},
        {"outer.round_deadline_s", &c.outer.round_deadline_s, 0, 1e12, {}, "round deadline (sim s after the first, 0 = off)"},

        {"network.profile", &c.network.profile, -inf, inf, {"datacenter", "wan-1g", "wan-100m", "home-20m"}},
        {"network.outer_bandwidth_bps", &c.network.outer_bandwidth_bps, 0, 1e15},
        {"network.outer_latency_s", &c.network.outer_latency_s, 0, 100},
        {"network.intra_bandwidth_bps", &c.network.intra_bandwidth_bps, 0, 1e15},
        {"network.intra_latency_s", &c.network.intra_latency_s, 0, 100},
        {"network.stage_bandwidth_bps", &c.network.stage_bandwidth_bps, 0, 1e15},
        {"network.stage_latency_s", &c.network.stage_latency_s, 0, 100},
        {"network.replica_up_bps", &c.network.replica_up_bps, 1, 1e15, {}, "per replica: uplink between replicas (bits/s)"},
        {"network.replica_down_bps", &c.network.replica_down_bps, 1, 1e15, {}, "per replica: downlink between replicas (bits/s)"},
        {"network.replica_latency_s", &c.network.replica_latency_s, 0, 100, {}, "per replica: one-way latency between replicas (s)"},
        {"network.relay_replicas", &c.network.relay_replicas, 0, 1e6, {}, "replicas reached through a relay"},
        {"network.relay_up_bps", &c.network.relay_up_bps, 0, 1e15, {}, "the relay's uplink (bits/s, 0 = the outer link's)"},
        {"network.relay_down_bps", &c.network.relay_down_bps, 0, 1e15, {}, "the relay's downlink (bits/s, 0 = the outer link's)"},
        {"network.relay_latency_s", &c.network.relay_latency_s, 0, 100, {}, "latency the relay adds (s)"},
        {"network.shape", &c.network.shape},

        {"compute.model", &c.compute.model, -inf, inf, {"measured", "flops"}, "compute model"},
        {"compute.hardware", &c.compute.hardware, -inf, inf, hardware_choices(), "hardware"},
        {"compute.peak_flops", &c.compute.peak_flops, 0, 1e21, {}, "peak FLOP/s (0 = the hardware's)"},
        {"compute.efficiency", &c.compute.efficiency, 0, 1, {}, "efficiency (0 = the hardware's)"},
        {"compute.node_speed", &c.compute.node_speed, 0, 1e6, {}, "speed per replica"},

        {"cluster.mode", &c.cluster.mode, -inf, inf, {"threads", "local", "remote"}},
        {"cluster.endpoints", &c.cluster.endpoints},
        {"cluster.node_keys", &c.cluster.node_keys},
        {"cluster.coordinator_key", &c.cluster.coordinator_key},
        {"cluster.relay", &c.cluster.relay, -inf, inf, {}, "relay the joined nodes are found at"},
        {"cluster.relay_key", &c.cluster.relay_key, -inf, inf, {}, "the relay's public key"},
        {"cluster.relay_listen", &c.cluster.relay_listen, -inf, inf, {}, "relay this coordinator hosts"},
        {"cluster.relay_public_host", &c.cluster.relay_public_host, -inf, inf, {}, "address dialers use for relayed nodes"},
        {"cluster.join_timeout_s", &c.cluster.join_timeout_s, 1, 86400, {}, "wait for joined nodes (s)"},
        {"cluster.nodes", &c.cluster.nodes, 0, 4096},
        {"cluster.nodes_per_replica", &c.cluster.nodes_per_replica, 1, 1024},
        {"cluster.stages", &c.cluster.stages, 1, 1024},
        {"cluster.heartbeat_s", &c.cluster.heartbeat_s, 0.01, 60},
        {"cluster.heartbeat_timeout_s", &c.cluster.heartbeat_timeout_s, 0.05, 3600},
        {"cluster.hub_endpoint", &c.cluster.hub_endpoint, -inf, inf, {}, "hub relay endpoint"},
        {"cluster.min_replicas", &c.cluster.min_replicas, 1, 65535, {}, "quorum: live replicas to go on"},
        {"cluster.spares", &c.cluster.spares, 0, 63, {}, "spare nodes standing by"},
        {"cluster.restart_lost", &c.cluster.restart_lost, 0, 1000, {}, "restarts of a lost node process"},
        {"cluster.max_local_processes", &c.cluster.max_local_processes, 1, 1 << 20, {}, "most child processes per run"},
        {"cluster.memory_check", &c.cluster.memory_check, -inf, inf, {"refuse", "warn", "off"},
         "memory check before the start"},

        {"pipeline.replicas", &c.pipeline.replicas, -1, 1024},
        {"pipeline.schedule", &c.pipeline.schedule, -inf, inf, {"gpipe", "1f1b"}},
        {"pipeline.micro_batches", &c.pipeline.micro_batches, 1, 1 << 20},
        {"pipeline.rank", &c.pipeline.rank, 0, 65536},
        {"pipeline.boundary_ranks", &c.pipeline.boundary_ranks, 0, 65536},
        {"pipeline.replica_ranks", &c.pipeline.replica_ranks, 0, 65536},
        {"pipeline.coord_dtype", &c.pipeline.coord_dtype, -inf, inf, {"fp32", "bf16", "int8"}},
        {"pipeline.codec", &c.pipeline.codec},
        {"pipeline.constraint", &c.pipeline.constraint, -inf, inf, {"project", "reparam"}},
        {"pipeline.frozen_std", &c.pipeline.frozen_std, 0, 100},
        {"pipeline.routing", &c.pipeline.routing, -inf, inf, {"fixed", "random"}},
        {"pipeline.adaptations", &c.pipeline.adaptations, -inf, inf, {"ad1", "ad2", "ad3", "ad5", "ad6"}},

        {"skippipe.stages", &c.skippipe.stages, 0, 1024},
        {"skippipe.path_stages", &c.skippipe.path_stages, 0, 1024},
        {"skippipe.max_swaps", &c.skippipe.max_swaps, 0, 1024},
        {"skippipe.replicas", &c.skippipe.replicas, 1, 1024},
        {"skippipe.micro_batches", &c.skippipe.micro_batches, 1, 1 << 20},
        {"skippipe.memory_per_node", &c.skippipe.memory_per_node, 0, 1 << 20},
        {"skippipe.head_fraction", &c.skippipe.head_fraction, -1, 1},
        {"skippipe.transfer_s", &c.skippipe.transfer_s, -1, 1e6},
        {"skippipe.block_s", &c.skippipe.block_s, 0, 1e6},
        {"skippipe.head_s", &c.skippipe.head_s, 0, 1e6},
        {"skippipe.eval_paths", &c.skippipe.eval_paths, 0, 1024},
        {"skippipe.full", &c.skippipe.full},

        {"hdee.domains", &c.hdee.domains},
        {"hdee.domain_genres", &c.hdee.domain_genres},
        {"hdee.prior_alpha", &c.hdee.prior_alpha, 1e-9, 1e9},
        {"hdee.eval_doc_tokens", &c.hdee.eval_doc_tokens, 0, 1e12},
        {"hdee.homogeneous_d_ff", &c.hdee.homogeneous_d_ff, 0, 1 << 20},
        {"hdee.hetero_size_d_ff", &c.hdee.hetero_size_d_ff, 0, 1 << 20},
        {"hdee.hetero_size_steps", &c.hdee.hetero_size_steps, 1, 1e9},
        {"hdee.hetero_steps_d_ff", &c.hdee.hetero_steps_d_ff, 0, 1 << 20},
        {"hdee.hetero_steps_steps", &c.hdee.hetero_steps_steps, 1, 1e9},

        {"faults.events", &c.faults.events, -inf, inf, {}, "fault events"},
        {"faults.churn.mtbf_steps", &c.faults.churn_mtbf_steps, 0, 1e12, {}, "churn: mean steps between failures"},
        {"faults.churn.down_steps", &c.faults.churn_down_steps, 0, 1e12, {}, "churn: steps down"},
        {"faults.churn.seed", &c.faults.churn_seed, 0, 9.0e15, {}, "churn seed"},
    };
}

FieldType type_of(const Ptr& p) { return static_cast<FieldType>(p.index()); }

const char* type_name(const Ptr& p) {
    switch (p.index()) {
        case 0: return "an integer";
        case 1: return "a number";
        case 2: return "a boolean";
        case 3: return "a string";
        case 4: return "an array of strings";
        case 5: return "an array of integers";
        case 6: return "an array of numbers";
        default: return "an array of integer arrays, e.g. [[0, 2], [0, 1]]";
    }
}

// The readers below return "" or the reason the node was refused, and write `out` only when they
// accept it (a refused array leaves the field as it was).
std::string expected(const Field& f) { return std::string("expected ") + type_name(f.ptr); }

// An integer within the field's range.
std::string read_int(const Field& f, const toml::node& n, int64_t& out) {
    auto v = n.value_exact<int64_t>();
    if (!v) return expected(f);
    if (*v < f.min || *v > f.max)
        return "value " + std::to_string(*v) + " is out of range [" + number_text(f.min) + ", " + number_text(f.max) + "]";
    out = *v;
    return "";
}

// A finite number within the field's range; integers are accepted for floats.
std::string read_number(const Field& f, const toml::node& n, double& out) {
    auto v = n.value<double>();
    if (!v || n.is_boolean()) return expected(f);
    if (!std::isfinite(*v) || *v < f.min || *v > f.max)
        return "value " + number_text(*v) + " is out of range [" + number_text(f.min) + ", " + number_text(f.max) + "]";
    out = *v;
    return "";
}

// A string among the field's choices (any string when it has none); `list_choices` names them in
// the refusal (a scalar's; an array's elements are refused by value alone).
std::string read_string(const Field& f, const toml::node& n, std::string& out, bool list_choices) {
    auto v = n.value_exact<std::string>();
    if (!v) return expected(f);
    if (!f.choices.empty() && std::find(f.choices.begin(), f.choices.end(), *v) == f.choices.end()) {
        if (!list_choices) return "unknown value \"" + *v + "\"";
        std::string list;
        for (auto& c : f.choices) list += (list.empty() ? "" : ", ") + c;
        return "unknown value \"" + *v + "\" (expected one of: " + list + ")";
    }
    out = *v;
    return "";
}

// An array whose every element `read_one` accepts.
template <class T, class ReadOne>
std::string read_array(const Field& f, const toml::node& n, std::vector<T>& out, ReadOne read_one) {
    auto* arr = n.as_array();
    if (!arr) return expected(f);
    std::vector<T> got;
    for (auto& el : *arr) {
        T v{};
        if (std::string why = read_one(el, v); !why.empty()) return why;
        got.push_back(std::move(v));
    }
    out = std::move(got);
    return "";
}

// Assigns a TOML node to a field; returns "" or the reason it was refused.
std::string assign(const Field& f, const toml::node& node) {
    const auto one_int = [&f](const toml::node& n, int64_t& v) { return read_int(f, n, v); };
    return std::visit(
        [&](auto* p) -> std::string {
            using T = std::remove_pointer_t<decltype(p)>;
            if constexpr (std::is_same_v<T, int64_t>) {
                return read_int(f, node, *p);
            } else if constexpr (std::is_same_v<T, double>) {
                return read_number(f, node, *p);
            } else if constexpr (std::is_same_v<T, bool>) {
                auto v = node.value_exact<bool>();
                if (!v) return expected(f);
                *p = *v;
                return "";
            } else if constexpr (std::is_same_v<T, std::string>) {
                return read_string(f, node, *p, true);
            } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
                return read_array(f, node, *p, one_int);
            } else if constexpr (std::is_same_v<T, std::vector<double>>) {
                return read_array(f, node, *p, [&f](const toml::node& n, double& v) { return read_number(f, n, v); });
            } else if constexpr (std::is_same_v<T, std::vector<std::vector<int64_t>>>) {
                return read_array(f, node, *p, [&](const toml::node& n, std::vector<int64_t>& row) {
                    return read_array(f, n, row, one_int);
                });
            } else {
                return read_array(f, node, *p,
                                  [&f](const toml::node& n, std::string& v) { return read_string(f, n, v, false); });
            }
        },
        f.ptr);
}

}  // namespace


Result<RunConfig> parse_config(const std::string& text, const std::string& source,
                               const std::vector<std::string>& overrides) {
    std::vector<std::string> problems;
    std::vector<std::pair<std::string, const toml::node*>> items;  // (key, node) in application order
    std::vector<std::string> origins;                              // where each item came from

    toml::table file_table;
    if (!text.empty()) {
        std::string error;
        if (!parse_toml(text, source, file_table, error)) return Result<RunConfig>::error(error);
        size_t before = items.size();
        flatten(file_table, "", items);
        origins.insert(origins.end(), items.size() - before, source);
    }
    std::vector<toml::table> override_tables;
    override_tables.reserve(overrides.size());
    for (auto& o : overrides) {
        auto eq = o.find('=');
        if (eq == std::string::npos || eq == 0) {
            problems.push_back("--set " + o + ": expected key=value");
            continue;
        }
        std::string key = o.substr(0, eq), val = o.substr(eq + 1);
        toml::table t;
        std::string ignored;
        if (!parse_toml("x = " + val, "--set", t, ignored) &&
            !parse_toml("x = \"" + val + "\"", "--set", t, ignored)) {  // bare words are strings
            problems.push_back("--set " + key + ": cannot parse value \"" + val + "\"");
            continue;
        }
        override_tables.push_back(std::move(t));
        items.emplace_back(key, override_tables.back().get("x"));
        origins.push_back("--set");
    }

    RunConfig cfg;
    auto fields = fields_of(cfg);
    auto find = [&](const std::string& k) -> const Field* {
        for (auto& f : fields)
            if (f.key == k) return &f;
        return nullptr;
    };
    // The preset goes first (the last one given wins) so explicit shape keys override it.
    for (size_t i = 0; i < items.size(); ++i) {
        if (items[i].first != "model.preset") continue;
        std::string why = assign(*find("model.preset"), *items[i].second);
        if (!why.empty()) problems.push_back(origins[i] + ": model.preset: " + why);
    }
    if (Status s = apply_model_preset(cfg.model.preset, cfg.model); !s) problems.push_back(s.message());
    // The paper presets are GPT-2-sized models: GPT-2's tokenizer unless data.tokenizer says otherwise.
    if (cfg.model.preset == "paper178m" || cfg.model.preset == "paper1b") cfg.data.tokenizer = "gpt2";

    for (size_t i = 0; i < items.size(); ++i) {
        auto& [key, node] = items[i];
        if (key == "model.preset") continue;
        const Field* f = find(key);
        if (!f) {
            problems.push_back(origins[i] + ": " + key + ": unknown key");
            continue;
        }
        std::string why = assign(*f, *node);
        if (!why.empty()) problems.push_back(origins[i] + ": " + key + ": " + why);
    }
    if (problems.empty()) {
        resolve_skippipe_defaults(cfg.skippipe);
        resolve_algorithm(cfg);  // after the overrides: the id, and the topology's default for it
        // A fixed tokenizer fixes the vocabulary (before the token budget, which counts the embedding).
        if (cfg.data.tokenizer == "gpt2" && cfg.model.vocab_size == 0) cfg.model.vocab_size = kGpt2VocabSize;
        if (Status s = apply_token_budget(cfg); !s) return Result<RunConfig>::error(source + ": " + s.message());
        if (Status s = validate_config(cfg); !s) return Result<RunConfig>::error(source + ": " + s.message());
        return cfg;
    }
    std::string msg = std::to_string(problems.size()) + (problems.size() == 1 ? " problem" : " problems") +
                      " in the configuration:";
    for (auto& p : problems) msg += "\n  " + p;
    return Result<RunConfig>::error(msg);
}

Result<RunConfig> load_config(const std::string& path, const std::vector<std::string>& overrides) {
    if (path.empty()) return parse_config("", "<default>", overrides);
    std::ifstream in(path);
    if (!in) return Result<RunConfig>::error("cannot read config file " + path);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    if (text.empty()) text = "# empty\n";  // an empty file is the defaults, not "no file"
    return parse_config(text, path, overrides);
}



const std::vector<FieldInfo>& config_fields() {
    static const std::vector<FieldInfo> infos = [] {
        RunConfig c;
        std::vector<FieldInfo> out;
        for (auto& f : fields_of(c))
            out.push_back({f.key, type_of(f.ptr), f.min, f.max, f.choices, f.label.empty() ? f.key : f.label,
                           algorithms_using(f.key)});
        return out;
    }();
    return infos;
}

const FieldInfo* config_field(std::string_view key) {
    for (auto& f : config_fields())
        if (f.key == key) return &f;
    return nullptr;
}

FieldPtr config_field_ptr(RunConfig& cfg, std::string_view key) {
    for (auto& f : fields_of(cfg))
        if (f.key == key) return f.ptr;
    TW_ASSERT(false && "config_field_ptr: not a key of the field table");
    return FieldPtr{};
}

namespace {

// A TOML value as text: floats in the shortest form that parses back to the same double
// (std::to_chars without a precision; "0.6", never "0.59999999999999998"), with ".0" added to an
// integral one so it stays a float; arrays as "[ a, b ]"; everything else as toml++ writes it.
void write_value(std::ostream& os, const toml::node& node) {
    if (auto* d = node.as_floating_point()) {
        const double v = d->get();
        if (!std::isfinite(v)) {
            os << *d;
            return;
        }
        char buf[64];
        const auto res = std::to_chars(buf, buf + sizeof buf, v);
        const std::string_view text(buf, static_cast<size_t>(res.ptr - buf));
        os << text;
        if (text.find_first_of(".eE") == std::string_view::npos) os << ".0";
    } else if (auto* a = node.as_array()) {
        if (a->empty()) {
            os << "[]";
            return;
        }
        os << "[ ";
        for (size_t i = 0; i < a->size(); ++i) {
            if (i) os << ", ";
            write_value(os, *a->get(i));
        }
        os << " ]";
    } else {
        node.visit([&](auto& v) { os << v; });
    }
}

// One section's `key = value` lines, keys in toml++'s order (sorted), as toml++ lays them out.
void write_section(std::ostream& os, const toml::table& t) {
    bool first = true;
    for (auto& [key, node] : t) {
        if (!first) os << "\n";
        first = false;
        os << key.str() << " = ";
        write_value(os, node);
    }
}

}  // namespace

namespace {
template <class T>
bool is_empty_text(T* p) {
    if constexpr (std::is_same_v<T, std::string>) return p->empty();
    else return false;
}
}  // namespace

std::string to_toml(const RunConfig& cfg_in) {
    RunConfig cfg = cfg_in;
    // A config built in code may leave outer.topology empty: written as the value it resolves to, so
    // the text parses back to the same run (and hashes like the parsed config).
    resolve_topology(cfg);
    std::map<std::string, toml::table> sections;
    for (auto& f : fields_of(cfg)) {
        // Written (and so hashed) only when set, like [faults] below.
        if (f.key == "cluster.spares" && cfg.cluster.spares == 0) continue;
        if (f.key == "cluster.restart_lost" && cfg.cluster.restart_lost == 0) continue;
        // Launch limits decide whether a run starts, not what it computes: written only when set.
        if (f.key == "cluster.max_local_processes" && cfg.cluster.max_local_processes == ClusterConfig{}.max_local_processes)
            continue;
        if (f.key == "cluster.memory_check" && cfg.cluster.memory_check == ClusterConfig{}.memory_check) continue;
        // Where joined nodes are found decides who takes part, not what is computed: written only when set.
        if (f.key.rfind("cluster.relay", 0) == 0 && std::visit([](auto* p) { return is_empty_text(p); }, f.ptr)) continue;
        if (f.key == "cluster.join_timeout_s" && cfg.cluster.join_timeout_s == ClusterConfig{}.join_timeout_s) continue;
        if (f.key == "train.tokens_per_param" && cfg.train.tokens_per_param <= 0) continue;
        if (f.key == "run.seeds" && cfg.run.seeds.empty()) continue;
        auto dot = f.key.find('.');
        std::string sec = f.key.substr(0, dot), name = f.key.substr(dot + 1);
        std::visit(
            [&](auto* p) {
                using T = std::remove_pointer_t<decltype(p)>;
                if constexpr (std::is_same_v<T, std::vector<std::string>> || std::is_same_v<T, std::vector<int64_t>> ||
                              std::is_same_v<T, std::vector<double>>) {
                    toml::array a;
                    for (auto& s : *p) a.push_back(s);
                    sections[sec].insert_or_assign(name, a);
                } else if constexpr (std::is_same_v<T, std::vector<std::vector<int64_t>>>) {
                    toml::array a;
                    for (auto& row : *p) {
                        toml::array r;
                        for (auto v : row) r.push_back(v);
                        a.push_back(r);
                    }
                    sections[sec].insert_or_assign(name, a);
                } else {
                    sections[sec].insert_or_assign(name, *p);
                }
            },
            f.ptr);
    }
    std::ostringstream os;
    for (const char* sec : {"run", "model", "data", "train", "outer", "network", "compute", "cluster", "pipeline",
                            "skippipe"}) {
        os << "[" << sec << "]\n";
        write_section(os, sections[sec]);
        os << "\n\n";
    }
    // Written (and so hashed) only when set: every run without it keeps its resolved text and hash.
    for (const char* sec : {"hdee", "faults"}) {
        if (std::string_view(sec) == "hdee" ? !cfg.hdee.enabled() : !cfg.faults.enabled()) continue;
        os << "[" << sec << "]\n";
        write_section(os, sections[sec]);
        os << "\n\n";
    }
    return os.str();
}

std::map<std::string, std::string> config_key_values(const std::string& resolved_toml) {
    std::map<std::string, std::string> out;
    std::istringstream in(resolved_toml);
    std::string line, section;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        if (line[0] == '[') {
            section = line.substr(1, line.find(']') - 1);
            continue;
        }
        auto eq = line.find(" = ");
        if (eq != std::string::npos) out[section + "." + line.substr(0, eq)] = line.substr(eq + 3);
    }
    return out;
}

std::string config_hash(const RunConfig& cfg) {
    const uint64_t h = seeded_hash64(to_toml(cfg));
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

}  // namespace tw
