// Nodes named by key in a layout (cluster.endpoints "key:K"): nodes nobody can dial that joined a
// relay (remote/relay.h). The syntax and the checks; torch-free, no sockets.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/config.h"

namespace tw {

inline constexpr const char* kJoinedPrefix = "key:";

// The key text (Z85 or a file's path) of an endpoint "key:K"; nullopt for any other endpoint.
std::optional<std::string> joined_key_text(const std::string& endpoint);

// True when some endpoint names a node by key.
bool has_joined_nodes(const RunConfig& c);

// Appends what is wrong with the layout's joined nodes and relay settings: a "key:" entry without
// a remote cluster, keys or a relay to ask; an empty node_keys entry beside an endpoint; a relay
// endpoint that is not tcp://HOST:PORT.
void validate_joined_nodes(const RunConfig& c, std::vector<std::string>& out);

}  // namespace tw
