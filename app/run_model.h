// A stored run's final model, loaded from its folder (storage/run_folder.h) for `thinwire sample`
// and `thinwire eval`: the resolved config, the model with the kept weights, and the tokenizer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/status.h"
#include "engine/data/tokenizer.h"
#include "engine/model/llama.h"
#include "storage/safetensors.h"

namespace tw::cli {

struct RunModel {
    std::string dir;   // the run's folder
    RunConfig cfg;     // as the run resolved it; model.d_ff as the kept weights have it
    Llama model{nullptr};
    std::unique_ptr<Tokenizer> tokenizer;   // the run's kind (data.tokenizer), from the folder's files
    std::vector<std::string> tokenizer_files;  // in the folder, in the order the kind loads them
};

// The weights file of run folder `dir`: model.safetensors, or an HDEE expert's model-NODE.safetensors.
// `expert` "" with an HDEE run's folder is refused, naming the experts kept.
Result<std::string> run_model_file(const std::string& dir, const std::string& expert);
// The resolved config kept in run folder `dir`, its model.d_ff as `weights` have it (an HDEE
// expert's own width). Errors name the file.
Result<RunConfig> run_folder_config(const std::string& dir, const SafeTensorsFile& weights);
// Loads run `run_id` of store `db_path`. Errors name the run, the folder and what is missing or
// does not fit (a tensor of another shape than the config's model, a missing tokenizer).
Result<RunModel> load_run_model(const std::string& db_path, int64_t run_id, const std::string& expert = "");

}  // namespace tw::cli
