// Export: CSV and JSON carry exact values; a standalone copy holds exactly one run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "storage/export.h"

namespace tw {
namespace {

std::string temp_db(const std::string& tag) {
    const std::string p = testing::TempDir() + "tw_export_" + tag + "_" + std::to_string(getpid()) + ".db";
    for (const char* ext : {"", "-wal", "-shm"}) std::remove((p + ext).c_str());
    return p;
}

// Two runs; the second has metrics (one of them NaN) and an event.
int64_t fill(RunStore& store) {
    (void)store.create_run("other", "train", "[run]\nname = \"other\"\n", "aa", 1).value();
    const int64_t id = store.create_run("main", "train", "[run]\nname = \"main\"\n", "bb", 7).value();
    EXPECT_TRUE(store.add_metrics(id, {{"local", 1, -1, 0.5, 0.5, "train.loss", 8.25},
                                       {"local", 2, -1, 1.0, 1.0, "train.loss", 0.1 + 0.2},
                                       {"local", 2, -1, 1.0, 1.0, "val.loss", NAN}}).is_ok());
    EXPECT_TRUE(store.add_event(id, {0.1, "local", EventLevel::kInfo, "checkpoint", "step 2"}).is_ok());
    EXPECT_TRUE(store.finish_run(id, RunStatus::kFinished, "").is_ok());
    return id;
}

TEST(Export, CsvHasOneRowPerMetricWithExactValues) {
    auto store = RunStore::open(temp_db("csv")).value();
    const int64_t id = fill(store);
    std::ostringstream out;
    ASSERT_TRUE(write_run_csv(store, id, out).is_ok());
    EXPECT_EQ(out.str(),
              "run_id,node,step,outer_step,wall_s,sim_s,name,value\n"
              "2,local,1,-1,0.5,0.5,train.loss,8.25\n"
              "2,local,2,-1,1,1,train.loss,0.30000000000000004\n"
              "2,local,2,-1,1,1,val.loss,nan\n");
    std::ostringstream none;
    EXPECT_EQ(write_run_csv(store, 99, none).message(), "no run with id 99");
}

TEST(Export, JsonHoldsRunConfigMetricsAndEvents) {
    auto store = RunStore::open(temp_db("json")).value();
    const int64_t id = fill(store);
    std::ostringstream out;
    ASSERT_TRUE(write_run_json(store, id, out).is_ok());
    auto j = nlohmann::json::parse(out.str());
    EXPECT_EQ(j["run"]["name"], "main");
    EXPECT_EQ(j["run"]["status"], "finished");
    EXPECT_EQ(j["run"]["config_toml"], "[run]\nname = \"main\"\n");
    EXPECT_EQ(j["metrics"]["train.loss"].size(), 2u);
    EXPECT_EQ(j["metrics"]["train.loss"][1]["value"].get<double>(), 0.1 + 0.2);
    EXPECT_TRUE(j["metrics"]["val.loss"][0]["value"].is_null());
    EXPECT_EQ(j["events"][0]["kind"], "checkpoint");
}

TEST(Export, StandaloneCopyHoldsJustThatRunAndNeverOverwrites) {
    auto store = RunStore::open(temp_db("src")).value();
    const int64_t id = fill(store);
    const std::string dest = temp_db("dest");
    ASSERT_TRUE(store.copy_run_to(id, dest).is_ok());
    auto copy = RunStore::open(dest).value();
    auto runs = copy.list_runs().value();
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].id, id);
    EXPECT_EQ(runs[0].name, "main");
    EXPECT_EQ(copy.metrics(id, "train.loss").value().size(), 2u);
    EXPECT_EQ(copy.events(id).value().size(), 1u);
    Status again = store.copy_run_to(id, dest);
    EXPECT_EQ(again.message(), "refusing to overwrite existing file " + dest);
    EXPECT_EQ(copy.list_runs().value().size(), 1u);  // the existing copy is untouched
}

}  // namespace
}  // namespace tw
