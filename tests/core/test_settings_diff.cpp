// Tests of core/settings_diff.h: the settings `runs compare`, `report` and History put side by
// side — each method's defining knobs always, what differs after, nothing a run's algorithm does
// not read — and stored configs read back with the shortest float text.
#include <gtest/gtest.h>

#include "core/config_io.h"
#include "core/settings_diff.h"

namespace tw {
namespace {

std::map<std::string, std::string> kv(const std::vector<std::string>& sets) {
    auto c = parse_config("", "test", sets);
    EXPECT_TRUE(c) << c.message();
    return c ? config_key_values(to_toml(*c)) : std::map<std::string, std::string>{};
}

TEST(SettingsDiff, DefiningKnobsShowEvenWhenEqualAndDdpHasNoOuterLearningRate) {
    const auto ddp = kv({"outer.algorithm=ddp", "outer.replicas=4"});
    const auto diloco = kv({"outer.algorithm=diloco", "outer.replicas=4", "outer.lr=0.6"});
    const SettingsDiff d = settings_that_differ({ddp, diloco});
    // outer.algorithm, then DiLoCo's knobs (H, η, μ, dtype) whether or not they differ; nothing else
    // differs between the two configs.
    EXPECT_EQ(d.keys, (std::vector<std::string>{"outer.algorithm", "outer.inner_steps", "outer.lr", "outer.momentum",
                                                "outer.dtype"}));
    EXPECT_EQ(d.cells[0], (std::vector<std::string>{"ddp", "diloco"}));
    EXPECT_EQ(d.cells[2], (std::vector<std::string>{"n/a", "0.6"}));  // DDP has no outer learning rate
    // Two DDP runs: no outer key of any method, whatever they hold.
    const auto ddp2 = kv({"outer.algorithm=ddp", "outer.replicas=4", "outer.lr=0.3"});
    const SettingsDiff dd = settings_that_differ({ddp, ddp2});
    EXPECT_EQ(dd.keys, std::vector<std::string>{"outer.algorithm"});
}

TEST(SettingsDiff, EachMethodsOwnKnobsAndThenWhatDiffers) {
    const auto sd = kv({"outer.algorithm=streaming_diloco", "outer.inner_steps=20", "outer.fragments=4",
                        "outer.dtype=fp4", "train.steps=40"});
    const auto sp = kv({"outer.algorithm=sparseloco", "outer.topk_k=64", "outer.topk_chunk=32", "train.steps=40"});
    const auto no = kv({"outer.algorithm=noloco", "outer.replicas=4", "outer.group_size=2", "train.steps=80"});
    const SettingsDiff d = settings_that_differ({sd, sp, no});
    const std::vector<std::string> want{"outer.algorithm", "outer.inner_steps", "outer.lr", "outer.dtype",
                                        "outer.fragments", "outer.overlap_steps", "outer.topk_k", "outer.topk_chunk",
                                        "outer.group_size"};
    ASSERT_GE(d.keys.size(), want.size());
    EXPECT_EQ(std::vector<std::string>(d.keys.begin(), d.keys.begin() + static_cast<long>(want.size())), want);
    auto row = [&](const std::string& k) {
        for (size_t i = 0; i < d.keys.size(); ++i)
            if (d.keys[i] == k) return d.cells[i];
        return std::vector<std::string>{};
    };
    EXPECT_EQ(row("outer.dtype"), (std::vector<std::string>{"fp4", "n/a", "n/a"}));
    EXPECT_EQ(row("outer.fragments"), (std::vector<std::string>{"4", "n/a", "n/a"}));
    EXPECT_EQ(row("outer.topk_k"), (std::vector<std::string>{"n/a", "64", "n/a"}));
    EXPECT_EQ(row("outer.topk_chunk"), (std::vector<std::string>{"n/a", "32", "n/a"}));
    EXPECT_EQ(row("outer.group_size"), (std::vector<std::string>{"n/a", "n/a", "2"}));
    EXPECT_EQ(row("train.steps"), (std::vector<std::string>{"40", "40", "80"}));  // differs: listed after
    EXPECT_TRUE(row("run.name").empty());
    EXPECT_TRUE(row("train.lr").empty());  // equal everywhere, defines no method
}

TEST(SettingsDiff, StoredConfigsReadBackWithTheShortestFloat) {
    const RunConfig c = parse_config("", "test", {"outer.algorithm=diloco", "outer.lr=0.6", "model.norm_eps=1e-5"}).value();
    const std::string text = to_toml(c);
    // The writer: 0.6 as "0.6" (not 0.59999999999999998), an integral float keeps its ".0".
    EXPECT_NE(text.find("\nlr = 0.6\n"), std::string::npos) << text;
    EXPECT_NE(text.find("norm_eps = 1e-05"), std::string::npos) << text;
    EXPECT_EQ(text.find("0.59999999999999998"), std::string::npos);
    const RunConfig back = parse_config(text, "written").value();
    EXPECT_EQ(back.outer.lr, 0.6);
    EXPECT_EQ(back.model.norm_eps, 1e-5);
    EXPECT_EQ(to_toml(back), text);
    RunConfig whole = c;
    whole.outer.lr = 2;
    EXPECT_NE(to_toml(whole).find("\nlr = 2.0\n"), std::string::npos);
    // A config stored by a writer that printed 17 digits reads back as the shortest form.
    std::string old = text;
    old.replace(old.find("\nlr = 0.6\n"), 10, "\nlr = 0.59999999999999998\n");
    EXPECT_EQ(stored_key_values(old).at("outer.lr"), "0.6");
    EXPECT_EQ(config_key_values(old).at("outer.lr"), "0.59999999999999998");
}

}  // namespace
}  // namespace tw
