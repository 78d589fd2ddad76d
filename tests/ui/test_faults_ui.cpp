// The workbench's faults: fault events placed on the plots' x-axes from
// hand-made rows, the markers merged per place and kind, and the layout editor's [faults] section
// (rows, their problems, the expanded schedule) with its round trip through the TOML a run reads.
#include <gtest/gtest.h>

#include <cmath>

#include "core/config_io.h"
#include "ui/data/run_faults.h"
#include "ui/logic/fault_events.h"
#include "ui/logic/fault_settings.h"
#include "ui/logic/layout_model.h"

namespace tw::ui {
namespace {

EventRecord ev(double wall_s, const std::string& node, const std::string& kind, const std::string& text) {
    return {wall_s, node, EventLevel::kWarning, kind, text};
}

// ---- which events, and the step their text names ------------------------------------------------

TEST(FaultEvents, OnlyFaultKindsAreMarked) {
    for (const char* k : {"fault", "node-lost", "member-lost", "rejoin", "recovery", "late", "members"})
        EXPECT_TRUE(is_fault_kind(k)) << k;
    for (const char* k : {"start", "checkpoint", "resume", "finish", "failed", "error", ""}) EXPECT_FALSE(is_fault_kind(k)) << k;
    EXPECT_EQ(fault_kind_index("fault"), 0);
    EXPECT_EQ(fault_kind_index("members"), 6);
    EXPECT_EQ(fault_kind_index("spare"), 7);
    EXPECT_EQ(fault_kind_index("standby"), -1);  // a spare waiting is not a fault
    EXPECT_EQ(short_label({0, "spare-0", EventLevel::kInfo, "spare", "spare-0 takes replica 2's place with the state after "
                                                                      "the round at step 20 from replica 0: 9 B"}),
              "spare-0 in");
    EXPECT_EQ(step_named({0, "spare-0", EventLevel::kInfo, "spare", "spare-0 takes replica 2's place with the state after "
                                                                     "the round at step 20 from replica 0: 9 B"}),
              20);
}

// The texts as engine/worker/replica_worker.cpp and remote/coordinator.cpp write them.
TEST(FaultEvents, StepNamedByTheText) {
    EXPECT_EQ(step_named(ev(1, "replica-2", "fault", "kill 2 at 40 rejoin 80: the worker stops; its weights, optimizer and outer state are gone")), 40);
    EXPECT_EQ(step_named(ev(1, "replica-1", "fault", "slow 1 at 10 until 20 x 3 (churn): its steps take 3x their time")), 10);
    // A disconnect names the round it rejoins after too: the fault is at its own step.
    EXPECT_EQ(step_named(ev(1, "replica-1", "fault",
                            "disconnect 1 at 35 rejoin 45: cut off; it trains on alone, and takes the state of a live "
                            "peer after the round at step 50")),
              35);
    EXPECT_EQ(step_named(ev(0, "replica-1", "node-lost",
                            "node replica-1 (tcp://127.0.0.1:5555) sent no heartbeat for 2.1 s (last at step 12); 2 replica(s) go on")),
              12);
    EXPECT_EQ(step_named(ev(3, "replica-0", "member-lost",
                            "round at step 15: replica 1 lost (collective: replica 1 is lost); the round is redone among replicas 0, 2")),
              15);
    EXPECT_EQ(step_named(ev(3, "replica-2", "rejoin", "took the state after the round at step 80 from replica 0: 123 B")), 80);
    EXPECT_EQ(step_named(ev(3, "replica-0", "recovery", "sent the state after the round at step 80 to replica 2: 123 B")), 80);
    EXPECT_EQ(step_named(ev(3, "replica-0", "late", "round at step 30: replica(s) 3 arrived more than 0.5 simulated s after the first and were left out")), 30);
    EXPECT_EQ(step_named(ev(3, "replica-0", "members", "the round at step 45 runs among replicas 0, 1")), 45);
    // The transport's own member-lost names no step; " at " in another kind's text is not a step.
    EXPECT_EQ(step_named(ev(0, "replica-0", "member-lost", "replica 1 silent for 2.0 s")), -1);
    EXPECT_EQ(step_named(ev(0, "replica-0", "rejoin", "came back at 12 o'clock")), -1);
}

// ---- where an event falls among a node's rows --------------------------------------------------

// An event naming no step (the transport's member-lost) takes the row nearest in wall time.
TEST(FaultEvents, WithoutANamedStepTheRowNearestInWallTime) {
    const std::vector<double> step = {1, 2, 3, 4, 5}, wall = {0.5, 1.0, 1.5, 2.0, 2.5};
    auto row = [&](double t) -> int64_t {
        auto p = place_event(ev(t, "n", "member-lost", "replica 1 silent for 2.0 s"), step, wall, true);
        if (!p) return -1;
        EXPECT_EQ(p->step, step[p->row]);
        return static_cast<int64_t>(p->row);
    };
    EXPECT_EQ(row(1.2), 1);   // 1.0 is nearer than 1.5
    EXPECT_EQ(row(1.25), 1);  // a tie takes the earlier row
    EXPECT_EQ(row(1.3), 2);
    EXPECT_EQ(row(1.5), 2);   // exactly on a row
    EXPECT_EQ(row(0.1), 0);   // before every row
    EXPECT_EQ(row(9.0), 4);   // after every row (a worker that stopped)
    EXPECT_EQ(row(0), -1);    // stored without a wall time (the transport's own): nothing to place it by
    EXPECT_FALSE(place_event(ev(1.2, "other", "member-lost", "replica 1 silent"), step, wall, false));  // another clock
    EXPECT_FALSE(place_event(ev(3, "n", "fault", "kill 1 at 4"), {}, {}, true));                       // no rows
}

// An event whose text names a step sits at that step, with the row nearest it (on a tie the
// earlier), whatever its wall time: "the round at step 20 ..." is stored after that round, nearer
// step 21's row in wall time.
TEST(FaultEvents, ANamedStepWinsAndTakesTheNearestRow) {
    // A replica killed after step 15 that rejoins after the round at step 30: rows 1..15 and 31..40.
    std::vector<double> step, wall;
    for (int s = 1; s <= 40; ++s)
        if (s <= 15 || s > 30) step.push_back(s), wall.push_back(0.01 * s + (s > 30 ? 0.5 : 0));
    auto place = [&](const EventRecord& e) { return place_event(e, step, wall, true).value(); };
    auto p = place(ev(0.66, "replica-2", "rejoin", "took the state after the round at step 30 from replica 0: 9 B"));
    EXPECT_EQ(p.step, 30);
    EXPECT_EQ(step[p.row], 31);  // its first row after the gap, not its last before (15)
    p = place(ev(0.16, "replica-2", "fault", "kill 2 at 15 rejoin 25: the worker stops"));
    EXPECT_EQ(p.step, 15);
    EXPECT_EQ(step[p.row], 15);
    p = place(ev(0.215, "replica-2", "members", "the round at step 20 runs among replicas 0, 1"));  // wall: step 21
    EXPECT_EQ(p.step, 20);
    EXPECT_EQ(step[p.row], 15);  // nearer 15 than 31
    p = place(ev(0, "replica-2", "node-lost", "node replica-2 (x) sent no heartbeat for 2.1 s (last at step 23); 2 replica(s) go on"));
    EXPECT_EQ(p.step, 23);       // wall_s 0 does not matter
    EXPECT_EQ(step[p.row], 15);  // 8 steps from 15, 8 from 31: the earlier
    p = place(ev(0, "n", "members", "the round at step 100 runs among replicas 0"));
    EXPECT_EQ(p.step, 100);
    EXPECT_EQ(step[p.row], 40);
    // Rows of another node (another clock) by the named step as well.
    p = place_event(ev(3.9, "other", "recovery", "sent the state after the round at step 4 to replica 1: 9 B"), step, wall, false).value();
    EXPECT_EQ(step[p.row], 4);
}

TEST(FaultEvents, ShortLabels) {
    EXPECT_EQ(short_label(ev(1, "r", "fault", "kill 2 at 40 rejoin 80: the worker stops")), "kill 2");
    EXPECT_EQ(short_label(ev(1, "r", "fault", "disconnect 1 at 10 rejoin 30: cut off")), "disconnect 1");
    EXPECT_EQ(short_label(ev(0, "replica-3", "node-lost", "node replica-3 ...")), "lost replica-3");
    EXPECT_EQ(short_label(ev(1, "r", "member-lost", "round at step 3: ...")), "lost");
    EXPECT_EQ(short_label(ev(1, "r", "recovery", "sent ...")), "state sent");
    EXPECT_EQ(short_label(ev(1, "r", "rejoin", "took ...")), "rejoin");
}

TEST(FaultEvents, MarksAtOnePlaceMerge) {
    std::vector<FaultMark> in = {{30, 2, "lost", "replica-0: lost 1"}, {10, 0, "kill 1", "replica-1: kill"},
                                 {30, 2, "lost", "replica-2: lost 1"}, {30, 5, "late", "replica-0: late"},
                                 {NAN, 0, "x", "nowhere"},            {30, 1, "lost node-1", "coordinator: lost"},
                                 {30, 2, "lost", "replica-2: lost 1"}, {30, 6, "members", "replica-0: lost"}};
    const auto out = merge_marks(in);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].x, 10);
    EXPECT_EQ(out[0].label, "kill 1");
    EXPECT_EQ(out[1].x, 30);
    EXPECT_EQ(out[1].kind, 1);  // the lowest kind: node-lost before member-lost and late
    EXPECT_EQ(out[1].label, "lost node-1, lost, late, members");
    // Whole texts once each: "replica-0: lost" is kept though "replica-0: lost 1" contains it.
    EXPECT_EQ(out[1].text, "coordinator: lost\nreplica-0: lost 1\nreplica-2: lost 1\nreplica-0: late\nreplica-0: lost");
}

// A run as ui/data holds it, by hand: two replicas, one killed and back, and the coordinator's
// node-lost (wall_s 0) for a node with rows and one for a node without.
RunData two_replicas() {
    RunData d;
    for (const char* n : {"replica-0", "replica-1"}) {
        NodeData& nd = d.nodes[n];
        for (int s = 1; s <= 10; ++s) {
            nd.step.push_back(s);
            nd.loss.push_back(5.0 - 0.1 * s);
            nd.wall_s.push_back(0.1 * s + (n[8] == '1' ? 0.02 : 0));
            nd.sim_s.push_back(2.0 * s);
        }
    }
    d.faults = {ev(0.41, "replica-1", "fault", "kill 1 at 4 rejoin 8: the worker stops"),
                ev(0, "replica-1", "node-lost", "node replica-1 (x) sent no heartbeat for 2.0 s (last at step 4); 1 replica(s) go on"),
                ev(0.81, "replica-1", "rejoin", "took the state after the round at step 8 from replica 0: 10 B"),
                ev(0.80, "replica-0", "recovery", "sent the state after the round at step 8 to replica 1: 10 B"),
                ev(0, "coordinator", "member-lost", "round at step 6: replica 1 lost; the round is redone among replicas 0")};
    return d;
}

TEST(RunFaults, MarksOnTheStepAndSimTimeAxes) {
    const RunData d = two_replicas();
    auto marks = fault_marks(d, 7, XAxis::kStep, nullptr);
    ASSERT_EQ(marks.size(), 3u);
    EXPECT_EQ(marks[0].x, 4);  // the fault (its schedule's step) and the node-lost ("last at step 4")
    EXPECT_EQ(marks[0].kind, fault_kind_index("fault"));
    EXPECT_EQ(marks[0].label, "kill 1, lost replica-1");
    EXPECT_EQ(marks[0].text, "run 7 replica-1: fault: kill 1 at 4 rejoin 8: the worker stops\n"
                             "run 7 replica-1: node-lost: node replica-1 (x) sent no heartbeat for 2.0 s (last at step 4); 1 replica(s) go on");
    EXPECT_EQ(marks[1].x, 6);  // the coordinator has no rows: the first node's, by the named step
    EXPECT_EQ(marks[2].x, 8);  // the rejoin and the donor's recovery
    EXPECT_EQ(marks[2].label, "rejoin, state sent");
    // Simulated time: the row's sim_s, or with a what-if replay that node's re-timed clock.
    marks = fault_marks(d, 7, XAxis::kSimTime, nullptr);
    EXPECT_EQ(marks[0].x, 8.0);
    EXPECT_EQ(marks[1].x, 12.0);
    RetimedRun rt;
    for (int s = 1; s <= 10; ++s) rt.nodes["replica-1"].clock_at[s] = 3.0 * s, rt.nodes["replica-0"].clock_at[s] = 5.0 * s;
    marks = fault_marks(d, 7, XAxis::kSimTime, &rt);
    ASSERT_EQ(marks.size(), 4u);  // rejoin (replica-1's clock) and recovery (replica-0's) now apart
    EXPECT_EQ(marks[0].x, 12.0);
    EXPECT_EQ(marks[1].x, 24.0);  // the rejoin, before the member-lost: marks are sorted by x
    EXPECT_EQ(marks[2].x, 30.0);  // the member-lost, placed on replica-0's rows, so replica-0's clock
    EXPECT_EQ(marks[3].x, 40.0);
    EXPECT_TRUE(fault_marks(RunData{}, 1, XAxis::kStep, nullptr).empty());
}

// ---- the layout editor's [faults] --------------------------------------------------------------

RunConfig diloco4() {
    RunConfig c = parse_config("", "<test>").value();
    c.outer.algorithm = "diloco";
    c.outer.replicas = 4;
    c.outer.inner_steps = 10;
    c.outer.topology.clear();
    resolve_topology(c);
    c.train.steps = 100;
    return c;
}

TEST(FaultSettings, NewEventIsValidAndRowsCarryTheirOwnProblems) {
    RunConfig c = diloco4();
    EXPECT_EQ(new_fault_event(c), "kill 3 at 10 rejoin 20");
    c.faults.events = {new_fault_event(c), "kill 9 at 4", "explode 1 at 3", "pause 1 at 0 until 5"};
    EXPECT_TRUE(fault_event_problems(c, 0).empty());
    EXPECT_EQ(fault_event_problems(c, 1), (std::vector<std::string>{"no replica 9 (outer.replicas 4)"}));
    ASSERT_EQ(fault_event_problems(c, 2).size(), 1u);
    EXPECT_EQ(fault_event_problems(c, 2)[0].rfind("\"explode\" is not a fault", 0), 0u);
    EXPECT_EQ(fault_event_problems(c, 3), (std::vector<std::string>{"step 0 outside 1..99"}));
    EXPECT_TRUE(fault_event_problems(c, 4).empty());
    remove_fault_event(c, 1);
    remove_fault_event(c, 7);  // none: nothing happens
    EXPECT_EQ(c.faults.events, (std::vector<std::string>{"kill 3 at 10 rejoin 20", "explode 1 at 3", "pause 1 at 0 until 5"}));
    RunConfig shorter = diloco4();
    shorter.train.steps = 5;  // shorter than a round: the kill goes at the last step before the end
    EXPECT_EQ(new_fault_event(shorter), "kill 3 at 4 rejoin 14");
    shorter.faults.events = {new_fault_event(shorter)};
    EXPECT_TRUE(fault_event_problems(shorter, 0).empty());
}

// Editor state → config → TOML → parse → the same values, as the run gets them (the driver starts
// a run from parse_config(to_toml(config))).
TEST(FaultSettings, EditorRoundTripThroughTheToml) {
    LayoutModel m;
    RunConfig& c = m.config();
    c = diloco4();
    c.faults.events = {new_fault_event(c), "slow 1 at 10 until 20 x 3", "disconnect 2 at 30 rejoin 50", "pause 0 at 40 until 45"};
    c.faults.churn_mtbf_steps = 60;
    c.faults.churn_down_steps = 15;
    c.faults.churn_seed = 7;
    c.cluster.min_replicas = 2;
    c.cluster.spares = 1;
    c.outer.round_deadline_s = 0.25;
    ASSERT_TRUE(m.validate()) << (m.errors().empty() ? m.general_errors().front() : m.errors().begin()->second);
    auto back = parse_config(m.to_toml(), "round trip");
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(back->faults.events, c.faults.events);
    EXPECT_EQ(back->faults.churn_mtbf_steps, 60);
    EXPECT_EQ(back->faults.churn_down_steps, 15);
    EXPECT_EQ(back->faults.churn_seed, 7);
    EXPECT_EQ(back->cluster.min_replicas, 2);
    EXPECT_EQ(back->cluster.spares, 1);
    EXPECT_EQ(back->outer.round_deadline_s, 0.25);
    EXPECT_EQ(to_toml(*back), m.to_toml());
    LayoutModel loaded;
    ASSERT_TRUE(loaded.load_toml_text(m.to_toml(), "saved.toml"));
    EXPECT_EQ(loaded.config().faults.events, c.faults.events);
    EXPECT_EQ(loaded.to_toml(), m.to_toml());
}

// cluster.restart_lost is a field of the layout: it round-trips through the TOML in child
// processes, and in threads its refusal lands on it, in the words `thinwire run` uses.
TEST(FaultSettings, RestartsOfLostNodesRoundTripAndTheirProblemLandsOnTheField) {
    LayoutModel m;
    m.config() = diloco4();
    m.config().cluster.mode = "local";
    m.config().cluster.restart_lost = 3;
    ASSERT_TRUE(m.validate()) << (m.errors().empty() ? m.general_errors().front() : m.errors().begin()->second);
    auto back = parse_config(m.to_toml(), "round trip");
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(back->cluster.restart_lost, 3);
    m.config().cluster.mode = "threads";
    EXPECT_FALSE(m.validate());
    EXPECT_NE(m.error("cluster.restart_lost").find("threads have no process to restart"), std::string::npos)
        << m.error("cluster.restart_lost");
}

// validate() puts the [faults] problems on their fields (the field table's keys, which the
// defaults' TOML leaves out), as `thinwire run` words them.
TEST(FaultSettings, ProblemsLandOnTheirFields) {
    LayoutModel m;
    m.config() = diloco4();
    m.config().faults.events = {"kill 7 at 10"};
    m.config().faults.churn_mtbf_steps = 30;  // without down_steps
    m.config().cluster.min_replicas = 5;
    EXPECT_FALSE(m.validate());
    EXPECT_NE(m.error("faults.events").find("no replica 7"), std::string::npos) << m.error("faults.events");
    EXPECT_NE(m.error("faults.churn.down_steps").find("must be at least 1"), std::string::npos);
    EXPECT_NE(m.error("cluster.min_replicas").find("exceeds outer.replicas 4"), std::string::npos);
    m.config().outer.algorithm = "ddp";
    m.config().cluster.min_replicas = 1;
    m.config().faults.churn_mtbf_steps = 0;
    m.config().faults.events = {"kill 1 at 10"};
    EXPECT_FALSE(m.validate());
    bool named = false;
    for (auto& g : m.general_errors()) named = named || g.find("[faults]: faults act on the replicas of an outer algorithm") != std::string::npos;
    EXPECT_TRUE(named);
}

TEST(FaultSettings, ExpandedScheduleShowsTheChurnsDraws) {
    RunConfig c = diloco4();
    c.faults.events = {"kill 1 at 40 rejoin 60"};
    c.faults.churn_mtbf_steps = 30;
    c.faults.churn_down_steps = 10;
    c.faults.churn_seed = 3;
    c.cluster.min_replicas = 2;
    auto lines = schedule_lines(c, 100);
    ASSERT_TRUE(lines) << lines.message();
    ASSERT_GE(lines->size(), 2u);
    size_t churn = 0;
    for (auto& l : *lines) churn += l.find("(churn)") != std::string::npos;
    EXPECT_EQ(churn + 1, lines->size());  // every line but the written one is a draw
    auto again = schedule_lines(c, 100);
    EXPECT_EQ(again.value(), lines.value());  // the seed draws the same
    auto capped = schedule_lines(c, 1);
    ASSERT_EQ(capped->size(), 2u);
    EXPECT_EQ(capped->back(), "... and " + std::to_string(lines->size() - 1) + " more");
    c.faults.events = {"kill 9 at 4"};
    EXPECT_FALSE(schedule_lines(c, 10));
}

}  // namespace
}  // namespace tw::ui
