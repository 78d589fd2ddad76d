// The workbench's pure logic (ui/logic): axis ticks, decimation, smoothing, the layout editor's model.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "core/config_io.h"
#include "ui/logic/resume_action.h"
#include "ui/logic/layout_model.h"
#include "ui/logic/series.h"
#include "ui/logic/ticks.h"

namespace tw::ui {
namespace {

namespace fs = std::filesystem;

std::vector<double> values_of(const std::vector<Tick>& ts, bool major) {
    std::vector<double> v;
    for (auto& t : ts)
        if (t.major == major) v.push_back(t.value);
    return v;
}

std::vector<std::string> labels_of(const std::vector<Tick>& ts) {
    std::vector<std::string> v;
    for (auto& t : ts)
        if (t.major) v.push_back(t.label);
    return v;
}

void expect_values(const std::vector<double>& got, const std::vector<double>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_DOUBLE_EQ(got[i], want[i]) << "tick " << i;
}

// ---- linear ticks ----

TEST(LinearTicks, UnitRangeStepsByFifths) {
    auto t = linear_ticks(0, 1, 6);
    expect_values(values_of(t, true), {0, 0.2, 0.4, 0.6, 0.8, 1});
    EXPECT_EQ(labels_of(t), (std::vector<std::string>{"0", "0.2", "0.4", "0.6", "0.8", "1"}));
}

TEST(LinearTicks, OddRangeStepsByOnesOrTwosWithASmallerTarget) {
    auto t = linear_ticks(3.7, 9.2, 6);
    expect_values(values_of(t, true), {4, 5, 6, 7, 8, 9});
    EXPECT_EQ(labels_of(t), (std::vector<std::string>{"4", "5", "6", "7", "8", "9"}));
    expect_values(values_of(linear_ticks(3.7, 9.2, 3), true), {4, 6, 8});
}

TEST(LinearTicks, NegativeRangesAndZeroWithoutSign) {
    auto t = linear_ticks(-7.3, -1.2, 6);
    expect_values(values_of(t, true), {-7, -6, -5, -4, -3, -2});
    EXPECT_EQ(labels_of(t).front(), "-7");
    auto z = linear_ticks(-1, 1, 5);
    EXPECT_EQ(labels_of(z), (std::vector<std::string>{"-1", "-0.5", "0", "0.5", "1"}));
}

TEST(LinearTicks, TinyRangeAroundOneGetsDistinctLabels) {
    const double lo = 1.0 - 5e-10, hi = 1.0 + 5e-10;
    auto t = linear_ticks(lo, hi, 6);
    ASSERT_GE(t.size(), 3u);
    std::set<std::string> labels;
    for (auto& k : t) {
        EXPECT_GE(k.value, lo);
        EXPECT_LE(k.value, hi);
        labels.insert(k.label);
    }
    EXPECT_EQ(labels.size(), t.size());
    EXPECT_TRUE(labels.count("1"));             // step 2e-10: 0.9999999996 ... 1 ... 1.0000000004
    EXPECT_TRUE(labels.count("1.0000000002"));  // ten decimals, no more
}

TEST(LinearTicks, HugeValuesUseExponentLabels) {
    auto t = linear_ticks(0, 5e7, 6);
    expect_values(values_of(t, true), {0, 1e7, 2e7, 3e7, 4e7, 5e7});
    EXPECT_EQ(labels_of(t), (std::vector<std::string>{"0", "1e+07", "2e+07", "3e+07", "4e+07", "5e+07"}));
    EXPECT_EQ(linear_ticks(0, 1e-5, 2).back().label, "1e-05");
}

// Every tick inside the range, steps 1, 2 or 5 × 10^k, labels distinct, count near the target.
TEST(LinearTicks, RandomRangesKeepTheInvariants) {
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> u(-1, 1), decade(-9, 9), width(-5, 3);
    for (int trial = 0; trial < 2000; ++trial) {
        const double scale = std::pow(10.0, decade(rng));
        const double lo = u(rng) * scale, hi = lo + scale * std::pow(10.0, width(rng));
        auto t = linear_ticks(lo, hi, 6);
        ASSERT_GE(t.size(), 3u) << lo << " " << hi;
        ASSERT_LE(t.size(), 11u) << lo << " " << hi;
        std::set<std::string> labels;
        for (size_t i = 0; i < t.size(); ++i) {
            ASSERT_TRUE(t[i].value >= lo && t[i].value <= hi) << t[i].value << " outside " << lo << " " << hi;
            labels.insert(t[i].label);
            if (i == 0) continue;
            const double step = t[i].value - t[i - 1].value;
            const double m = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
            const double mr = std::round(m);
            EXPECT_NEAR(m, mr, 1e-6 * mr) << lo << " " << hi;
            EXPECT_TRUE(mr == 1 || mr == 2 || mr == 5 || mr == 10) << "step " << step;
        }
        EXPECT_EQ(labels.size(), t.size()) << lo << " " << hi;
    }
}

TEST(FormatValue, SignificantDigitsAndExponentBeyondTheThresholds) {
    EXPECT_EQ(format_value(3.14159), "3.142");
    EXPECT_EQ(format_value(12345), "12345");  // integer digits are never dropped
    EXPECT_EQ(format_value(0.00123456), "0.001235");
    EXPECT_EQ(format_value(1234567), "1.235e+06");
    EXPECT_EQ(format_value(2.5e-5), "2.5e-05");
    EXPECT_EQ(format_value(0.5), "0.5");
    EXPECT_EQ(format_value(0), "0");
    EXPECT_EQ(format_value(NAN), "nan");
}

// ---- log ticks ----

TEST(LogTicks, ThreeDecadesGetMajorsAndTwoToNineMinors) {
    auto t = log_ticks(1, 1000, 6);
    expect_values(values_of(t, true), {1, 10, 100, 1000});
    EXPECT_EQ(labels_of(t), (std::vector<std::string>{"1", "10", "100", "1000"}));
    std::vector<double> minors;
    for (double d : {1.0, 10.0, 100.0})
        for (int m = 2; m <= 9; ++m) minors.push_back(m * d);
    expect_values(values_of(t, false), minors);
    for (auto& k : t)
        if (!k.major) EXPECT_EQ(k.label, "");
}

TEST(LogTicks, ManyDecadesAreThinnedToAboutTheTarget) {
    auto t = log_ticks(1e-3, 1e12, 6);  // 16 decades → every 3rd, on multiples of 3
    expect_values(values_of(t, true), {1e-3, 1, 1e3, 1e6, 1e9, 1e12});
    EXPECT_EQ(labels_of(t), (std::vector<std::string>{"0.001", "1", "1000", "1e+06", "1e+09", "1e+12"}));
    EXPECT_EQ(values_of(t, false).size(), 10u);  // the skipped decades, unlabelled; no 2..9 minors
}

TEST(LogTicks, NoDecadeInsideLabelsTheEnds) {
    auto t = log_ticks(2, 8, 6);
    expect_values(values_of(t, true), {2, 8});
    EXPECT_EQ(labels_of(t), (std::vector<std::string>{"2", "8"}));
    expect_values(values_of(t, false), {3, 4, 5, 6, 7});
}

// ---- decimation ----

Series noisy_series(size_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> noise(0, 1);
    Series s;
    for (size_t i = 0; i < n; ++i) s.x.push_back(static_cast<double>(i)), s.y.push_back(noise(rng));
    return s;
}

bool has_point(const Series& s, double x, double y) {
    for (size_t i = 0; i < s.x.size(); ++i)
        if (s.x[i] == x && s.y[i] == y) return true;
    return false;
}

TEST(Decimate, KeepsEveryBucketsExtremesAndTheSpikes) {
    Series s = noisy_series(10000, 1);
    s.y[1234] = 50, s.y[7777] = -60, s.y[4321] = 30;
    const size_t buckets = 100;
    Series d = decimate_minmax(s, 0, 9999, buckets);
    EXPECT_LE(d.x.size(), 2 * buckets + 2);
    EXPECT_TRUE(has_point(d, 1234, 50));
    EXPECT_TRUE(has_point(d, 7777, -60));
    EXPECT_TRUE(has_point(d, 4321, 30));
    for (size_t i = 1; i < d.x.size(); ++i) EXPECT_LT(d.x[i - 1], d.x[i]);
    // Reference: bucket j holds x in [j·w, (j+1)·w), w = 9999 / 100.
    for (size_t j = 0; j < buckets; ++j) {
        double lo = INFINITY, hi = -INFINITY;
        size_t ilo = 0, ihi = 0;
        for (size_t i = 0; i < s.x.size(); ++i) {
            if (std::min<size_t>(static_cast<size_t>(s.x[i] / 99.99), buckets - 1) != j) continue;
            if (s.y[i] < lo) lo = s.y[i], ilo = i;
            if (s.y[i] > hi) hi = s.y[i], ihi = i;
        }
        EXPECT_TRUE(has_point(d, s.x[ilo], lo)) << "bucket " << j;
        EXPECT_TRUE(has_point(d, s.x[ihi], hi)) << "bucket " << j;
    }
}

TEST(Decimate, ZoomUsesOnlyTheVisiblePointsPlusOneNeighbourEachSide) {
    Series s = noisy_series(10000, 2);
    s.y[2500] = 99;
    Series d = decimate_minmax(s, 2000.5, 2999.5, 50);  // visible: x = 2001..2999
    ASSERT_GE(d.x.size(), 3u);
    EXPECT_LE(d.x.size(), 102u);
    EXPECT_EQ(d.x.front(), 2000);
    EXPECT_EQ(d.x.back(), 3000);
    for (double x : d.x) EXPECT_TRUE(x >= 2000 && x <= 3000) << x;
    EXPECT_TRUE(has_point(d, 2500, 99));
}

TEST(Decimate, ShortSeriesIsReturnedUnchanged) {
    Series s = noisy_series(50, 3);
    s.y[10] = NAN;
    Series d = decimate_minmax(s, 0, 49, 100);
    EXPECT_EQ(d.x, s.x);
    ASSERT_EQ(d.y.size(), s.y.size());
    for (size_t i = 0; i < s.y.size(); ++i)
        if (i != 10) EXPECT_EQ(d.y[i], s.y[i]);
    EXPECT_TRUE(std::isnan(d.y[10]));
}

TEST(Decimate, AGapWiderThanABucketStaysAGap) {
    Series s = noisy_series(1000, 4);
    for (size_t i = 400; i < 600; ++i) s.y[i] = NAN;
    Series d = decimate_minmax(s, 0, 999, 10);  // buckets 4 (x 400..499) and 5 hold only NaNs
    size_t nans = 0;
    for (double y : d.y) nans += std::isnan(y);
    EXPECT_GE(nans, 1u);
    EXPECT_LE(d.x.size(), 22u);
}

// ---- smoothing and hover ----

TEST(DebiasedEma, HandComputedThreePoints) {
    // alpha 0.5 on [1, 2, 4]:
    //   t=1: ema = 0.5·0 + 0.5·1 = 0.5;      / (1 − 0.5)   = 1
    //   t=2: ema = 0.5·0.5 + 0.5·2 = 1.25;   / (1 − 0.25)  = 5/3
    //   t=3: ema = 0.5·1.25 + 0.5·4 = 2.625; / (1 − 0.125) = 3
    auto e = debiased_ema({1, 2, 4}, 0.5);
    ASSERT_EQ(e.size(), 3u);
    EXPECT_DOUBLE_EQ(e[0], 1);
    EXPECT_DOUBLE_EQ(e[1], 5.0 / 3.0);
    EXPECT_DOUBLE_EQ(e[2], 3);
}

TEST(DebiasedEma, ConstantStaysConstantAlphaZeroIsIdentityNanIsSkipped) {
    for (double v : debiased_ema(std::vector<double>(200, 3.5), 0.99)) EXPECT_NEAR(v, 3.5, 1e-12);
    const std::vector<double> y = {4, -1, 7.5, 2};
    EXPECT_EQ(debiased_ema(y, 0), y);
    auto e = debiased_ema({1, NAN, 2}, 0.5);  // the NaN leaves the state alone: [1, NaN, 5/3]
    EXPECT_DOUBLE_EQ(e[0], 1);
    EXPECT_TRUE(std::isnan(e[1]));
    EXPECT_DOUBLE_EQ(e[2], 5.0 / 3.0);
}

TEST(NearestIndex, ClosestXWithTiesToTheLeftAndClampedEnds) {
    Series s{{0, 10, 20, 30}, {1, 2, 3, 4}};
    EXPECT_EQ(nearest_index(s, 4), 0u);
    EXPECT_EQ(nearest_index(s, 6), 1u);
    EXPECT_EQ(nearest_index(s, 5), 0u);
    EXPECT_EQ(nearest_index(s, 25), 2u);
    EXPECT_EQ(nearest_index(s, 26), 3u);
    EXPECT_EQ(nearest_index(s, -100), 0u);
    EXPECT_EQ(nearest_index(s, 1e9), 3u);
    EXPECT_EQ(nearest_index(Series{{7}, {1}}, 0), 0u);
}

// ---- layout model ----

std::string temp_dir() {
    std::string t = ::testing::TempDir() + "/tw_ui_logic_XXXXXX";
    EXPECT_NE(::mkdtemp(t.data()), nullptr);
    return t;
}

void write_file(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// The editor draws an algorithm's knobs from the field table: SparseLoCo gets its Top-k and error
// feedback, DeMo its DCT knobs (no DeMo code in the panel), none and ddp nothing. Since the hub
// topology both also offer outer.topology (mesh or hub), in the field table's order.
TEST(LayoutModel, AlgorithmKnobsComeFromTheFieldTable) {
    auto keys = [](const std::string& algo) {
        RunConfig c;
        c.outer.algorithm = algo;
        std::vector<std::string> k;
        for (const FieldInfo* f : algorithm_fields(c)) k.push_back(f->key);
        return k;
    };
    EXPECT_EQ(keys("demo"), (std::vector<std::string>{"outer.inner_steps", "outer.lr", "outer.topology",
                                                      "outer.demo_chunk", "outer.demo_topk", "outer.demo_beta",
                                                      "outer.demo_values", "outer.demo_sign_update", "outer.guard_ratio",
                                                      "outer.round_deadline_s"}));
    EXPECT_EQ(keys("sparseloco"),
              (std::vector<std::string>{"outer.inner_steps", "outer.lr", "outer.topology", "outer.topk_chunk", "outer.topk_k",
                                        "outer.ef_beta", "outer.aggregation", "outer.clip_median",
                                        "outer.guard_ratio", "outer.round_time_s", "outer.round_deadline_s"}));
    EXPECT_TRUE(keys("none").empty());
    EXPECT_TRUE(keys("ddp").empty());
    EXPECT_TRUE(keys("gossip").empty());
    RunConfig c;
    c.outer.algorithm = "demo";
    EXPECT_EQ(algorithm_fields(c)[4]->label, "DCT coefficients per chunk");
}

TEST(LayoutModel, DefaultsAreValid) {
    LayoutModel m;
    EXPECT_TRUE(m.validate());
    EXPECT_TRUE(m.validate(1));
    EXPECT_TRUE(m.errors().empty());
    EXPECT_TRUE(m.general_errors().empty());
    EXPECT_EQ(m.error("outer.inner_steps"), "");
}

TEST(LayoutModel, OutOfRangeFieldSetInTheStructLandsOnItsKey) {
    LayoutModel m;
    m.config().outer.inner_steps = 0;
    EXPECT_FALSE(m.validate());
    EXPECT_EQ(m.error("outer.inner_steps"), "value 0 is out of range [1, 1e+12]");
    EXPECT_EQ(m.errors().size(), 1u);
    m.config().outer.inner_steps = 5;
    EXPECT_TRUE(m.validate());  // errors are recomputed, not accumulated
    EXPECT_EQ(m.error("outer.inner_steps"), "");
}

TEST(LayoutModel, CrossFieldErrorsLandOnTheFirstKeyTheyName) {
    LayoutModel m;
    m.config().model.d_model = 130;  // n_head 4
    EXPECT_FALSE(m.validate());
    EXPECT_EQ(m.error("model.d_model"), "model.d_model 130 is not divisible by model.n_head 4");
    EXPECT_EQ(m.error("model.n_head"), "");
    // With a per-key error too, the cross-field one still shows (parse_config alone would stop).
    m.config().outer.inner_steps = 0;
    EXPECT_FALSE(m.validate());
    EXPECT_NE(m.error("outer.inner_steps"), "");
    EXPECT_EQ(m.error("model.d_model"), "model.d_model 130 is not divisible by model.n_head 4");
}

TEST(LayoutModel, StagesAboveLayersAndPipelinesAreOnClusterStages) {
    LayoutModel m;
    m.config().cluster.stages = 9;
    EXPECT_FALSE(m.validate());
    EXPECT_EQ(m.error("cluster.stages").rfind("cluster.stages 9 exceeds model.n_layer 4", 0), 0u)
        << m.error("cluster.stages");
    m.config().cluster.stages = 2;  // fits the layers, but a pipeline needs an untied head
    EXPECT_FALSE(m.validate());
    EXPECT_NE(m.error("model.tie_embeddings").find("must be false with pipeline replicas"), std::string::npos);
    m.config().model.tie_embeddings = false;
    EXPECT_TRUE(m.validate()) << m.error("cluster.stages");
}

TEST(LayoutModel, TooFewNodesLandsOnClusterNodes) {
    LayoutModel m;
    m.config().outer.algorithm = "diloco";
    m.config().outer.replicas = 4;
    EXPECT_FALSE(m.validate(2));
    EXPECT_EQ(m.error("cluster.nodes"),
              "too few nodes: the layout needs 4 (4 replicas × 1 nodes × 1 stages), the cluster has 2");
    EXPECT_TRUE(m.validate(4));
    EXPECT_TRUE(m.validate());  // unknown count, and threads bring up what the layout needs
    m.config().cluster.nodes = 3;  // `thinwire run` would bring up 3 threads
    EXPECT_FALSE(m.validate());
    EXPECT_NE(m.error("cluster.nodes").find("the cluster has 3"), std::string::npos);
    m.config().cluster.nodes = 0;
    m.config().cluster.mode = "remote";
    m.config().cluster.endpoints = {"tcp://127.0.0.1:5555", "tcp://127.0.0.1:5565"};
    EXPECT_FALSE(m.validate());
    EXPECT_NE(m.error("cluster.nodes").find("the cluster has 2"), std::string::npos);
}

TEST(LayoutModel, LoadingAnUnknownKeyFailsNamingFileAndKeyAndKeepsTheModel) {
    const std::string dir = temp_dir(), path = dir + "/bad.toml";
    write_file(path, "[outer]\ninner_stepz = 3\nreplicas = 2\n");
    LayoutModel m;
    m.config().run.name = "before";
    const std::string before = m.to_toml();
    Status s = m.load_file(path);
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find(path + ": outer.inner_stepz: unknown key"), std::string::npos) << s.message();
    EXPECT_EQ(m.to_toml(), before);
    ASSERT_EQ(m.general_errors().size(), 1u);
    EXPECT_NE(m.general_errors()[0].find("outer.inner_stepz"), std::string::npos);

    write_file(path, "[outer\n");
    EXPECT_FALSE(m.load_file(path));
    EXPECT_EQ(m.to_toml(), before);
    ASSERT_EQ(m.general_errors().size(), 1u);
    EXPECT_EQ(m.general_errors()[0].rfind(path + ":", 0), 0u) << m.general_errors()[0];
    EXPECT_NE(m.load_file(dir + "/missing.toml").message().find("cannot read layout file"), std::string::npos);
    fs::remove_all(dir);
}

TEST(LayoutModel, LoadReplacesTheModel) {
    LayoutModel m;
    ASSERT_TRUE(m.load_toml_text("[outer]\nalgorithm = \"diloco\"\nreplicas = 2\n[model]\npreset = \"small\"\n", "x"));
    EXPECT_EQ(m.config().outer.algorithm, "diloco");
    EXPECT_EQ(m.config().outer.replicas, 2);
    EXPECT_EQ(m.config().model.n_layer, 6);  // the preset's shape
    EXPECT_TRUE(m.errors().empty());
}

TEST(LayoutModel, SaveThenLoadGivesTheSameConfigAndLeavesNoTempFile) {
    LayoutModel m;
    RunConfig& c = m.config();
    c.run.name = "quote \" and ü";
    c.model.d_model = 96, c.model.n_head = 3, c.model.norm_eps = 1e-6, c.model.tie_embeddings = false;
    c.data.genres = {"a", "k"};
    c.train.lr = 0.1, c.train.ckpt_path = "";
    c.outer.algorithm = "diloco", c.outer.replicas = 2, c.outer.lr = 0.7, c.outer.dtype = "bf16";
    c.network.outer_bandwidth_bps = 1.25e8, c.network.outer_latency_s = 0.0123;
    c.cluster.mode = "remote", c.cluster.endpoints = {"tcp://127.0.0.1:5555", "tcp://127.0.0.1:5565"};
    ASSERT_TRUE(m.validate()) << (m.errors().empty() ? "" : m.errors().begin()->second);
    const std::string dir = temp_dir(), path = dir + "/layout.toml";
    write_file(path, "old contents\n");
    ASSERT_TRUE(m.save_file(path));
    LayoutModel back;
    ASSERT_TRUE(back.load_file(path));
    EXPECT_EQ(back.to_toml(), m.to_toml());
    EXPECT_EQ(back.config().run.name, "quote \" and ü");
    std::vector<std::string> files;
    for (auto& e : fs::directory_iterator(dir)) files.push_back(e.path().filename().string());
    EXPECT_EQ(files, std::vector<std::string>{"layout.toml"});
    fs::remove_all(dir);
    Status s = m.save_file(dir + "/gone/layout.toml");
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find(dir + "/gone/layout.toml"), std::string::npos);
}

// Every file in experiments/ loads as `thinwire run` reads it ([variants], [sweep], [report],
// [skippipe], [hdee] included), into as many runs as the CLI makes of it, each one valid.
TEST(LayoutModel, EveryExperimentFileLoadsWithItsRuns) {
    int files = 0;
    for (auto& e : fs::directory_iterator(std::string(TW_SOURCE_DIR) + "/experiments")) {
        if (e.path().extension() != ".toml") continue;
        ++files;
        const std::string path = e.path().string();
        LayoutModel m;
        Status s = m.load_file(path);
        ASSERT_TRUE(s) << s.message();
        auto plan = load_run_plan(path);
        ASSERT_TRUE(plan);
        ASSERT_EQ(m.file_runs().size(), plan->runs.size()) << path;
        for (size_t i = 0; i < m.file_runs().size(); ++i) {
            m.choose_run(i);
            EXPECT_EQ(m.to_toml(), to_toml(plan->runs[i].second)) << path << " run " << i;
            EXPECT_TRUE(m.general_errors().empty()) << path << ": " << m.general_errors().front();
        }
    }
    EXPECT_GE(files, 10);
}

TEST(LayoutModel, AVariantFilePicksEachRunAndSaveAsAsksBeforeReplacingAHandWrittenFile) {
    const std::string dir = temp_dir(), path = dir + "/two.toml";
    write_file(path, "# two variants\n[outer]\nalgorithm = \"diloco\"\nreplicas = 2\n"
                     "[variants]\nfast = [\"outer.inner_steps=5\"]\nslow = [\"outer.inner_steps=50\"]\n");
    LayoutModel m;
    ASSERT_TRUE(m.load_file(path));
    ASSERT_EQ(m.file_runs().size(), 2u);
    EXPECT_EQ(m.file_runs()[0].first, "fast");
    EXPECT_EQ(m.config().outer.inner_steps, 5);
    m.choose_run(1);
    EXPECT_EQ(m.chosen_run(), 1u);
    EXPECT_EQ(m.config().outer.inner_steps, 50);
    m.choose_run(7);  // out of range: nothing changes
    EXPECT_EQ(m.config().outer.inner_steps, 50);
    // The hand-written file is "other"; a new path is "new"; what the editor wrote is its own.
    EXPECT_EQ(LayoutModel::save_target(path), LayoutModel::SaveTarget::kOtherFile);
    EXPECT_EQ(LayoutModel::save_target(dir + "/new.toml"), LayoutModel::SaveTarget::kNew);
    ASSERT_TRUE(m.save_file(dir + "/new.toml"));
    EXPECT_EQ(LayoutModel::save_target(dir + "/new.toml"), LayoutModel::SaveTarget::kEditorFile);
    LayoutModel back;
    ASSERT_TRUE(back.load_file(dir + "/new.toml"));
    EXPECT_EQ(back.config().outer.inner_steps, 50);
    fs::remove_all(dir);
}

TEST(AttachErrors, SplitsARealMultiProblemMessageByKey) {
    auto r = parse_config("[outer]\ninner_steps = 0\nfoo = 1\n[model]\nd_model = 2\n[bogus]\nx = 1\n",
                          "layouts/run.name");  // a file named like a key is not a key
    ASSERT_FALSE(r);
    std::map<std::string, std::string> by_key;
    std::vector<std::string> general;
    attach_errors(r.message(), by_key, general);
    EXPECT_EQ(by_key.size(), 2u);
    EXPECT_EQ(by_key["outer.inner_steps"], "value 0 is out of range [1, 1e+12]");
    EXPECT_EQ(by_key["model.d_model"], "value 2 is out of range [8, 65536]");
    EXPECT_EQ(by_key.count("run.name"), 0u);
    // Unknown keys name no known key; the header line is dropped; toml++ lists sections by name.
    ASSERT_EQ(general.size(), 2u);
    EXPECT_EQ(general[0], "layouts/run.name: bogus.x: unknown key");
    EXPECT_EQ(general[1], "layouts/run.name: outer.foo: unknown key");
}

}  // namespace
}  // namespace tw::ui

namespace tw::ui {
namespace {

// History's Resume button for interrupted and failed runs, disabled while a run is in progress.
TEST(ResumeButton, ShownForInterruptedAndFailedRunsEnabledWhenIdle) {
    for (RunStatus s : {RunStatus::kRunning, RunStatus::kFinished}) {
        EXPECT_FALSE(resume_button(s, false).shown) << to_string(s);
        EXPECT_FALSE(resume_button(s, false).enabled) << to_string(s);
    }
    for (RunStatus s : {RunStatus::kInterrupted, RunStatus::kFailed}) {
        const ResumeButton idle = resume_button(s, false), busy = resume_button(s, true);
        EXPECT_TRUE(idle.shown && idle.enabled) << to_string(s);
        EXPECT_NE(idle.hint.find("--resume"), std::string::npos);
        EXPECT_TRUE(busy.shown) << to_string(s);
        EXPECT_FALSE(busy.enabled) << to_string(s);
        EXPECT_NE(busy.hint.find("in progress"), std::string::npos);
    }
}

}  // namespace
}  // namespace tw::ui
