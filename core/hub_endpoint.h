// Where the hub topology's relay listens (cluster.hub_endpoint; outer.topology = "hub",
// docs/topologies.md): the syntax every endpoint of it must have, and when a layout must name one.
// Torch-free, pure.
#pragma once

#include <string>
#include <vector>

#include "core/config.h"

namespace tw {

// "" when `ep` is tcp://HOST:PORT with a non-empty HOST (no spaces, no '/') and PORT in 1..65535;
// else what is wrong with it. A wildcard port (tcp://HOST:*) is refused: nodes must be told a port.
std::string hub_endpoint_problem(const std::string& ep);

// Appends the layout's problems with the hub: pipeline replicas (their per-stage rounds do not go
// through the relay), a bad cluster.hub_endpoint, one given to a run that has no hub, and a remote
// cluster with a hub but no endpoint (its nodes cannot reach loopback).
void validate_hub_endpoint(const RunConfig& c, std::vector<std::string>& out);

// True when the run exchanges through a relay: outer.topology = "hub" and at least two replicas.
bool uses_hub(const RunConfig& c);

}  // namespace tw
