// A benchmark's list option (`--sizes 1K,16K`, `--ranks 0,8,32`): comma-separated values into a
// vector, its default shown in --help. One rule for every `bench` command's lists, so they read
// alike. Header-only (CLI11 is itself a header library); `values` must outlive the parse.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace tw::cli {

template <typename T>
CLI::Option* add_list_option(CLI::App& cmd, const std::string& name, std::vector<T>& values, const std::string& help) {
    return cmd.add_option(name, values, help)->delimiter(',')->capture_default_str();
}

}  // namespace tw::cli
