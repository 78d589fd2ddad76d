#include "core/hub_endpoint.h"

#include "core/algorithm.h"
#include "core/topology.h"

namespace tw {

std::string hub_endpoint_problem(const std::string& ep) {
    const std::string scheme = "tcp://";
    if (ep.rfind(scheme, 0) != 0) return "\"" + ep + "\" is not tcp://HOST:PORT";
    const std::string rest = ep.substr(scheme.size());
    const size_t colon = rest.rfind(':');
    if (colon == std::string::npos || colon == 0) return "\"" + ep + "\" has no HOST:PORT";
    const std::string host = rest.substr(0, colon), port = rest.substr(colon + 1);
    if (host.find_first_of(" /\t") != std::string::npos) return "\"" + ep + "\": the host has a space or '/'";
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
        return "\"" + ep + "\": the port must be a number from 1 to 65535 (nodes must be told the port)";
    const long n = std::stol(port);
    if (n < 1 || n > 65535) return "\"" + ep + "\": port " + port + " is outside 1..65535";
    return "";
}

bool uses_hub(const RunConfig& c) {
    return algorithm_of(c) != Algorithm::kNone && c.outer.replicas >= 2 && !c.outer.topology.empty() &&
           parse_topology(c.outer.topology) == Topology::kHub;
}

void validate_hub_endpoint(const RunConfig& c, std::vector<std::string>& out) {
    if (uses_hub(c) && c.cluster.stages > 1)
        out.push_back("outer.topology = \"hub\": pipeline replicas sync per stage, which the relay does not serve "
                      "(use outer.topology = \"mesh\" with cluster.stages > 1)");
    // A hub round names its members in a 64-bit mask (remote/hub_relay.h).
    if (uses_hub(c) && c.outer.replicas > 64)
        out.push_back("outer.topology = \"hub\": a hub round names its members in a 64-bit mask, so at most 64 "
                      "replicas (outer.replicas is " + std::to_string(c.outer.replicas) + ")");
    const std::string& ep = c.cluster.hub_endpoint;
    if (!ep.empty()) {
        if (std::string why = hub_endpoint_problem(ep); !why.empty()) out.push_back("cluster.hub_endpoint " + why);
        else if (!uses_hub(c))
            out.push_back("cluster.hub_endpoint is set but the run has no hub (outer.topology = \"hub\" with 2 or "
                          "more replicas)");
    } else if (uses_hub(c) && c.cluster.mode == "remote") {
        out.push_back("cluster.hub_endpoint: a remote cluster with outer.topology = \"hub\" must name where the "
                      "coordinator's relay listens, an address of this machine its nodes reach (tcp://HOST:PORT)");
    }
}

}  // namespace tw
