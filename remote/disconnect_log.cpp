// Disconnect reports from a socket monitor; see disconnect_log.h.
#include "remote/disconnect_log.h"

#include <atomic>

namespace tw {

DisconnectLog::DisconnectLog(zmq::socket_t& s, std::string what, std::function<void(const std::string&)> report)
    : what_(std::move(what)), report_(std::move(report)) {
    static std::atomic<uint64_t> next{0};
    init(s, "inproc://tw-disconnect-log-" + std::to_string(next++), ZMQ_EVENT_DISCONNECTED);
}

void DisconnectLog::poll() {
    while (check_event(0)) {
    }
}

void DisconnectLog::on_event_disconnected(const zmq_event_t&, const char* addr) {
    ++disconnects_;
    if (report_)
        report_("a connection to the " + what_ + " (" + (addr ? addr : "?") +
                ") was closed: the peer went away, or sent a frame over the socket's size limit");
}

}  // namespace tw
