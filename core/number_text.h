// A double as text the way a stream prints it by default (six significant digits, no trailing
// zeros: 0.001, 1e+06): how messages and stored text write a config's numbers and ranges, so a
// value reads the same in every refusal. Pure function: thread-safe.
#pragma once

#include <sstream>
#include <string>

namespace tw {

inline std::string number_text(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
}

}  // namespace tw
