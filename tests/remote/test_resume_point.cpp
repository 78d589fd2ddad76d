// Where `thinwire run --resume` goes on from (coordinator/resume_plan.h resume_point), on a real
// store with hand-placed checkpoint rows: one step common to every node; HDEE experts each from its
// own latest checkpoint; time-budgeted rounds after the latest round every node checkpointed at its
// end, each node at its own step of it.
#include <gtest/gtest.h>

#include <filesystem>

#include "coordinator/resume_plan.h"
#include "core/metric_names.h"
#include "storage/run_store.h"

namespace tw {
namespace {
namespace fs = std::filesystem;

struct Store {
    explicit Store(const std::string& name) {
        const fs::path dir = fs::path(::testing::TempDir()) / "tw_resume_point";
        fs::create_directories(dir);
        path = (dir / (name + ".db")).string();
        for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix);
        store = std::make_unique<RunStore>(RunStore::open(path).value());
        id = store->create_run(name, "run", "", "", 1).value();
        EXPECT_TRUE(store->set_launch(id, {"[train]\n", "feed"}).is_ok());
        for (const char* n : {"a", "b"}) {
            RunNode node;
            node.node = n;
            EXPECT_TRUE(store->add_node(id, node).is_ok());
        }
    }
    // A checkpoint row of node `n` at `step`, written after outer round `outer` + 1.
    void ckpt(const std::string& n, int64_t step, int64_t outer) {
        ASSERT_TRUE(store->add_metrics(id, {{n, step, outer, 0, 0, metric::kCkptBytes, 1}}).is_ok());
    }
    std::string path;
    std::unique_ptr<RunStore> store;
    int64_t id = 0;
};

TEST(ResumePoint, OneStepCommonToEveryNode) {
    Store s("common");
    s.ckpt("a", 40, 3), s.ckpt("b", 40, 3), s.ckpt("a", 80, 7);  // b's 80 never reached the store
    auto at = resume_point(*s.store, s.id, {"b", "a"});
    ASSERT_TRUE(at) << at.message();
    EXPECT_EQ(at->step, 40);
    EXPECT_EQ(at->uid, "feed");
    EXPECT_TRUE(at->node_steps.empty());
    EXPECT_FALSE(resume_point(*s.store, s.id, {"a", "c"}));  // other nodes than the run's
}

TEST(ResumePoint, IndependentNodesEachFromTheirOwnLatest) {
    Store s("independent");
    s.ckpt("a", 50, -1), s.ckpt("a", 100, -1);
    ResumeRule rule;
    rule.independent = true;
    auto at = resume_point(*s.store, s.id, {"a", "b"}, rule);
    ASSERT_TRUE(at) << at.message();
    EXPECT_EQ(at->node_steps, (std::map<std::string, int64_t>{{"a", 100}}));  // b wrote none: it starts over
    EXPECT_EQ(at->step, 0);
    s.ckpt("b", 150, -1);
    at = resume_point(*s.store, s.id, {"a", "b"}, rule);
    EXPECT_EQ(at->node_steps, (std::map<std::string, int64_t>{{"a", 100}, {"b", 150}}));
    EXPECT_EQ(at->step, 100);
}

// a runs 4 steps per round, b 2; both checkpoint every 10 rounds (a at 40, 80, b at 20, 40).
TEST(ResumePoint, TimeBudgetedRoundsAfterTheLatestCommonRoundEachAtItsOwnStep) {
    Store s("rounds");
    ResumeRule rule;
    rule.round_steps = {{"a", 4}, {"b", 2}};
    EXPECT_FALSE(resume_point(*s.store, s.id, {"a", "b"}, rule));  // nothing written yet: refused
    s.ckpt("a", 40, 9), s.ckpt("b", 20, 9);
    s.ckpt("a", 80, 19);                                        // b's round-20 file never reached the store
    s.ckpt("a", 82, 19), s.ckpt("b", 41, 19);                   // clean stops mid-round: not round ends
    auto at = resume_point(*s.store, s.id, {"a", "b"}, rule);
    ASSERT_TRUE(at) << at.message();
    EXPECT_EQ(at->node_steps, (std::map<std::string, int64_t>{{"a", 40}, {"b", 20}}));
    EXPECT_EQ(at->step, 20);
    s.ckpt("b", 40, 19);
    at = resume_point(*s.store, s.id, {"a", "b"}, rule);
    EXPECT_EQ(at->node_steps, (std::map<std::string, int64_t>{{"a", 80}, {"b", 40}}));
}

// With spares: the latest step every other node wrote and no spare did. Replica b was lost after 40,
// the spare took its place and wrote at 80 with a; 80 is not a resume point, 40 is.
TEST(ResumePoint, WithSparesBeforeAnySpareTookAPlace) {
    Store s("spares");
    RunNode spare;
    spare.node = "spare-0";
    ASSERT_TRUE(s.store->add_node(s.id, spare).is_ok());
    ResumeRule rule;
    rule.spares = {"spare-0"};
    EXPECT_FALSE(resume_point(*s.store, s.id, {"a", "b", "spare-0"}, rule));  // nothing written yet
    s.ckpt("a", 40, 3), s.ckpt("b", 40, 3);
    s.ckpt("a", 80, 7), s.ckpt("spare-0", 80, 7);
    auto at = resume_point(*s.store, s.id, {"a", "b", "spare-0"}, rule);
    ASSERT_TRUE(at) << at.message();
    EXPECT_EQ(at->step, 40);
    EXPECT_TRUE(at->node_steps.empty());
}

}  // namespace
}  // namespace tw
