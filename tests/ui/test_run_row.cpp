// Tests of ui/data/run_row.h (the History table's rows, their sorting and the settings that differ)
// and RunStore::totals, on hand-made runs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "storage/run_store.h"
#include "ui/data/run_row.h"

namespace tw::ui {
namespace {

RunRow row(int64_t id, std::map<std::string, std::string> cfg, double bytes = 0, double sim = 0) {
    return make_run_row(id, std::move(cfg), RunStore::Totals{bytes, sim});
}

TEST(RunRow, CompressionBytesPerReplicaAndQuotesFromTheConfig) {
    RunRow s = row(1, {{"outer.algorithm", "'sparseloco'"}, {"outer.replicas", "4"}, {"outer.topk_k", "64"},
                       {"outer.topk_chunk", "64"}}, 800, 12.5);
    EXPECT_EQ(s.algorithm, "sparseloco");
    EXPECT_EQ(s.compression, "1.56%");  // 64 / 64²
    EXPECT_DOUBLE_EQ(s.bytes_per_replica, 200);
    EXPECT_DOUBLE_EQ(s.sim_s, 12.5);
    RunRow p = row(2, {{"outer.algorithm", "\"diloco\""}, {"outer.replicas", "2"}, {"outer.dtype", "\"fp4\""},
                       {"cluster.stages", "2"}, {"pipeline.rank", "16"}});
    EXPECT_EQ(p.compression, "fp4, rank 16");
    RunRow d = row(3, {{"outer.algorithm", "'ddp'"}, {"outer.replicas", "4"}, {"outer.dtype", "'fp32'"}});
    EXPECT_EQ(d.compression, "");
}

TEST(RunRow, SortsByFinalLossWithUnknownLast) {
    RunSummary a, b, c, d;
    a.id = 1, a.last_val_loss = 6.2;
    b.id = 2, b.last_val_loss = 5.9;
    c.id = 3;  // no validation loss yet
    d.id = 4, d.last_val_loss = 7.1;
    std::vector<TableRun> t = {{&a, nullptr}, {&b, nullptr}, {&c, nullptr}, {&d, nullptr}};
    auto ids = [&] {
        std::vector<int64_t> out;
        for (auto& r : t) out.push_back(r.summary->id);
        return out;
    };
    sort_runs(t, RunColumn::kValLoss, true);
    EXPECT_EQ(ids(), (std::vector<int64_t>{2, 1, 4, 3}));
    sort_runs(t, RunColumn::kValLoss, false);
    EXPECT_EQ(ids(), (std::vector<int64_t>{4, 1, 2, 3}));
}

TEST(RunRow, SortsBySettingNumericallyAndListsWhatDiffers) {
    RunSummary a, b, c;
    a.id = 1, b.id = 2, c.id = 3;
    RunRow ra = row(1, {{"outer.lr", "0.7"}, {"run.name", "'x'"}, {"train.steps", "300"}});
    RunRow rb = row(2, {{"outer.lr", "0.08"}, {"run.name", "'y'"}, {"train.steps", "300"}});
    RunRow rc = row(3, {{"outer.lr", "1.2"}, {"run.name", "'z'"}, {"train.steps", "300"}, {"pipeline.rank", "8"}});
    std::vector<TableRun> t = {{&a, &ra}, {&b, &rb}, {&c, &rc}};
    sort_runs(t, RunColumn::kSetting, true, "outer.lr");  // as numbers: 0.08 < 0.7 < 1.2 (as text 0.08 < 0.7 < 1.2 too; 10 vs 9 below)
    EXPECT_EQ(t[0].summary->id, 2);
    EXPECT_EQ(t[2].summary->id, 3);
    RunRow r9 = row(4, {{"x.k", "9"}}), r10 = row(5, {{"x.k", "10"}});
    RunSummary s9, s10;
    s9.id = 4, s10.id = 5;
    std::vector<TableRun> n = {{&s10, &r10}, {&s9, &r9}};
    sort_runs(n, RunColumn::kSetting, true, "x.k");
    EXPECT_EQ(n[0].summary->id, 4) << "9 before 10: numeric, not text, order";
    EXPECT_EQ(differing_settings({&ra, &rb, &rc}).keys, (std::vector<std::string>{"outer.lr", "pipeline.rank"}));
    EXPECT_EQ(differing_settings({&ra, &rb, &rc}).cells[1], (std::vector<std::string>{"-", "-", "8"}));
    EXPECT_TRUE(differing_settings({&ra, &ra}).keys.empty());
}

TEST(RunStoreTotals, SumsEachNodesLastBytesAndTakesTheLatestClock) {
    const std::string p = testing::TempDir() + "tw_totals_" + std::to_string(getpid()) + ".db";
    std::remove(p.c_str());
    auto s = RunStore::open(p);
    ASSERT_TRUE(s);
    const int64_t id = s->create_run("r", "train", "", "h", 1).value();
    // Node a: outer counter 100 then 250 (cumulative); node b: outer 300 and stage 40; a loss row at sim 9.5.
    ASSERT_TRUE(s->add_metrics(id, {{"a", 1, -1, 0, 1.0, "bytes.outer.sent", 100},
                                    {"a", 2, -1, 0, 2.0, "bytes.outer.sent", 250},
                                    {"b", 2, -1, 0, 2.5, "bytes.outer.sent", 300},
                                    {"b", 2, -1, 0, 2.5, "bytes.stage.sent", 40},
                                    {"b", 3, -1, 0, 9.5, "train.loss", 4.2},
                                    {"b", 3, -1, 0, 3.0, "bytes.outer.recv", 9999}}));
    auto t = s->totals(id);
    ASSERT_TRUE(t);
    EXPECT_DOUBLE_EQ(t->bytes_sent, 250 + 300 + 40);
    EXPECT_DOUBLE_EQ(t->sim_s, 9.5);
    const int64_t empty = s->create_run("e", "train", "", "h", 1).value();
    EXPECT_TRUE(std::isnan(s->totals(empty)->sim_s));
    EXPECT_FALSE(s->totals(999));
    std::remove(p.c_str());
}

}  // namespace
}  // namespace tw::ui
