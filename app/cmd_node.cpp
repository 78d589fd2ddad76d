// `thinwire node --listen ENDPOINT`: a headless engine node serving the control protocol.
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

namespace tw::cli {
namespace {

std::atomic<bool> g_stop{false};
extern "C" void on_signal(int) { g_stop = true; }

struct NodeArgs {
    std::string listen = "tcp://127.0.0.1:5555";
    std::string curve_secret_key;
    std::vector<std::string> allow;
    std::string data_root;
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
    auto server = unwrap(NodeServer::bind(o, engine_worker_factory(o.ctx)));
    const NodeEndpoints e = unwrap(derive_endpoints(a.listen));
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
    sub->add_option("--data-root", args->data_root,
                    "the only folder a run's paths may name (corpus, cache, checkpoints); default $XDG_CACHE_HOME/thinwire or ~/.cache/thinwire");
    return {sub, [args] { return run_node(*args); }};
}

}  // namespace tw::cli
