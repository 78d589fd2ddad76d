// One-way throughput of the ZeroMQ transports the data plane uses: a PUSH socket in one thread
// sends a fixed number of equal messages to a PULL socket in another, over inproc://, ipc:// or
// tcp://127.0.0.1. The reference is memcpy of the same message size between two preallocated
// buffers, measured in the same process, so results from a loaded or drifting machine stay
// comparable with each other. Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace tw {

enum class Transport : uint8_t { kInproc = 0, kIpc = 1, kTcp = 2 };

const char* to_string(Transport t);
Result<Transport> parse_transport(const std::string& name);  // "inproc" | "ipc" | "tcp"

struct TransportBenchConfig {
    uint64_t budget_bytes = 256ull << 20;  // payload bytes per cell; the message count is budget / size,
    int64_t max_msgs = 100000;             //   at most this many (bounds the time of small sizes),
    int64_t min_msgs = 8;                  //   at least this many (64 MiB: 8 messages = 512 MiB)
    int timeout_ms = 60000;                // a cell that stalls this long is an error, not a hang
    bool curve = false;                    // CurveZMQ on both sockets (ipc, tcp), authenticated by a
                                           //   ZAP handler as a keyed node's data plane is
    bool relayed = false;                  // tcp only: the sender dials a relay (remote/relay.h) that
                                           //   carries the connection through the receiver's tunnel
    bool outbox = false;                   // tcp with curve only: the sender's messages leave through
                                           //   a mesh outbox (remote/mesh_outbox.h) that the receiver
                                           //   dials, as a public member's reach a relayed member
};

// Messages one cell sends for `msg_bytes`: clamp(budget_bytes / msg_bytes, min_msgs, max_msgs).
int64_t messages_for(uint64_t msg_bytes, const TransportBenchConfig& cfg);

struct TransportBenchResult {
    Transport transport = Transport::kInproc;
    bool curve = false;
    uint64_t msg_bytes = 0;        // payload of one message
    int64_t msgs = 0;              // timed messages
    double elapsed_s = 0;          // sender's first send → receiver holds the last message
    double bytes_per_s = 0;        // msgs · msg_bytes / elapsed_s
    double msgs_per_s = 0;
    double memcpy_bytes_per_s = 0; // reference: memcpy of msg_bytes, same process
    double ratio_memcpy() const { return bytes_per_s / memcpy_bytes_per_s; }
};

// memcpy between two preallocated, pre-touched buffers of `msg_bytes`, repeated to cover
// `budget_bytes` (at least 8 copies); median of 3 such batches, in bytes/s.
double measure_memcpy_bytes_per_s(uint64_t msg_bytes, uint64_t budget_bytes);

// One cell: messages_for(msg_bytes) messages over `t` on a fresh zmq context (default options,
// one I/O thread, as the data plane's). Fills everything but memcpy_bytes_per_s.
Result<TransportBenchResult> bench_transport(Transport t, uint64_t msg_bytes, const TransportBenchConfig& cfg);

// Intended usage: for each size, r = bench_transport(...); r.memcpy_bytes_per_s =
// measure_memcpy_bytes_per_s(size, cfg.budget_bytes); print r.ratio_memcpy().

}  // namespace tw
