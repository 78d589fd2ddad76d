// The project version, as `thinwire --version` prints it and nodes report it in their capabilities.
#pragma once

namespace tw::cli {

const char* thinwire_version();

}  // namespace tw::cli
