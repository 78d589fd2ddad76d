// The folder a stored run keeps its files in, beside its store: STORE.d/run-ID/ (the store file's
// path with ".d" added). It holds the run's final model (model.safetensors, engine names), the
// tokenizer's files and the resolved config (config.toml); `runs delete` removes it with the run.
// The path follows from the store's path and the run's id alone, so a store moved together with
// its .d folder keeps its models.
#pragma once

#include <cstdint>
#include <string>

namespace tw {

inline constexpr const char* kRunModelFile = "model.safetensors";
inline constexpr const char* kRunConfigFile = "config.toml";

// "" for a store without a file (":memory:" or an empty path).
std::string run_folder(const std::string& store_path, int64_t run_id);
// Whether run_folder(store_path, run_id) holds a final model.
bool run_has_model(const std::string& store_path, int64_t run_id);

}  // namespace tw
