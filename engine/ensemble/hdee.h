// HDEE, heterogeneous domain expert ensembles (Ersoy et al., arXiv 2502.19385; docs/methods.md §9;
// docs/hdee.md): the engine's part. Experts are trained independently, one per node, and meet only
// on the coordinator, which combines their per-token log-probabilities (core/hdee_mixture.h; the
// plan and the domain split's rule are core/hdee_plan.h). Here: scoring windows with a trained
// model, a domain's split of the prepared validation documents, and the expert node's worker.
// Torch-free header: the model and loader are only named.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/config.h"
#include "core/hdee_plan.h"
#include "core/role.h"
#include "core/worker.h"

namespace tw {

class Llama;
class WindowLoader;
struct PreparedData;

// log p(x_t) of every window of `val` (num_windows() of them, read with sequential_batch, the last
// batch cut to the windows left) under `model`, without gradients: [W][T], fp32 exactly as the
// model's log-softmax gives them (the training loss's precision). Window w's row t scores the
// window's token t+1 given tokens 0..t.
std::vector<std::vector<float>> score_windows(Llama& model, const WindowLoader& val);

// A domain's validation documents split for the evaluation (split_alternate over its documents in
// select_spans order, i.e. the order of PreparedData::docs). Spans are (offset, length) in tokens
// into PreparedData::val.
struct HdeeDomainSplit {
    std::vector<std::pair<int64_t, int64_t>> eval;   // documents 0, 2, 4, … of the domain: scored
    std::vector<std::pair<int64_t, int64_t>> prior;  // documents 1, 3, 5, …: fit the posterior rule's prior
    double unigram = 0;  // nats/token: add-one unigram of the domain's training documents on its whole
                         // validation documents (uncut), a model-free difficulty proxy (unigram_loss)
};
// `genres` are Brown letters; with doc_tokens > 0 each span is cut to its first doc_tokens tokens.
// `vocab` is the unigram model's vocabulary size.
HdeeDomainSplit split_domain(const PreparedData& data, const std::vector<std::string>& genres, int64_t vocab,
                             int64_t doc_tokens);

// The worker of an HDEE expert node (role.kind "expert", core/layout.h): prepares (finds) the data
// and checks its fingerprint, trains its model alone on its domain's genres for role.expert_steps
// steps at width role.expert_d_ff (a Trainer, as a one-node run does, reporting the same train.*
// metrics and a final val.loss on its domain), then scores every domain's eval and prior documents
// and sends them up once as ExpertScores (MetricSink::scores). A stop ends it after the current
// step, without scores. Errors are values (bad role, data, vocabulary).
std::unique_ptr<Worker> make_expert_worker(const RunConfig& cfg, const NodeRole& role);

}  // namespace tw
