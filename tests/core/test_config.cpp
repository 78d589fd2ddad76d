// Config parsing: defaults, presets, overrides, and errors that name file, key and reason.
#include <gtest/gtest.h>

#include "core/hash.h"
#include "core/config_io.h"
#include "core/network.h"
#include "core/timeline.h"

namespace tw {
namespace {

TEST(Config, EmptyTextIsTheBuiltInDefault) {
    auto c = parse_config("", "<default>");
    ASSERT_TRUE(c) << c.message();
    EXPECT_EQ(c->model.preset, "tiny");
    EXPECT_EQ(c->model.d_model, 128);
    EXPECT_EQ(c->data.corpus, "brown");
    EXPECT_EQ(c->data.vocab_size, 4096);
}

TEST(Config, DataFormatFieldAndTokenizerAreCheckedAndStored) {
    auto c = parse_config("[data]\ncorpus = \"c.jsonl\"\nformat = \"jsonl\"\ntext_field = \"body\"\n", "d.toml");
    ASSERT_TRUE(c) << c.message();
    EXPECT_EQ(c->data.format, "jsonl");
    EXPECT_EQ(c->data.text_field, "body");
    EXPECT_EQ(c->data.tokenizer, "bpe");
    EXPECT_EQ(c->model.vocab_size, 0);  // from the trained tokenizer
    auto back = parse_config(to_toml(*c), "stored");
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(back->data.format, "jsonl");
    EXPECT_EQ(back->data.text_field, "body");
    EXPECT_EQ(to_toml(*back), to_toml(*c));
    auto defaults = parse_config("", "<default>");
    ASSERT_TRUE(defaults);
    EXPECT_EQ(defaults->data.format, "auto");
    EXPECT_EQ(defaults->data.text_field, "text");

    auto bad = parse_config("[data]\nformat = \"csv\"\ntokenizer = \"gpt3\"\n", "d.toml");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.message().find("d.toml: data.format:"), std::string::npos) << bad.message();
    EXPECT_NE(bad.message().find("d.toml: data.tokenizer:"), std::string::npos) << bad.message();
    bad = parse_config("[data]\ntext_field = \"\"\ncorpus = \"c.txt\"\n", "d.toml");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.message().find("data.text_field is empty"), std::string::npos) << bad.message();
    bad = parse_config("[data]\nformat = \"jsonl\"\n", "d.toml");  // the Brown Corpus is its own format
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.message().find("data.format \"jsonl\" does not apply to the Brown Corpus"), std::string::npos);
}

TEST(Config, Gpt2TokenizerFixesTheVocabularyAndThePaperPresetsUseIt) {
    auto c = parse_config("[data]\ntokenizer = \"gpt2\"\n", "g.toml");
    ASSERT_TRUE(c) << c.message();
    EXPECT_EQ(c->model.vocab_size, 50257);
    auto same = parse_config("[data]\ntokenizer = \"gpt2\"\n[model]\nvocab_size = 50257\n", "g.toml");
    EXPECT_TRUE(same) << same.message();
    auto conflict = parse_config("[data]\ntokenizer = \"gpt2\"\n[model]\nvocab_size = 4096\n", "g.toml");
    ASSERT_FALSE(conflict);
    EXPECT_NE(conflict.message().find("g.toml: model.vocab_size 4096 conflicts with data.tokenizer \"gpt2\", whose "
                                      "vocabulary is 50257 ids"),
              std::string::npos)
        << conflict.message();
    for (const char* preset : {"paper178m", "paper1b"}) {
        auto p = parse_config(std::string("[model]\npreset = \"") + preset + "\"\n", "p.toml");
        ASSERT_TRUE(p) << p.message();
        EXPECT_EQ(p->data.tokenizer, "gpt2") << preset;
        EXPECT_EQ(p->model.vocab_size, 50257) << preset;
        auto stored = parse_config(to_toml(*p), "stored");
        ASSERT_TRUE(stored) << stored.message();
        EXPECT_EQ(stored->data.tokenizer, "gpt2");
    }
    // An explicit tokenizer wins over the preset's, wherever it is written.
    auto bpe = parse_config("[data]\ntokenizer = \"bpe\"\n[model]\npreset = \"paper178m\"\n", "p.toml");
    ASSERT_TRUE(bpe) << bpe.message();
    EXPECT_EQ(bpe->data.tokenizer, "bpe");
    EXPECT_EQ(bpe->model.vocab_size, 0);
    auto small = parse_config("[model]\npreset = \"small\"\n", "p.toml");
    ASSERT_TRUE(small);
    EXPECT_EQ(small->data.tokenizer, "bpe");
}

TEST(Config, PresetFillsShapeAndExplicitKeysOverrideIt) {
    auto c = parse_config("[model]\nd_model = 64\npreset = \"small\"\n", "a.toml");
    ASSERT_TRUE(c) << c.message();
    EXPECT_EQ(c->model.n_layer, 6);   // from the preset
    EXPECT_EQ(c->model.d_model, 64);  // explicit key wins even when written before the preset
}

TEST(Config, DottedOverridesApplyAfterTheFile) {
    auto c = parse_config("[train]\nsteps = 10\n", "a.toml", {"train.steps=20", "model.d_model=256", "run.name=abc",
                                                              "data.genres=[\"a\",\"b\"]"});
    ASSERT_TRUE(c) << c.message();
    EXPECT_EQ(c->train.steps, 20);
    EXPECT_EQ(c->model.d_model, 256);
    EXPECT_EQ(c->run.name, "abc");  // a bare word is a string
    EXPECT_EQ(c->data.genres, (std::vector<std::string>{"a", "b"}));
}

TEST(Config, AllProblemsAreReportedAtOnceNamingFileAndKey) {
    auto c = parse_config("[model]\nd_modle = 3\nn_layer = \"four\"\n[train]\nlr = -1.0\n", "exp.toml");
    ASSERT_FALSE(c);
    const std::string& m = c.message();
    EXPECT_NE(m.find("3 problems"), std::string::npos) << m;
    EXPECT_NE(m.find("exp.toml: model.d_modle: unknown key"), std::string::npos) << m;
    EXPECT_NE(m.find("exp.toml: model.n_layer: expected an integer"), std::string::npos) << m;
    EXPECT_NE(m.find("exp.toml: train.lr: value -1 is out of range"), std::string::npos) << m;
}

TEST(Config, OverrideErrorsNameTheKey) {
    auto c = parse_config("", "<default>", {"model.n_head=0", "nonsense"});
    ASSERT_FALSE(c);
    EXPECT_NE(c.message().find("--set: model.n_head: value 0 is out of range"), std::string::npos) << c.message();
    EXPECT_NE(c.message().find("--set nonsense: expected key=value"), std::string::npos) << c.message();
}

TEST(Config, UnknownPresetAndChoiceAreErrors) {
    auto c = parse_config("[model]\npreset = \"huge\"\n", "p.toml");
    ASSERT_FALSE(c);
    EXPECT_NE(c.message().find("p.toml: model.preset: unknown value \"huge\""), std::string::npos) << c.message();
}

TEST(Config, CrossFieldValidationExplainsTheConflict) {
    auto c = parse_config("[model]\nd_model = 100\nn_head = 3\n", "x.toml");
    ASSERT_FALSE(c);
    EXPECT_NE(c.message().find("model.d_model 100 is not divisible by model.n_head 3"), std::string::npos)
        << c.message();
    auto g = parse_config("[data]\ngenres = [\"z\"]\n", "x.toml");
    ASSERT_FALSE(g);
    EXPECT_NE(g.message().find("\"z\" is not a Brown genre"), std::string::npos) << g.message();
}

TEST(Config, TomlSyntaxErrorsGiveLineAndColumn) {
    auto c = parse_config("[model\n", "bad.toml");
    ASSERT_FALSE(c);
    EXPECT_EQ(c.message().rfind("bad.toml:1:", 0), 0u) << c.message();
}

TEST(Config, ResolvedTomlRoundTrips) {
    auto c = parse_config("[model]\npreset = \"small\"\n[data]\ngenres = [\"k\"]\n", "a.toml", {"train.lr=0.01"});
    ASSERT_TRUE(c) << c.message();
    const std::string text = to_toml(*c);
    auto back = parse_config(text, "resolved");
    ASSERT_TRUE(back) << back.message() << "\n" << text;
    EXPECT_EQ(to_toml(*back), text);
    EXPECT_EQ(config_hash(*back), config_hash(*c));
    EXPECT_NE(config_hash(*c), config_hash(parse_config("", "d").value()));
}

// The launch limits (coordinator/launch_limits.h) decide whether a run starts, not what it computes:
// at their defaults they stay out of the resolved text, so every earlier run keeps its hash; set,
// they are stored and read back; a wrong value names the key.
TEST(Config, LaunchLimitKeysAreStoredOnlyWhenSetAndCheckTheirValues) {
    const RunConfig d = parse_config("", "d").value();
    EXPECT_EQ(d.cluster.max_local_processes, 64);
    EXPECT_EQ(d.cluster.memory_check, "refuse");
    EXPECT_EQ(to_toml(d).find("max_local_processes"), std::string::npos);
    EXPECT_EQ(to_toml(d).find("memory_check"), std::string::npos);
    auto c = parse_config("", "d", {"cluster.max_local_processes=8", "cluster.memory_check=warn"});
    ASSERT_TRUE(c) << c.message();
    const std::string text = to_toml(*c);
    EXPECT_NE(text.find("max_local_processes = 8"), std::string::npos) << text;
    EXPECT_NE(text.find("memory_check = 'warn'"), std::string::npos) << text;
    EXPECT_EQ(parse_config(text, "resolved").value().cluster.memory_check, "warn");
    EXPECT_NE(config_hash(*c), config_hash(d));
    auto bad = parse_config("", "d", {"cluster.memory_check=maybe", "cluster.max_local_processes=0"});
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.message().find("cluster.memory_check: unknown value \"maybe\""), std::string::npos) << bad.message();
    EXPECT_NE(bad.message().find("cluster.max_local_processes: value 0 is out of range"), std::string::npos)
        << bad.message();
}

TEST(Network, TransferTimeIsLatencyPlusBitsOverBandwidth) {
    auto home = network_profile("home-20m");
    ASSERT_TRUE(home) << home.message();
    EXPECT_DOUBLE_EQ(transfer_s(home->outer, 132736), 0.040 + 8.0 * 132736 / 20e6);
    EXPECT_DOUBLE_EQ(transfer_s(network_profile("datacenter")->outer, 0), 10e-6);
    EXPECT_EQ(network_profile("dialup").message(),
              "unknown network profile \"dialup\" (expected datacenter, wan-1g, wan-100m or home-20m)");
}

TEST(Config, MissingFileIsAClearError) {
    auto c = load_config("/nonexistent/run.toml");
    ASSERT_FALSE(c);
    EXPECT_EQ(c.message(), "cannot read config file /nonexistent/run.toml");
}

}  // namespace
}  // namespace tw

// core/hash.h's values seed every weight and are stored: pinned against values computed outside
// the project (Python), and shown not to be FNV-1a's (whose offset basis is 14695981039346656037).
TEST(SeededHash, KeepsItsValuesAndIsNotFnv1a) {
    EXPECT_EQ(tw::seeded_hash64(""), 1469598103934665603ull);
    EXPECT_EQ(tw::seeded_hash64("thinwire"), 0x5faeb236063f9061ull);
    EXPECT_NE(tw::seeded_hash64("thinwire"), 0x4296c6b9143afb8full);  // FNV-1a 64 of "thinwire"
    EXPECT_EQ(tw::seeded_hash64("wire", tw::seeded_hash64("thin")), tw::seeded_hash64("thinwire"));  // chains
}

// Which link a run's rounds use: the one rule every clock (live, re-timed, what-if) follows.
TEST(RoundLink, DdpInsideOneReplicaIsIntraEverythingElseCrossesReplicas) {
    tw::RunConfig c;
    c.outer.algorithm = "ddp";
    c.outer.replicas = 1;
    EXPECT_EQ(tw::round_link_class(c), tw::LinkClass::kIntraReplica);
    c.outer.replicas = 4;
    EXPECT_EQ(tw::round_link_class(c), tw::LinkClass::kOuterSync);
    c.outer.algorithm = "diloco";
    c.outer.replicas = 1;
    EXPECT_EQ(tw::round_link_class(c), tw::LinkClass::kOuterSync);
    auto p = tw::network_profile("home-20m").value();
    EXPECT_EQ(tw::link_of(p, tw::LinkClass::kIntraReplica).bandwidth_bps, p.intra.bandwidth_bps);
    EXPECT_EQ(tw::link_of(p, tw::LinkClass::kInterStage).latency_s, p.stage.latency_s);
    EXPECT_EQ(tw::link_of(p, tw::LinkClass::kOuterSync).bandwidth_bps, 20e6);
}

namespace tw {
namespace {

// One checkpoint setting for every run kind; the kinds that cannot yet are named.
TEST(Config, CheckpointSettingsAreCoherentAcrossRunKinds) {
    auto problem = [](const std::vector<std::string>& sets) {
        auto c = parse_config("", "run.toml", sets);
        return c ? std::string() : c.message();
    };
    EXPECT_EQ(problem({"train.ckpt_every=50"}), "");
    EXPECT_EQ(problem({"outer.algorithm=ddp", "outer.replicas=2", "train.ckpt_every=50"}), "");
    EXPECT_EQ(problem({"outer.algorithm=diloco", "outer.replicas=2", "train.ckpt_every=50"}), "");
    EXPECT_EQ(problem({"train.ckpt_path=run.ckpt", "train.ckpt_every=50"}), "");  // one node: both
    // Another run kind's ckpt_path is refused, naming the key that does checkpoint it.
    const std::string p = problem({"outer.algorithm=ddp", "outer.replicas=2", "train.ckpt_path=run.ckpt"});
    EXPECT_NE(p.find("train.ckpt_path: a one-node run's file"), std::string::npos) << p;
    EXPECT_NE(p.find("train.ckpt_every"), std::string::npos) << p;
    // Pipeline replicas checkpoint too, alone or beside full replicas.
    EXPECT_EQ(problem({"outer.algorithm=sparseloco", "outer.replicas=2", "cluster.stages=2", "pipeline.replicas=1",
                       "model.tie_embeddings=false", "train.ckpt_every=50"}),
              "");
    EXPECT_EQ(problem({"cluster.stages=2", "model.tie_embeddings=false", "train.ckpt_every=50"}), "");
    EXPECT_EQ(problem({"skippipe.stages=2", "skippipe.replicas=2", "skippipe.path_stages=2", "train.ckpt_every=50"}), "");
    EXPECT_NE(problem({"skippipe.stages=2", "skippipe.replicas=2", "skippipe.path_stages=2", "train.ckpt_path=run.ckpt"})
                  .find("train.ckpt_path: checkpoints of SkipPipe runs are not supported"),
              std::string::npos);
    // Every run kind of an outer algorithm checkpoints with train.ckpt_every: time-budgeted rounds
    // (resumed after a common round), a fault schedule (which plays on after a resume) and spares
    // (resumed from before any spare took a place).
    EXPECT_EQ(problem({"outer.algorithm=diloco", "outer.replicas=2", "compute.model=flops", "outer.round_time_s=1",
                       "train.ckpt_every=50"}),
              "");
    EXPECT_EQ(problem({"outer.algorithm=diloco", "outer.replicas=2", "faults.events=[\"kill 1 at 10 rejoin 20\"]",
                       "train.ckpt_every=50"}),
              "");
    EXPECT_EQ(problem({"outer.algorithm=diloco", "outer.replicas=2", "cluster.spares=1", "train.ckpt_every=50"}), "");
}

}  // namespace
}  // namespace tw
