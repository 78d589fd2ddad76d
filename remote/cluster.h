// Nodes this process brings up for a run (docs/architecture.md §3): node servers on
// threads of this process over inproc://, or `thinwire node` child processes on loopback TCP.
// A remote cluster is just a list of endpoints and needs nothing from here.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "core/worker.h"
#include "remote/node_server.h"

namespace zmq { class context_t; }

namespace tw {

// A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0, read it back).
int free_tcp_port();
// The first port P of `count` consecutive ports that were free on 127.0.0.1 a moment ago, in no
// block of `count` ports that starts at one of `taken` (blocks handed out before, maybe not bound yet).
Result<int> free_tcp_port_block(int count, const std::vector<int>& taken = {});

class LocalCluster {
public:
    // n node servers as threads sharing `base.ctx`; endpoints inproc://tw-<pid>-<k>-<i>. A
    // coordinator sets `base.data_root` to its own root (NodeOptions::data_root).
    static Result<std::unique_ptr<LocalCluster>> start_threads(int n, NodeOptions base, WorkerFactory factory);
    // n child processes `exe node --listen tcp://127.0.0.1:P --data-root ROOT` in their own session
    // (so a terminal Ctrl-C reaches only the coordinator, which stops them cleanly) that die with
    // this process. `data_root` is the coordinator's: its children read and write where it does.
    static Result<std::unique_ptr<LocalCluster>> start_processes(int n, const std::string& exe,
                                                                 const std::string& data_root);
    // Threads: interrupted and joined. Processes: SIGTERM, then SIGKILL after 2 s; always reaped.
    ~LocalCluster();

    const std::vector<std::string>& endpoints() const { return endpoints_; }
    const std::vector<int>& pids() const { return pids_; }  // −1 for a process killed and not restarted

    // Scheduled faults in child processes (docs/faults.md): SIGKILL node process i and reap it; bring
    // up a fresh `thinwire node` on the same endpoint (it listens again where its peers reconnect).
    Status kill_process(size_t i);
    Status respawn_process(size_t i);

private:
    LocalCluster() = default;
    Result<int> spawn(const std::string& endpoint);  // a child process; its pid
    std::string exe_, data_root_;
    std::vector<std::string> endpoints_;
    std::vector<std::unique_ptr<NodeServer>> servers_;
    std::vector<std::thread> threads_;
    std::atomic<bool> interrupt_{false};
    std::vector<int> pids_;
};

}  // namespace tw
