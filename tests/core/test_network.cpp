// Per-replica access links (core/network.h round_link): a round costs the slower of the senders'
// uplinks and the receiver's downlink, checked by hand; the lists are checked against the replicas.
#include <gtest/gtest.h>

#include "core/config_io.h"
#include "core/network.h"
#include "core/sim_clock.h"

namespace tw {
namespace {

NetworkProfile home_and_cloud() {
    // Replica 0 a home line (500 Mb/s down, 110 Mb/s up, 30 ms), replicas 1 and 2 in a cloud (1 Gb/s both ways, 10 ms).
    auto c = parse_config(
        "[outer]\nalgorithm = \"diloco\"\nreplicas = 3\n[network]\nprofile = \"wan-1g\"\n"
        "replica_up_bps = [110e6, 1e9, 1e9]\nreplica_down_bps = [500e6, 1e9, 1e9]\nreplica_latency_s = [0.03, 0.01, 0.01]\n",
        "links.toml");
    EXPECT_TRUE(c) << c.message();
    return network_profile(c->network).value();
}

TEST(AccessLinks, AMeshRoundMovesAtTheSlowestUplinkOrTheOwnDownlink) {
    const NetworkProfile p = home_and_cloud();
    ASSERT_EQ(p.replicas.size(), 3u);
    // All three: every member waits for replica 0's 110 Mb/s uplink; the latency is the largest, 30 ms.
    for (int self = 0; self < 3; ++self) {
        const LinkSpec l = round_link(p, self, {}, 1);
        EXPECT_EQ(l.bandwidth_bps, 110e6) << self;
        EXPECT_EQ(l.latency_s, 0.03) << self;
    }
    // Replicas 1 and 2 alone (a NoLoCo group): the cloud's 1 Gb/s and 10 ms.
    EXPECT_EQ(round_link(p, 1, {1, 2}, 1).bandwidth_bps, 1e9);
    EXPECT_EQ(round_link(p, 1, {1, 2}, 1).latency_s, 0.01);
    // 11 MB each: 0.03 + 8·11e6 / 110e6 = 0.83 s after the slowest arrival (5 s).
    EXPECT_DOUBLE_EQ(round_end_s({4.0, 5.0, 4.5}, round_link(p, 2, {}, 1), 11'000'000), 5.0 + 0.03 + 0.8);
}

TEST(AccessLinks, TheReceiversDownlinkLimitsOnlyItsOwnRound) {
    auto c = parse_config(
        "[outer]\nalgorithm = \"diloco\"\nreplicas = 2\n[network]\nprofile = \"wan-1g\"\nreplica_down_bps = [50e6, 1e9]\n",
        "down.toml");
    ASSERT_TRUE(c) << c.message();
    const NetworkProfile p = network_profile(c->network).value();
    // Uplinks and latencies default to the outer link (wan-1g: 1 Gb/s, 20 ms).
    EXPECT_EQ(round_link(p, 0, {}, 1).bandwidth_bps, 50e6);  // its own 50 Mb/s downlink
    EXPECT_EQ(round_link(p, 1, {}, 1).bandwidth_bps, 1e9);   // receives at 1 Gb/s
    EXPECT_EQ(round_link(p, 1, {}, 1).latency_s, 0.020);
    // A ring: every step waits for the slowest edge, here 1 → 0 at min(up 1 Gb/s, down 50 Mb/s), for everyone.
    EXPECT_EQ(round_link(p, 1, {}, 2).bandwidth_bps, 50e6);
}

TEST(AccessLinks, WithoutPerReplicaListsARoundUsesTheOuterLinkUnchanged) {
    const NetworkProfile p = network_profile("home-20m").value();
    EXPECT_TRUE(p.replicas.empty());
    const LinkSpec l = round_link(p, 1, {0, 1}, 1);
    EXPECT_EQ(l.bandwidth_bps, p.outer.bandwidth_bps);
    EXPECT_EQ(l.latency_s, p.outer.latency_s);
}

TEST(AccessLinks, ListsOfTheWrongLengthAreRefusedByName) {
    auto c = parse_config("[outer]\nalgorithm = \"diloco\"\nreplicas = 3\n[network]\nreplica_up_bps = [1e8, 1e8]\n", "bad.toml");
    ASSERT_FALSE(c);
    EXPECT_NE(c.message().find("network.replica_up_bps: 2 entries for 3 replicas"), std::string::npos) << c.message();
    c = parse_config("[outer]\nalgorithm = \"diloco\"\nreplicas = 2\n[network]\nreplica_down_bps = [0, 1e8]\n", "bad.toml");
    ASSERT_FALSE(c);
    EXPECT_NE(c.message().find("network.replica_down_bps"), std::string::npos) << c.message();
}

// A relay (network.relay_replicas): only payloads between two relayed members cross it (a public
// member and a relayed one talk directly, the relayed one dialling), and those pay its latency on
// top of their own. By hand, 4 replicas on wan-1g (1 Gb/s, 20 ms), replicas 2 and 3 behind a relay
// of 100 Mb/s up, 300 Mb/s down and 5 ms: the relay's rate is min(100, 300) = 100 Mb/s.
TEST(RelayLink, OnlyPayloadsBetweenRelayedMembersCrossTheRelay) {
    auto c = parse_config(
        "[outer]\nalgorithm = \"diloco\"\nreplicas = 4\n[network]\nprofile = \"wan-1g\"\n"
        "relay_replicas = [2, 3]\nrelay_up_bps = 100e6\nrelay_down_bps = 300e6\nrelay_latency_s = 0.005\n",
        "relay.toml");
    ASSERT_TRUE(c) << c.message();
    const NetworkProfile p = network_profile(c->network).value();
    // A mesh round of all four: a public member receives straight from everyone at 1 Gb/s, and
    // waits out the largest latency, 20 + 5 ms (2 and 3 talk through the relay).
    EXPECT_EQ(round_link(p, 0, {}, 1).bandwidth_bps, 1e9);
    EXPECT_DOUBLE_EQ(round_link(p, 0, {}, 1).latency_s, 0.025);
    // A relayed member takes 3 payloads, 1 of them (from the other relayed member) through the
    // relay, which carries 2 at once: 50 Mb/s each. 3 payloads in the time of one at 50 Mb/s is
    // 150 Mb/s, under its own 1 Gb/s.
    EXPECT_DOUBLE_EQ(round_link(p, 2, {}, 1).bandwidth_bps, 150e6);
    EXPECT_DOUBLE_EQ(round_link(p, 3, {0, 1, 2, 3}, 1).bandwidth_bps, 150e6);
    // Alone behind the relay in a round of {1, 3}: it dials 1, nothing crosses the relay.
    EXPECT_EQ(round_link(p, 3, {1, 3}, 1).bandwidth_bps, 1e9);
    EXPECT_DOUBLE_EQ(round_link(p, 3, {1, 3}, 1).latency_s, 0.020);
    // Both relayed members alone: every payload crosses the relay, 100 / 2 = 50 Mb/s each.
    EXPECT_DOUBLE_EQ(round_link(p, 2, {2, 3}, 1).bandwidth_bps, 50e6);
    // Among public members only, nothing crosses the relay.
    EXPECT_EQ(round_link(p, 0, {0, 1}, 1).bandwidth_bps, 1e9);
    EXPECT_DOUBLE_EQ(round_link(p, 0, {0, 1}, 1).latency_s, 0.020);
    // A ring 0 → 1 → 2 → 3 → 0: only the edge 2 → 3 crosses the relay, alone on it: 100 Mb/s, the
    // slowest edge every step waits for.
    for (int self = 0; self < 4; ++self) EXPECT_EQ(round_link(p, self, {}, 6).bandwidth_bps, 100e6) << self;
    EXPECT_DOUBLE_EQ(round_link(p, 0, {}, 6).latency_s, 0.025);
    // A ring of {0, 1, 3}: no edge between two relayed members, nothing crosses the relay.
    EXPECT_EQ(round_link(p, 0, {0, 1, 3}, 6).bandwidth_bps, 1e9);
    EXPECT_DOUBLE_EQ(round_link(p, 0, {0, 1, 3}, 6).latency_s, 0.020);
    // 5 MB into replica 2 after the slowest arrival (3 s): 0.025 + 8·5e6 / 150e6 s.
    EXPECT_DOUBLE_EQ(round_end_s({2.0, 3.0, 2.5, 1.0}, round_link(p, 2, {}, 1), 5'000'000), 3.0 + 0.025 + 8 * 5e6 / 150e6);
    // A hub round never crosses the relay (relayed nodes dial the hub): the same as without one.
    auto direct = p;
    direct.relay.replicas.clear();
    EXPECT_EQ(outer_round_end_s(p, Topology::kHub, 2, {}, {1, 2, 3, 4}, 5'000'000, 1),
              outer_round_end_s(direct, Topology::kHub, 2, {}, {1, 2, 3, 4}, 5'000'000, 1));
    // A mesh round does: 4 + 0.025 + 8·5e6 / 150e6 s for replica 2.
    EXPECT_DOUBLE_EQ(outer_round_end_s(p, Topology::kMesh, 2, {}, {1, 2, 3, 4}, 5'000'000, 1),
                     4.0 + 0.025 + 8 * 5e6 / 150e6);
}

TEST(RelayLink, TheRelaysUnsetLinksAreTheOuterLinksAndBadReplicasAreRefused) {
    auto c = parse_config("[outer]\nalgorithm = \"diloco\"\nreplicas = 2\n[network]\nprofile = \"wan-100m\"\nrelay_replicas = [1]\n",
                          "relay.toml");
    ASSERT_TRUE(c) << c.message();
    const NetworkProfile p = network_profile(c->network).value();
    EXPECT_EQ(p.relay.up_bps, 100e6);
    EXPECT_EQ(p.relay.down_bps, 100e6);
    EXPECT_EQ(round_link(p, 1, {}, 1).bandwidth_bps, 100e6);
    EXPECT_DOUBLE_EQ(round_link(p, 1, {}, 1).latency_s, 0.030);
    c = parse_config("[outer]\nalgorithm = \"diloco\"\nreplicas = 2\n[network]\nrelay_replicas = [2]\n", "bad.toml");
    ASSERT_FALSE(c);
    EXPECT_NE(c.message().find("network.relay_replicas[0] = 2: the run has 2 replicas"), std::string::npos) << c.message();
    c = parse_config("[outer]\nalgorithm = \"diloco\"\nreplicas = 3\n[network]\nrelay_replicas = [1, 1]\n", "bad.toml");
    ASSERT_FALSE(c);
    EXPECT_NE(c.message().find("names replica 1 twice"), std::string::npos) << c.message();
}

// A hub round over access links is costed by phase (core/sim_clock.h outer_round_end_s): each
// upload leaves at its member's own clock over its own uplink, then the downloader's downlink takes
// the R − 1 others'. By hand for the home-and-cloud replicas, 11 MB payloads (33 MB recorded):
//   uploads in at max(4 + 0.03 + 0.8, 5 + 0.01 + 0.088, 4.5 + 0.01 + 0.088) = 5.098;
//   replica 0 downloads 22 MB at 500 Mb/s: 5.098 + 0.03 + 0.352 = 5.48;
//   replica 2 at 1 Gb/s: 5.098 + 0.01 + 0.176 = 5.284.
TEST(AccessLinks, AHubRoundPaysEachUploadOnItsOwnUplinkThenTheDownloadOnTheOwnDownlink) {
    const NetworkProfile p = home_and_cloud();
    const std::vector<double> clocks{4.0, 5.0, 4.5};
    const uint64_t bytes = 3 * 11'000'000;
    EXPECT_NEAR(outer_round_end_s(p, Topology::kHub, 0, {}, clocks, bytes, 2), 5.48, 1e-12);
    EXPECT_NEAR(outer_round_end_s(p, Topology::kHub, 2, {}, clocks, bytes, 2), 5.284, 1e-12);
    // Replicas 1 and 2 only (22 MB recorded, 11 MB each): uploads in at 5.098, download 11 MB at 1 Gb/s.
    EXPECT_NEAR(outer_round_end_s(p, Topology::kHub, 1, {1, 2}, {5.0, 4.5}, 2 * 11'000'000, 2), 5.098 + 0.01 + 0.088,
                1e-12);
    // Other topologies, and a hub without access links, keep round_end_s over round_link.
    EXPECT_EQ(outer_round_end_s(p, Topology::kMesh, 2, {}, clocks, bytes, 1),
              round_end_s(clocks, round_link(p, 2, {}, 1), bytes, 1));
    const NetworkProfile flat = network_profile("home-20m").value();
    EXPECT_EQ(outer_round_end_s(flat, Topology::kHub, 2, {}, clocks, bytes, 2), round_end_s(clocks, flat.outer, bytes, 2));
}

// cluster.hub_endpoint: a remote hub run must name one; a bad one is refused by name.
TEST(HubEndpoint, ARemoteHubRunNamesAReachableEndpointAndBadOnesAreRefused) {
    const std::string base =
        "[outer]\nalgorithm = \"sparseloco\"\nreplicas = 2\ntopology = \"hub\"\n[cluster]\nmode = \"remote\"\n"
        "endpoints = [\"tcp://10.0.0.2:7000\", \"tcp://10.0.0.3:7000\"]\n";
    auto c = parse_config(base, "hub.toml");
    ASSERT_FALSE(c);
    EXPECT_NE(c.message().find("cluster.hub_endpoint: a remote cluster with outer.topology = \"hub\" must name"),
              std::string::npos)
        << c.message();
    EXPECT_TRUE(parse_config(base + "hub_endpoint = \"tcp://10.0.0.1:7300\"\n", "hub.toml"));
    for (const char* bad : {"tcp://10.0.0.1:*", "tcp://10.0.0.1", "ipc:///tmp/x", "tcp://10.0.0.1:70000"}) {
        c = parse_config(base + "hub_endpoint = \"" + bad + "\"\n", "hub.toml");
        ASSERT_FALSE(c) << bad;
        EXPECT_NE(c.message().find("cluster.hub_endpoint \"" + std::string(bad) + "\""), std::string::npos) << c.message();
    }
    c = parse_config(
        "[outer]\nalgorithm = \"diloco\"\nreplicas = 2\n[cluster]\nhub_endpoint = \"tcp://127.0.0.1:7300\"\n",
        "hub.toml");
    ASSERT_FALSE(c);
    EXPECT_NE(c.message().find("cluster.hub_endpoint is set but the run has no hub"), std::string::npos) << c.message();
    c = parse_config(
        "[model]\ntie_embeddings = false\n[outer]\nalgorithm = \"sparseloco\"\nreplicas = 2\ntopology = \"hub\"\n"
        "[cluster]\nstages = 2\n",
        "hub.toml");
    ASSERT_FALSE(c);
    EXPECT_NE(c.message().find("pipeline replicas sync per stage, which the relay does not serve"), std::string::npos)
        << c.message();
    // A hub round names its members in a 64-bit mask: 64 replicas at most; and [faults] takes the hub.
    const std::string hub = "[outer]\nalgorithm = \"sparseloco\"\ntopology = \"hub\"\n";
    c = parse_config(hub + "replicas = 65\n", "hub.toml");
    ASSERT_FALSE(c);
    EXPECT_NE(c.message().find("a hub round names its members in a 64-bit mask, so at most 64 replicas (outer.replicas "
                               "is 65)"),
              std::string::npos)
        << c.message();
    EXPECT_TRUE(parse_config(hub + "replicas = 64\n", "hub.toml"));
    auto f = parse_config(hub + "replicas = 3\n[train]\nsteps = 40\n[faults]\nevents = [\"kill 2 at 15 rejoin 25\"]\n",
                          "hub.toml");
    EXPECT_TRUE(f) << f.message();
}

}  // namespace
}  // namespace tw
