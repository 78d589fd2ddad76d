// Process-wide settings both executables make before anything else.
#pragma once

namespace tw::cli {

// A node or relay listening on TCP holds one descriptor per connection, and ZeroMQ accepts before
// any handshake: under the common soft limit of 1,024 descriptors, ~1,100 idle connections from
// anyone would keep its coordinator out. The soft limit goes up to the hard one (often 524,288),
// which an unprivileged process may do; with the handshake deadline (remote/node_server.cpp) an
// idle connection then costs a descriptor for seconds, out of hundreds of thousands.
void raise_descriptor_limit();

}  // namespace tw::cli
