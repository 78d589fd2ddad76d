// Reading TOML for the config files (config_io.cpp, run_plan.cpp): parsing with toml++'s
// exceptions caught, and a table flattened into dotted keys. Internal to core/'s config sources.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <toml++/toml.h>

namespace tw::config_toml {

// Flattens a TOML table into dotted keys → nodes (arrays are leaves); the nodes belong to `t`.
void flatten(const toml::table& t, const std::string& prefix, std::vector<std::pair<std::string, const toml::node*>>& out);
// Parses TOML text; false with `error` ("source:line:column: what") when it is not TOML.
bool parse_toml(const std::string& text, const std::string& source, toml::table& out, std::string& error);

}  // namespace tw::config_toml
