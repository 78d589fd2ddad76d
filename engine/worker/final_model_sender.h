// The worker's side of a run's final model (core/final_model.h): after training, the node that
// holds the model — or a pipeline stage of it — sends its parameters in the whole model's names
// and the tokenizer's files to the coordinator, in parts of at most kFinalModelPartBytes.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

#include "core/worker.h"

namespace tw {

class LlamaImpl;
struct PreparedData;

// The tensors of `model` to keep, in the whole model's names: every parameter but the copy of the
// token embedding a split tied model's last stage holds for its head (stage 0's is the model's),
// and the frozen embedding a subspace pipeline adds at stage 0 ("frozen_emb").
std::vector<std::pair<std::string, torch::Tensor>> final_model_tensors(LlamaImpl& model);

// Sends `tensors` (fp32, copied to the CPU) and the files `tokenizer_files` (paths; their base
// names travel) through `sink`. A file that cannot be read is an error event, not a failure.
void send_final_model(MetricSink& sink, const std::string& node,
                      const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                      const std::vector<std::string>& tokenizer_files);

// The node's `model` (final_model_tensors) with the tokenizer files of `data` (none without data).
void send_final_model(MetricSink& sink, const std::string& node, LlamaImpl& model, const PreparedData* data);

}  // namespace tw
