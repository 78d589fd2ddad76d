// `thinwire keys new DIR`: a CurveZMQ keypair for a node or a coordinator (remote/curve.h).
#include <CLI/CLI.hpp>

#include <cstdio>

#include "app/commands.h"
#include "core/status.h"
#include "remote/curve.h"

namespace tw::cli {

Command add_keys(CLI::App& app, const Globals&) {
    auto* keys = app.add_subcommand("keys", "CurveZMQ keys for nodes and coordinators");
    keys->require_subcommand(1);
    auto* make = keys->add_subcommand("new", "Write a new keypair: DIR/secret.key (mode 0600) and DIR/public.key");
    auto dir = std::make_shared<std::string>();
    make->add_option("DIR", *dir, "folder for the two files (created 0700; an existing key is never overwritten)")
        ->required();
    return {keys, [make, dir] {
                if (!make->parsed()) return 2;
                const CurveKeyPair kp = unwrap(curve_keypair_new());
                check(write_keypair(*dir, kp));
                std::printf("wrote %s/secret.key (keep it on this machine) and %s/public.key\npublic key: %s\n",
                            dir->c_str(), dir->c_str(), kp.public_key.c_str());
                return 0;
            }};
}

}  // namespace tw::cli
