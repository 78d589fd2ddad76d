// `thinwire relay --listen tcp://ADDRESS:PORT`: carries the connections of nodes nobody can dial
// (remote/relay.h) until SIGINT/SIGTERM, then prints what it carried per node.
#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include "app/commands.h"
#include "app/version.h"
#include "remote/curve.h"
#include "remote/relay.h"

namespace tw::cli {
namespace {

std::atomic<bool> g_relay_stop{false};
extern "C" void on_relay_signal(int) { g_relay_stop = true; }

struct RelayArgs {
    std::string listen;
    std::string public_host;
    int first_port = 0;
    std::string curve_secret_key;
    std::vector<std::string> allow;
    double timeout_s = 5;
};

void print_counters(const std::map<std::string, RelayCounters>& all) {
    std::printf("%-10s %-8s %-9s %14s %14s %10s %14s %14s %10s\n", "node", "class", "", "to node B", "payload B",
                "frames", "from node B", "payload B", "frames");
    for (const auto& [key, c] : all)
        for (int k = 0; k < kRelayClasses; ++k) {
            const auto& in = c.to_node[static_cast<size_t>(k)];
            const auto& out = c.from_node[static_cast<size_t>(k)];
            std::printf("%-10s %-8s %-9s %14llu %14llu %10llu %14llu %14llu %10llu\n", key_tag(key).c_str(),
                        to_string(static_cast<RelayClass>(k)), k == 0 ? ("joins " + std::to_string(c.joins)).c_str() : "",
                        static_cast<unsigned long long>(in.bytes), static_cast<unsigned long long>(in.payload),
                        static_cast<unsigned long long>(in.frames), static_cast<unsigned long long>(out.bytes),
                        static_cast<unsigned long long>(out.payload), static_cast<unsigned long long>(out.frames));
        }
}

int run_relay(const RelayArgs& a) {
    RelayOptions o;
    o.listen = a.listen;
    o.public_host = a.public_host;
    o.first_port = a.first_port;
    o.timeout_s = a.timeout_s;
    if (a.curve_secret_key.empty()) throw Error("relay: --curve-secret-key is required: a relay admits keys only");
    if (a.allow.empty()) throw Error("relay: --allow at least one key (the nodes that join, the coordinators that ask)");
    o.keys = unwrap(read_secret_key(a.curve_secret_key));
    for (const auto& k : a.allow) o.allowed.push_back(unwrap(public_key_from_text_or_file(k)));
    o.log = [](const std::string& line) {
        std::printf("thinwire %s\n", line.c_str());
        std::fflush(stdout);
    };
    auto relay = unwrap(Relay::start(std::move(o)));
    std::printf("thinwire relay %s: tunnel %s, CURVE key %s, %zu allowed key(s)\n", thinwire_version(),
                relay->endpoint().c_str(), read_secret_key(a.curve_secret_key)->public_key.c_str(), a.allow.size());
    std::fflush(stdout);
    std::signal(SIGINT, on_relay_signal);
    std::signal(SIGTERM, on_relay_signal);
    while (!g_relay_stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    print_counters(relay->counters());
    return 0;
}

}  // namespace

Command add_relay(CLI::App& app, const Globals&) {
    auto* sub = app.add_subcommand("relay", "Carry the connections of nodes that nobody can dial (behind NAT or a firewall)");
    auto args = std::make_shared<RelayArgs>();
    sub->add_option("--listen", args->listen, "tunnel endpoint tcp://ADDRESS:PORT the nodes dial; the nodes' ports open on ADDRESS")
        ->required();
    sub->add_option("--public-host", args->public_host, "the address dialers use for the nodes' ports (default: --listen's)");
    sub->add_option("--first-port", args->first_port, "the nodes' ports from here on, four each (default: free ports)");
    sub->add_option("--curve-secret-key", args->curve_secret_key, "this relay's CurveZMQ secret key file")->required();
    sub->add_option("--allow", args->allow,
                    "public key (file or Z85 text) of a node that may join or a coordinator that may look nodes up; repeatable");
    sub->add_option("--timeout", args->timeout_s, "a node silent this many seconds is offline")->capture_default_str();
    return {sub, [args] { return run_relay(*args); }};
}

}  // namespace tw::cli
