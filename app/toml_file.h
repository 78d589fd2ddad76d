// Reading a TOML file for the commands that parse a table of their own ([skippipe], [hdee])
// before handing the rest to core's parse_config. toml++ throws; the exception stops here.
#pragma once

#include <toml++/toml.h>

#include <fstream>
#include <sstream>
#include <string>

#include "core/status.h"

namespace tw::cli {

// The parsed file, or an error naming the file (and line:column for a syntax error).
inline Result<toml::table> read_toml_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) return Result<toml::table>::error("cannot read config file " + path);
    std::stringstream ss;
    ss << in.rdbuf();
    try {
        return toml::parse(ss.str(), path);
    } catch (const toml::parse_error& e) {
        std::ostringstream os;
        os << path << ":" << e.source().begin.line << ":" << e.source().begin.column << ": " << e.description();
        return Result<toml::table>::error(os.str());
    }
}

}  // namespace tw::cli
