// A node's gradient group (core/role.h GlooGroupSpec: the nodes of one DDP or DiLoCo replica that
// all-reduce gradients every step): the c10d store its rank 0 hosts and every member connects to,
// and the one address Gloo binds and advertises for this node (never every interface).
#pragma once

#include <memory>

#include "core/kv_store.h"
#include "core/role.h"
#include "core/status.h"
#include "core/worker.h"

namespace zmq { class context_t; }

namespace tw::cli {

// Rank 0 starts the store server (CURVE with the node's keys), every member connects a client.
// Errors name the endpoint or the address problem (e.g. a wildcard listen Gloo cannot advertise).
Result<GroupStore> grad_group_store(const std::shared_ptr<zmq::context_t>& ctx, const NodeSite& site,
                                    const NodeRole& role);

}  // namespace tw::cli
