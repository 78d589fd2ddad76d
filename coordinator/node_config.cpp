// The run's config as its nodes receive it; see node_config.h.
#include "coordinator/node_config.h"

#include "core/joined_nodes.h"

namespace tw {

RunConfig without_keys(RunConfig cfg) {
    cfg.cluster.coordinator_key.clear();
    cfg.cluster.node_keys.clear();
    cfg.cluster.relay.clear();
    cfg.cluster.relay_key.clear();
    cfg.cluster.relay_listen.clear();
    cfg.cluster.relay_public_host.clear();
    for (std::string& e : cfg.cluster.endpoints)
        if (joined_key_text(e)) e = "joined";
    return cfg;
}

}  // namespace tw
