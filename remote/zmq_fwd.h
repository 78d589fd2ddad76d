// Declarations of the cppzmq types the remote headers name by pointer or reference, so that a
// header can hold a socket or take a context without pulling in zmq.hpp (its users compile faster;
// only the .cpp files that touch sockets include it).
#pragma once

namespace zmq {
class context_t;
class socket_t;
class message_t;
}  // namespace zmq
