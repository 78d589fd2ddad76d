// The fault schedule ([faults], core/fault_schedule.h): parsing with named errors, membership by
// round, rejoin boundaries, compute factors and the churn's determinism and quorum rule.
#include <gtest/gtest.h>

#include "core/config.h"
#include "core/config_io.h"
#include "core/fault_schedule.h"

namespace tw {
namespace {

RunConfig diloco(int replicas, int64_t h, int64_t steps) {
    RunConfig c;
    c.outer.algorithm = "diloco";
    c.outer.topology = "ring";
    c.outer.replicas = replicas;
    c.outer.inner_steps = h;
    c.train.steps = steps;
    return c;
}

TEST(FaultSchedule, KillAndRejoinSetMembershipByRound) {
    RunConfig c = diloco(3, 10, 60);
    c.faults.events = {"kill 2 at 15 rejoin 25"};
    auto s = FaultSchedule::create(c);
    ASSERT_TRUE(s) << s.message();
    // Down after step 15: out of the rounds at 20 and 30 (the first boundary ≥ 25), back for 40.
    EXPECT_EQ(s->members(10), (std::vector<int>{0, 1, 2}));
    EXPECT_EQ(s->members(20), (std::vector<int>{0, 1}));
    EXPECT_EQ(s->members(30), (std::vector<int>{0, 1}));
    EXPECT_EQ(s->members(40), (std::vector<int>{0, 1, 2}));
    EXPECT_EQ(s->rejoining(30), (std::vector<int>{2}));
    EXPECT_TRUE(s->rejoining(20).empty());
    ASSERT_EQ(s->starting(2, 15).size(), 1u);
    EXPECT_EQ(s->starting(2, 15)[0]->text(), "kill 2 at 15 rejoin 25");
    // Rounds taken: replica 2 was in the round at 10 only up to its kill; the 40, 50 and 60 after.
    EXPECT_EQ(s->rounds_taken(2, 0, 15, 10), 1);
    EXPECT_EQ(s->rounds_taken(2, 0, 60, 10), 4);
    EXPECT_EQ(s->rounds_taken(2, 30, 60, 10), 3);  // a run resumed at 30 counts from there
    EXPECT_EQ(s->rounds_taken(0, 0, 60, 10), 6);
    // A kill at a boundary takes part in that round.
    c.faults.events = {"kill 1 at 20"};
    s = FaultSchedule::create(c);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->members(20), (std::vector<int>{0, 1, 2}));
    EXPECT_EQ(s->members(30), (std::vector<int>{0, 2}));
    EXPECT_EQ(s->members(60), (std::vector<int>{0, 2}));  // never back
    // Killed for good: its place is free for a spare from the step after the kill on.
    EXPECT_FALSE(s->gone_for_good(1, 20));
    EXPECT_TRUE(s->gone_for_good(1, 21));
    EXPECT_FALSE(s->gone_for_good(0, 60));
    c.faults.events = {"kill 2 at 15 rejoin 25", "disconnect 1 at 12"};
    s = FaultSchedule::create(c);
    ASSERT_TRUE(s);
    EXPECT_FALSE(s->gone_for_good(2, 20));  // it comes back
    EXPECT_FALSE(s->gone_for_good(1, 60));  // cut off, not dead: it trains on alone
}

TEST(FaultSchedule, SparesWorkOverTheHubAndAreRefusedWhereNoReplicaCanBeLost) {
    RunConfig c = diloco(3, 10, 60);
    c.cluster.spares = 1;
    std::vector<std::string> p;
    FaultSchedule::problems(c, p);
    EXPECT_TRUE(p.empty()) << p.front();
    c.outer.topology = "hub";  // the relay's members are the replicas and the spares
    FaultSchedule::problems(c, p);
    EXPECT_TRUE(p.empty()) << p.front();
    c.train.ckpt_every = 10;  // checkpoints too: resumed from before any spare took a place
    FaultSchedule::problems(c, p);
    EXPECT_TRUE(p.empty()) << p.front();
    c.cluster.nodes_per_replica = 2;
    FaultSchedule::problems(c, p);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_NE(p[0].find("replicas of one node only"), std::string::npos) << p[0];
    p.clear();
    c = diloco(3, 10, 60);
    c.outer.algorithm = "ddp";
    c.cluster.spares = 2;
    FaultSchedule::problems(c, p);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_NE(p[0].find("cluster.spares 2: spares take the place of lost replicas of an outer algorithm"), std::string::npos) << p[0];
}

// cluster.restart_lost: child processes or remote nodes, one-node replicas of an outer algorithm,
// no spares and no schedule (each of those says otherwise how a replica comes back); each refusal named.
TEST(FaultSchedule, RestartsOfLostNodesAreTakenWhereTheCoordinatorCanRestartTheReplica) {
    RunConfig c = diloco(3, 10, 60);
    c.cluster.mode = "local";
    c.cluster.restart_lost = 2;
    std::vector<std::string> p;
    FaultSchedule::problems(c, p);
    EXPECT_TRUE(p.empty()) << p.front();
    const auto refused = [&c](const std::string& why) {
        std::vector<std::string> q;
        FaultSchedule::problems(c, q);
        return q.size() == 1 && q[0].rfind("cluster.restart_lost 2: ", 0) == 0 && q[0].find(why) != std::string::npos;
    };
    c.cluster.mode = "threads";
    EXPECT_TRUE(refused("threads have no process to restart"));
    c.cluster.mode = "remote";  // its operator restarts the node; the coordinator takes it back
    p.clear();
    FaultSchedule::problems(c, p);
    EXPECT_TRUE(p.empty()) << p.front();
    // A replica of several nodes, or a pipeline, restarts as a whole: in child processes by its
    // coordinator, on a remote cluster once its operator has restarted the lost nodes.
    for (const char* mode : {"local", "remote"}) {
        c.cluster.mode = mode;
        c.cluster.nodes_per_replica = 2;
        p.clear();
        FaultSchedule::problems(c, p);
        EXPECT_TRUE(p.empty()) << p.front();
        c.cluster.nodes_per_replica = 1;
        c.cluster.stages = 2;
        p.clear();
        FaultSchedule::problems(c, p);
        EXPECT_TRUE(p.empty()) << p.front();
        c.cluster.stages = 1;
    }
    c.cluster.mode = "local";
    c.cluster.stages = 2;
    c.cluster.nodes_per_replica = 2;
    EXPECT_TRUE(refused("full replicas of one node only"));
    c.cluster.nodes_per_replica = 1;
    c.pipeline.routing = "random";
    EXPECT_TRUE(refused("cannot go on without a replica"));
    c.pipeline.routing = "fixed";
    c.cluster.stages = 1;
    c.cluster.spares = 1;
    EXPECT_TRUE(refused("either restarted or through a spare"));
    c.cluster.spares = 0;
    c.faults.events = {"kill 1 at 15"};
    EXPECT_TRUE(refused("a fault schedule's kills say themselves"));
    c.faults.events.clear();
    c.outer.round_time_s = 2;
    EXPECT_TRUE(refused("time-budgeted rounds"));
    c.outer.round_time_s = 0;
    c.outer.algorithm = "ddp";
    EXPECT_TRUE(refused("restarted nodes rejoin the rounds of an outer algorithm"));
}

// Replicas of several nodes take a fault schedule (every node follows its replica's), and no
// spares, and a deadline; pipelines take every event where their rounds survive a loss, and a
// deadline there.
TEST(FaultSchedule, WhichRunKindsTakeASchedule) {
    RunConfig c = diloco(3, 10, 60);
    c.faults.events = {"kill 2 at 15 rejoin 25", "disconnect 1 at 32 rejoin 35"};
    c.cluster.nodes_per_replica = 2;
    std::vector<std::string> p;
    FaultSchedule::problems(c, p);
    EXPECT_TRUE(p.empty()) << p.front();
    c.outer.round_deadline_s = 0.5;  // a late leader's group takes the donor's state through it
    FaultSchedule::problems(c, p);
    EXPECT_TRUE(p.empty()) << p.front();
    // Runs with pipeline replicas: every kind of event, but replica 0 stays, and only where the
    // rounds go on among survivors (fixed routing).
    p.clear();
    c = diloco(3, 10, 60);
    c.cluster.stages = 2;
    c.pipeline.replicas = 2;
    c.faults.events = {"kill 2 at 15", "slow 1 at 5 until 9 x 2", "pause 1 at 20 until 22"};
    FaultSchedule::problems(c, p);
    EXPECT_TRUE(p.empty()) << p.front();
    c.outer.replicas = 4;  // replicas 0 and 1 full, 2 and 3 pipelines
    // a pipeline and a full replica killed and back, a pipeline and a full replica cut off
    c.faults.events = {"kill 2 at 15 rejoin 25", "kill 1 at 15 rejoin 25", "disconnect 3 at 5 rejoin 9",
                       "disconnect 1 at 32"};
    FaultSchedule::problems(c, p);
    EXPECT_TRUE(p.empty()) << p.front();
    c.faults.events = {"disconnect 0 at 5", "kill 0 at 30"};
    FaultSchedule::problems(c, p);
    ASSERT_EQ(p.size(), 2u);
    EXPECT_NE(p[0].find("\"disconnect 0 at 5\": replica 0 evaluates the global model"), std::string::npos) << p[0];
    EXPECT_NE(p[1].find("\"kill 0 at 30\": replica 0 evaluates the global model"), std::string::npos) << p[1];
    // Churn strikes every replica but 0.
    p.clear();
    c.faults.events = {};
    c.faults.churn_mtbf_steps = 8;
    c.faults.churn_down_steps = 5;
    c.faults.churn_seed = 1;
    FaultSchedule::problems(c, p);
    EXPECT_TRUE(p.empty()) << p.front();
    auto churn = FaultSchedule::create(c);
    ASSERT_TRUE(churn) << churn.message();
    ASSERT_FALSE(churn->empty());
    bool full_struck = false;
    for (auto& e : churn->events()) {
        EXPECT_GE(e.replica, 1) << e.text();
        full_struck = full_struck || e.replica == 1;
    }
    EXPECT_TRUE(full_struck);
    c.pipeline.replicas = 4;  // every replica a pipeline: replica 0 is spared all the same
    churn = FaultSchedule::create(c);
    ASSERT_TRUE(churn) << churn.message();
    for (auto& e : churn->events()) EXPECT_GE(e.replica, 1) << e.text();
    c.outer.replicas = 3;
    c.pipeline.replicas = 2;
    c.faults.churn_mtbf_steps = 0;
    c.faults.events = {"kill 2 at 15"};
    p.clear();
    c.pipeline.routing = "random";
    FaultSchedule::problems(c, p);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_NE(p[0].find("cannot go on without a replica (pipeline.routing \"random\""), std::string::npos) << p[0];
    // A deadline: taken by pipeline runs whose rounds go on among the replicas present, refused
    // with random routing, naming why.
    c.faults.events = {};
    c.outer.round_deadline_s = 0.5;
    p.clear();
    FaultSchedule::problems(c, p);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_NE(p[0].find("outer.round_deadline_s: pipeline replicas are left out of a round only where"), std::string::npos) << p[0];
    c.pipeline.routing = "fixed";
    p.clear();
    FaultSchedule::problems(c, p);
    EXPECT_TRUE(p.empty()) << p.front();
}

TEST(FaultSchedule, StreamingRejoinsAtFragmentBoundaries) {
    RunConfig c = diloco(2, 12, 48);
    c.outer.algorithm = "streaming_diloco";
    c.outer.fragments = 3;  // a fragment round every 4 steps
    c.faults.events = {"disconnect 1 at 5 rejoin 9"};
    auto s = FaultSchedule::create(c);
    ASSERT_TRUE(s) << s.message();
    EXPECT_EQ(round_period(c), 4);
    EXPECT_EQ(s->members(8), (std::vector<int>{0}));
    EXPECT_EQ(s->rejoining(12), (std::vector<int>{1}));
    EXPECT_EQ(s->members(16), (std::vector<int>{0, 1}));
}

TEST(FaultSchedule, SlowAndPauseFactors) {
    RunConfig c = diloco(2, 10, 40);
    c.faults.events = {"slow 1 at 10 until 20 x 3", "pause 0 at 5 until 7"};
    auto s = FaultSchedule::create(c);
    ASSERT_TRUE(s) << s.message();
    EXPECT_EQ(s->compute_factor(1, 10), 1.0);
    EXPECT_EQ(s->compute_factor(1, 11), 3.0);
    EXPECT_EQ(s->compute_factor(1, 20), 3.0);
    EXPECT_EQ(s->compute_factor(1, 21), 1.0);
    EXPECT_EQ(s->compute_factor(0, 15), 1.0);
    EXPECT_EQ(s->members(10), (std::vector<int>{0, 1}));  // slow and paused replicas stay members
}

TEST(FaultSchedule, BadEventsAreNamedErrors) {
    RunConfig c = diloco(3, 10, 60);
    for (auto [text, why] : std::vector<std::pair<std::string, std::string>>{
             {"explode 1 at 3", "is not a fault"},
             {"kill 1 at", "cannot read it"},
             {"kill 7 at 10", "no replica 7"},
             {"kill 1 at 0", "outside 1..59"},
             {"kill 1 at 20 rejoin 10", "is not after step 20"},
             {"slow 1 at 5 until 9", "needs \"x K\""},
             {"slow 1 at 5 until 9 x -2", "is not a number"},
             {"pause 1 at 5", "needs \"until T\""},
             {"kill 1 at 5 rejoin 9 now", "unexpected \"now\""}}) {
        c.faults.events = {text};
        Status st = validate_config(c);
        ASSERT_FALSE(st) << text;
        EXPECT_NE(st.message().find("faults.events \"" + text + "\""), std::string::npos) << st.message();
        EXPECT_NE(st.message().find(why), std::string::npos) << st.message();
    }
    c.faults.events = {"kill 1 at 5"};
    c.outer.algorithm = "ddp";
    EXPECT_NE(validate_config(c).message().find("[faults]: faults act on the replicas of an outer algorithm"), std::string::npos);
    c = diloco(3, 10, 60);
    c.cluster.min_replicas = 4;
    EXPECT_NE(validate_config(c).message().find("cluster.min_replicas 4 exceeds outer.replicas 3"), std::string::npos);
}

TEST(FaultSchedule, ChurnIsSeededAndKeepsTheQuorum) {
    RunConfig c = diloco(4, 10, 400);
    c.faults.churn_mtbf_steps = 40;
    c.faults.churn_down_steps = 25;
    c.faults.churn_seed = 7;
    c.cluster.min_replicas = 3;
    auto a = FaultSchedule::create(c), b = FaultSchedule::create(c);
    ASSERT_TRUE(a && b);
    ASSERT_FALSE(a->empty());
    ASSERT_EQ(a->events().size(), b->events().size());
    for (size_t i = 0; i < a->events().size(); ++i) EXPECT_EQ(a->events()[i].text(), b->events()[i].text());
    for (int64_t round = 10; round <= 400; round += 10) EXPECT_GE(a->members(round).size(), 3u) << round;
    for (auto& e : a->events()) {
        EXPECT_TRUE(e.churn);
        EXPECT_EQ(e.until_step - e.at_step, 25);
    }
    c.faults.churn_seed = 8;
    auto other = FaultSchedule::create(c);
    ASSERT_TRUE(other);
    bool differs = other->events().size() != a->events().size();
    for (size_t i = 0; !differs && i < a->events().size(); ++i) differs = other->events()[i].text() != a->events()[i].text();
    EXPECT_TRUE(differs) << "another seed draws another schedule";
}

TEST(FaultSchedule, ParsesFromToml) {
    auto c = parse_config(R"([outer]
algorithm = "sparseloco"
replicas = 3
inner_steps = 10
[train]
steps = 50
[faults]
events = ["kill 1 at 12 rejoin 30"]
churn = { mtbf_steps = 20, down_steps = 5, seed = 3 }
)", "faults.toml");
    ASSERT_TRUE(c) << c.message();
    EXPECT_EQ(c->faults.events.size(), 1u);
    EXPECT_EQ(c->faults.churn_mtbf_steps, 20);
    EXPECT_EQ(c->faults.churn_down_steps, 5);
    EXPECT_EQ(c->faults.churn_seed, 3);
    // The resolved text carries the section and parses back to the same values.
    auto again = parse_config(to_toml(*c), "resolved");
    ASSERT_TRUE(again) << again.message() << "\n" << to_toml(*c);
    EXPECT_EQ(again->faults.events, c->faults.events);
    EXPECT_EQ(again->faults.churn_mtbf_steps, 20);
    EXPECT_EQ(config_hash(*again), config_hash(*c));
}

}  // namespace
}  // namespace tw
