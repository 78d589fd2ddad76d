// The thread a small server serves on (the ZAP handler, remote/curve.h; the rendezvous store,
// remote/kv_store.h; the hub relay, remote/hub_relay.h): started once with the server's loop, which
// polls stopping() between short waits; stop() raises the flag and joins. The owner calls stop()
// first in its destructor, before it closes the sockets the loop uses; destroying a ServeThread
// stops it too. std::thread's start is the memory barrier ZeroMQ asks for when a socket made on
// one thread is then used on another.
//
// Thread-safety: start() and stop() from the owner's thread; stopping() from the loop.
#pragma once

#include <atomic>
#include <functional>
#include <thread>
#include <utility>

namespace tw {

class ServeThread {
public:
    ServeThread() = default;
    ServeThread(const ServeThread&) = delete;
    ServeThread& operator=(const ServeThread&) = delete;
    ~ServeThread() { stop(); }

    void start(std::function<void()> loop) { thread_ = std::thread(std::move(loop)); }
    bool stopping() const { return stop_.load(); }
    // Idempotent.
    void stop() {
        stop_ = true;
        if (thread_.joinable()) thread_.join();
    }

private:
    std::thread thread_;
    std::atomic<bool> stop_{false};
};

}  // namespace tw
