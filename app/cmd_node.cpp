// `thinwire node --listen ENDPOINT [--join RELAY]`: a headless engine node serving the control
// protocol on its own ports, and through a relay it dials when nobody can dial it (remote/relay.h).
#include <CLI/CLI.hpp>
#include <sys/stat.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <zmq.hpp>

#include "app/commands.h"
#include "app/engine_node.h"
#include "core/data_root.h"
#include "core/layout.h"
#include "remote/curve.h"
#include "remote/node_server.h"
#include "remote/tunnel_client.h"

namespace tw::cli {
namespace {

std::atomic<bool> g_stop{false};
extern "C" void on_signal(int) { g_stop = true; }

struct NodeArgs {
    std::string listen = "tcp://127.0.0.1:5555";
    std::string curve_secret_key;
    std::vector<std::string> allow;
    std::string data_root;
    std::string join;       // a relay's tunnel endpoint; "" = reachable at --listen only
    std::string relay_key;  // the relay's public key (file or Z85 text)
};

int run_node(const NodeArgs& a) {
    // What a node writes (tokenizer, shards, checkpoints) derives from the data it trains on, which
    // may be private: files for the owner only (0600, folders 0700), whatever the root's mode.
    umask(077);
    NodeOptions o;
    o.listen = a.listen;
    o.ctx = std::make_shared<zmq::context_t>();
    o.version = thinwire_version();
    if (!a.curve_secret_key.empty()) {
        o.keys = unwrap(read_secret_key(a.curve_secret_key));
        for (auto& f : a.allow) o.allowed_coordinators.push_back(unwrap(public_key_from_text_or_file(f)));
    } else if (!a.allow.empty()) {
        throw Error("--allow needs --curve-secret-key: without keys nobody is authenticated");
    }
    o.data_root = unwrap(resolve_node_data_root(a.data_root));
    o.prepare_data = engine_data_preparer();
    if (!a.join.empty() && o.keys.empty())
        throw Error("--join needs --curve-secret-key and --allow: through a relay anyone may dial this node, and "
                    "only its keys decide whom it obeys");
    auto server = unwrap(NodeServer::bind(o, engine_worker_factory(o.ctx)));
    const NodeEndpoints e = unwrap(derive_endpoints(a.listen));
    std::unique_ptr<TunnelClient> tunnel;
    if (!a.join.empty()) {
        TunnelOptions t;
        t.relay = a.join;
        t.relay_key = unwrap(public_key_from_text_or_file(a.relay_key));
        t.keys = o.keys;
        if (e.store_port == 0) throw Error("--join needs --listen tcp://ADDRESS:PORT, not " + a.listen);
        t.local_host = e.store_host;  // a wildcard listen is dialled on loopback
        t.local_port = e.store_port - 3;
        t.log = [](const std::string& line) {
            std::printf("thinwire node: %s\n", line.c_str());
            std::fflush(stdout);
        };
        tunnel = unwrap(TunnelClient::start(std::move(t)));
    }
    std::printf("thinwire node %s: control %s, metrics %s, data %s, data root %s%s\n", thinwire_version(),
                e.control.c_str(), e.metrics.c_str(), e.data.c_str(), o.data_root.c_str(),
                o.keys.empty() ? ", no keys (loopback only)" : (", CURVE key " + o.keys.public_key).c_str());
    std::fflush(stdout);
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    check(server->serve(&g_stop));
    return 0;
}

}  // namespace

Command add_node(CLI::App& app, const Globals&) {
    auto* sub = app.add_subcommand("node", "Run a headless engine node that a coordinator drives");
    auto args = std::make_shared<NodeArgs>();
    sub->add_option("--listen", args->listen, "control endpoint (tcp://127.0.0.1:PORT uses PORT..PORT+3)")->capture_default_str();
    sub->add_option("--curve-secret-key", args->curve_secret_key,
                    "this node's CurveZMQ secret key file (thinwire keys new DIR); every socket then authenticates "
                    "and encrypts, and any interface may be bound");
    sub->add_option("--allow", args->allow,
                    "public key (file or Z85 text) of a coordinator this node obeys; repeatable, needs keys");
    sub->add_option("--join", args->join,
                    "also serve through the relay at this tcp://HOST:PORT, dialling out (for a node nobody can dial: "
                    "behind NAT or a firewall); needs keys and --relay-key");
    sub->add_option("--relay-key", args->relay_key, "the relay's public key (file or Z85 text), with --join");
    sub->add_option("--data-root", args->data_root,
                    "the only folder a run's paths may name (corpus, cache, checkpoints); default $XDG_CACHE_HOME/thinwire or ~/.cache/thinwire");
    return {sub, [args] { return run_node(*args); }};
}

}  // namespace tw::cli
