// Reading TOML for the config files; see config_toml.h.
#include "core/config_toml.h"

#include <sstream>

namespace tw::config_toml {

// Flattens a TOML table into dotted keys → nodes (arrays are leaves).
void flatten(const toml::table& t, const std::string& prefix, std::vector<std::pair<std::string, const toml::node*>>& out) {
    for (auto& [k, v] : t) {
        std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
        if (auto* sub = v.as_table())
            flatten(*sub, key, out);
        else
            out.emplace_back(key, &v);
    }
}


// Parses TOML text; Debian's toml++ is built with exceptions, caught here and nowhere else.
bool parse_toml(const std::string& text, const std::string& source, toml::table& out, std::string& error) {
    try {
        out = toml::parse(text, source);
        return true;
    } catch (const toml::parse_error& e) {
        std::ostringstream os;
        os << source << ":" << e.source().begin.line << ":" << e.source().begin.column << ": " << e.description();
        error = os.str();
        return false;
    }
}

}  // namespace tw::config_toml
