// The layout editor's per-replica settings: each replica's node speed
// (compute.node_speed) and its access link (network.replica_up_bps / replica_down_bps /
// replica_latency_s), edited row by row as the replica table shows them, written to the same
// per-replica lists `thinwire run` reads. Each list is empty (every replica at the default) or has
// one entry per replica; the editor keeps that shape:
//   * a row shows its list entry, or the default the run would use when the list is empty
//     (node speed 1; the outer link's bandwidth and latency, with [network]'s overrides applied);
//   * editing one row of an empty list fills it with the defaults first, then sets that row;
//   * when outer.replicas changes, a filled list is cut or extended with the defaults;
//   * `clear` empties a list (every replica back to the default).
// Also the compute model switch: going back to "measured" resets the keys that apply only to
// flops, since `thinwire run` refuses them there (core/compute_model.h validate_compute).
//
// Pure logic on a RunConfig, no ImGui. Not thread-safe (the caller owns the config).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.h"

namespace tw::ui {

enum class ReplicaSetting : int { kNodeSpeed = 0, kUpBps = 1, kDownBps = 2, kLatencyS = 3 };

// The config key of a setting ("compute.node_speed", "network.replica_up_bps", ...).
const char* replica_setting_key(ReplicaSetting s);
// The list behind a setting in `cfg`.
std::vector<double>& replica_setting_list(RunConfig& cfg, ReplicaSetting s);
const std::vector<double>& replica_setting_list(const RunConfig& cfg, ReplicaSetting s);

// What a replica gets when its list is empty: 1 for node speed; the outer link's value of the run's
// network profile with the [network] overrides (bits/s, seconds). NaN when the profile is unknown.
double replica_setting_default(const RunConfig& cfg, ReplicaSetting s);
// Replica `r`'s value: its list entry, or the default when the list is empty (or too short: the
// validator reports that length).
double replica_setting(const RunConfig& cfg, ReplicaSetting s, int64_t r);
// Sets replica `r`'s value, filling an empty list with the defaults first (outer.replicas entries).
// r outside [0, outer.replicas) is ignored.
void set_replica_setting(RunConfig& cfg, ReplicaSetting s, int64_t r, double v);
// Empties the list: every replica at the default.
void clear_replica_setting(RunConfig& cfg, ReplicaSetting s);
// Cuts or extends every filled list to outer.replicas entries (new rows at the default). Call after
// outer.replicas changed in the editor.
void fit_replica_settings(RunConfig& cfg);

// Sets compute.model; switching to "measured" resets hardware, peak, efficiency and node speeds.
void set_compute_model(RunConfig& cfg, const std::string& model);

// The effective FLOP/s of replica r under the config's [compute] (peak × efficiency × node speed,
// the profile's values where the config gives 0), or 0 when it is not a flops config or has none.
double replica_rate_flops(const RunConfig& cfg, int64_t r);

// Replica r's modelled whole-model step (s) under the config's flops [compute], counting FLOPs with
// model.vocab_size, or data.vocab_size (the tokenizer's target) when it is not resolved yet, as
// `thinwire plan` does; 0 when the rate is 0.
double replica_step_s(const RunConfig& cfg, int64_t r);

}  // namespace tw::ui
