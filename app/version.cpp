// The project version; see version.h. TW_VERSION comes from CMake's project().
#include "app/version.h"

namespace tw::cli {

const char* thinwire_version() { return TW_VERSION; }

}  // namespace tw::cli
