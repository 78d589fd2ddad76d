// Local clusters: node threads and child processes. See cluster.h.
#include "remote/cluster.h"

#include <algorithm>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <random>

namespace tw {
namespace {

// Binds 127.0.0.1:port (0 = any); returns the bound port or -1.
int try_bind(int port) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    int got = -1;
    socklen_t len = sizeof a;
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
        got = ntohs(a.sin_port);
    close(fd);
    return got;
}

}  // namespace

int free_tcp_port() { return try_bind(0); }

Result<int> free_tcp_port_block(int count, const std::vector<int>& taken) {
    std::mt19937 rng(static_cast<unsigned>(getpid()) ^ static_cast<unsigned>(
                         std::chrono::steady_clock::now().time_since_epoch().count()));
    // Below the kernel's ephemeral range (32768 and up on Linux): a port found free there can be taken by any
    // process's outgoing connection or port-0 listener before the node binds it.
    std::uniform_int_distribution<int> pick(20000, 32700);
    for (int attempt = 0; attempt < 200; ++attempt) {
        const int p = pick(rng);
        // A block handed out before may not be bound yet (its node binds its data and store ports
        // only at configure): free now is not enough, it must not overlap one.
        bool ok = std::none_of(taken.begin(), taken.end(), [&](int q) { return p < q + count && q < p + count; });
        for (int i = 0; i < count && ok; ++i) ok = try_bind(p + i) == p + i;
        if (ok) return p;
    }
    return Result<int>::error("no block of " + std::to_string(count) + " free TCP ports found on 127.0.0.1");
}

Result<std::unique_ptr<LocalCluster>> LocalCluster::start_threads(int n, NodeOptions base, WorkerFactory factory) {
    static std::atomic<int> clusters{0};
    const int k = clusters++;
    std::unique_ptr<LocalCluster> c(new LocalCluster());
    for (int i = 0; i < n; ++i) {
        NodeOptions o = base;
        o.listen = "inproc://tw-" + std::to_string(getpid()) + "-" + std::to_string(k) + "-" + std::to_string(i);
        auto s = NodeServer::bind(o, factory);
        if (!s) return s.status();
        c->endpoints_.push_back(o.listen);
        c->servers_.push_back(std::move(*s));
    }
    for (size_t i = 0; i < c->servers_.size(); ++i) {
        NodeServer* srv = c->servers_[i].get();
        // A thread node's loop must not end the process: what escapes it stops this node only, and
        // the coordinator fails the run when its heartbeats stop, naming it.
        c->threads_.emplace_back([srv, flag = &c->interrupt_, name = c->endpoints_[i]] {
            try {
                (void)srv->serve(flag);
            } catch (const std::exception& e) {
                std::fprintf(stderr, "thinwire: node %s stopped: %s\n", name.c_str(), e.what());
            } catch (...) {
                std::fprintf(stderr, "thinwire: node %s stopped: an exception that is not a std::exception\n", name.c_str());
            }
        });
    }
    return c;
}

Result<std::unique_ptr<LocalCluster>> LocalCluster::start_processes(int n, const std::string& exe,
                                                                    const std::string& data_root) {
    // Without it a child would use its own default root (the user's cache folder), which need not be
    // the coordinator's, and the coordinator's relative paths would name other files.
    if (data_root.empty()) return Status::error("local node processes need the coordinator's data root");
    std::unique_ptr<LocalCluster> c(new LocalCluster());
    c->exe_ = exe;
    c->data_root_ = data_root;
    std::vector<int> taken;  // this cluster's blocks: two nodes must never share a port
    for (int i = 0; i < n; ++i) {
        auto port = free_tcp_port_block(4, taken);
        if (!port) return port.status();
        taken.push_back(*port);
        const std::string ep = "tcp://127.0.0.1:" + std::to_string(*port);
        auto pid = c->spawn(ep);
        if (!pid) return pid.status();
        c->pids_.push_back(*pid);
        c->endpoints_.push_back(ep);
    }
    return c;
}

Result<int> LocalCluster::spawn(const std::string& ep) {
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) return Status::error("cannot fork a node process");
    if (pid == 0) {
        setsid();
        prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the coordinator, even if it is killed
        if (getppid() != parent) _exit(1);
        const int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) dup2(devnull, STDOUT_FILENO);
        execl(exe_.c_str(), exe_.c_str(), "node", "--listen", ep.c_str(), "--data-root", data_root_.c_str(),
              static_cast<char*>(nullptr));
        _exit(127);
    }
    return static_cast<int>(pid);
}

Status LocalCluster::kill_process(size_t i) {
    if (i >= pids_.size() || pids_[i] <= 0) return Status::error("no node process " + std::to_string(i) + " to kill");
    kill(pids_[i], SIGKILL);
    waitpid(pids_[i], nullptr, 0);
    pids_[i] = -1;
    return Status::ok();
}

Status LocalCluster::respawn_process(size_t i) {
    if (i >= endpoints_.size() || exe_.empty()) return Status::error("no node process " + std::to_string(i) + " to restart");
    if (pids_[i] > 0) return Status::error("node process " + std::to_string(i) + " is still running");
    auto pid = spawn(endpoints_[i]);
    if (!pid) return pid.status();
    pids_[i] = *pid;
    return Status::ok();
}

LocalCluster::~LocalCluster() {
    interrupt_ = true;
    for (auto& t : threads_) t.join();
    servers_.clear();
    for (int pid : pids_)
        if (pid > 0) kill(pid, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    for (int pid : pids_) {
        if (pid <= 0) continue;  // killed and not restarted: reaped then
        while (waitpid(pid, nullptr, WNOHANG) == 0) {
            if (std::chrono::steady_clock::now() > deadline) {
                kill(pid, SIGKILL);
                waitpid(pid, nullptr, 0);
                break;
            }
            usleep(10000);
        }
    }
}

}  // namespace tw
