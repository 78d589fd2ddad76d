// Which local user a TCP connection to this process comes from: the owner (uid) the kernel lists
// for the peer's end of the connection in /proc/net/tcp (IPv4) or /proc/net/tcp6 (IPv6). A node
// without CurveZMQ keys listens on loopback only, so every peer is a process of this machine, and
// its user is known; the node obeys only processes of its own user for the commands that take or
// end it (remote/node_server.h). Linux only; elsewhere, and for a socket that is not TCP, nothing
// is known. Thread-safe (reads files, no state).
#pragma once

#include <optional>
#include <string>
#include <sys/types.h>

namespace tw {

// The uid owning the other end of connected TCP socket `fd`, when that end is a socket of this
// machine; nullopt when it cannot be told (not TCP, not local, no /proc).
std::optional<uid_t> tcp_peer_uid(int fd);

// The uid of the /proc/net/tcp{,6} row `table` whose local address is `peer` and remote address is
// `self` (both as the kernel prints them, e.g. "0100007F:9426"). Separate for tests.
std::optional<uid_t> uid_in_table(const std::string& table, const std::string& peer, const std::string& self);

}  // namespace tw
