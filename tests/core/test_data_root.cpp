// Data root confinement (core/data_root.h): what a configure may name, and what it may not.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <vector>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/data_root.h"

namespace tw {
namespace {

namespace fs = std::filesystem;

// A scratch folder holding `root/` (the data root) and `outside/` (a secret beside it).
class DataRoot : public ::testing::Test {
protected:
    void SetUp() override {
        static int n = 0;
        base_ = fs::temp_directory_path() / ("tw-data-root-" + std::to_string(getpid()) + "-" + std::to_string(n++));
        fs::create_directories(base_ / "droot" / "sub");
        fs::create_directories(base_ / "outside");
        std::ofstream(base_ / "outside" / "secret") << "root:x:0:0\n";
        std::ofstream(base_ / "droot" / "corpus.txt") << "text\n";
        root_ = fs::canonical(base_ / "droot").string();
    }
    void TearDown() override { fs::remove_all(base_); }

    // confine_paths on a config whose data.corpus is `corpus`; the error text, or "" when accepted.
    std::string corpus_error(const std::string& corpus, RunConfig* out = nullptr) {
        RunConfig c;
        c.data.corpus = corpus;
        c.data.cache_dir = "cache";
        Status s = confine_paths(c, root_);
        if (out) *out = c;
        return s ? "" : s.message();
    }

    fs::path base_;
    std::string root_;
};

TEST_F(DataRoot, RelativePathsResolveUnderTheRoot) {
    RunConfig c;
    c.data.corpus = "corpus.txt";
    c.data.cache_dir = ".cache/thinwire";  // missing: the engine creates it, under the root
    c.data.train_shard = "sub/train.bin";
    c.data.val_shard = "./sub/val.bin";
    c.train.ckpt_path = "ckpt/run.ckpt";
    ASSERT_TRUE(confine_paths(c, root_)) << "relative paths refused";
    EXPECT_EQ(c.data.corpus, root_ + "/corpus.txt");
    EXPECT_EQ(c.data.cache_dir, root_ + "/.cache/thinwire");
    EXPECT_EQ(c.data.train_shard, root_ + "/sub/train.bin");
    EXPECT_EQ(c.data.val_shard, root_ + "/sub/val.bin");
    EXPECT_EQ(c.train.ckpt_path, root_ + "/ckpt/run.ckpt");
}

TEST_F(DataRoot, TheBrownKeywordAndUnsetPathsAreNotPaths) {
    RunConfig c;  // defaults: corpus "brown", cache "." (the root itself), no shards, no checkpoint
    ASSERT_TRUE(confine_paths(c, root_));
    EXPECT_EQ(c.data.corpus, "brown");
    EXPECT_EQ(c.data.cache_dir, root_);
    EXPECT_EQ(c.data.train_shard, "");
    EXPECT_EQ(c.train.ckpt_path, "");
    RunConfig d;
    d.data.corpus = "./brown";  // spelled as a path, it is one: a missing file under the root
    ASSERT_TRUE(confine_paths(d, root_));
    EXPECT_EQ(d.data.corpus, root_ + "/brown");
}

TEST_F(DataRoot, AbsolutePathsAreRefusedNamingKeyAndPath) {
    EXPECT_EQ(corpus_error("/etc/passwd"),
              "data.corpus = \"/etc/passwd\": an absolute path; paths are relative to the node's data root");
    // Even one inside the root: a node's callers do not know (and need not know) where it is.
    EXPECT_NE(corpus_error(root_ + "/corpus.txt").find("an absolute path"), std::string::npos);
    struct Case {
        const char* key;
        void (*set)(RunConfig&);
    };
    const Case cases[] = {
        {"data.cache_dir", [](RunConfig& c) { c.data.cache_dir = "/tmp/x"; }},
        {"data.train_shard", [](RunConfig& c) { c.data.train_shard = "/tmp/x"; }},
        {"data.val_shard", [](RunConfig& c) { c.data.val_shard = "/tmp/x"; }},
        {"train.ckpt_path", [](RunConfig& c) { c.train.ckpt_path = "/tmp/x"; }},
    };
    for (const Case& k : cases) {
        RunConfig c;
        k.set(c);
        Status s = confine_paths(c, root_);
        ASSERT_FALSE(s) << k.key << " accepted /tmp/x";
        EXPECT_EQ(s.message().rfind(std::string(k.key) + " = \"/tmp/x\": an absolute path", 0), 0u) << s.message();
    }
}

TEST_F(DataRoot, DotDotThatLeavesTheRootIsRefused) {
    EXPECT_EQ(corpus_error("../../etc/passwd"),
              "data.corpus = \"../../etc/passwd\": leaves the data root (through \"..\" or a symbolic link)");
    EXPECT_NE(corpus_error("../outside/secret").find("leaves the data root"), std::string::npos);
    EXPECT_NE(corpus_error("sub/../../outside/secret").find("leaves the data root"), std::string::npos);
    EXPECT_NE(corpus_error("missing/../../droot/corpus.txt").find("leaves the data root"), std::string::npos)
        << "a path that steps outside and back in is refused too";
    RunConfig c;
    c.data.cache_dir = "..";
    EXPECT_NE(confine_paths(c, root_).message().find("data.cache_dir = \"..\": leaves the data root"), std::string::npos);
}

TEST_F(DataRoot, DotDotThatStaysInsideIsResolved) {
    RunConfig c;
    EXPECT_EQ(corpus_error("sub/../corpus.txt", &c), "");
    EXPECT_EQ(c.data.corpus, root_ + "/corpus.txt");
    EXPECT_EQ(corpus_error("a/../b", &c), "");
    EXPECT_EQ(c.data.corpus, root_ + "/b");
    EXPECT_EQ(corpus_error(".", &c), "");  // the whole root as a corpus folder is inside it
    EXPECT_EQ(c.data.corpus, root_);
}

TEST_F(DataRoot, SymbolicLinksOutOfTheRootAreRefused) {
    fs::create_directory_symlink(base_ / "outside", base_ / "droot" / "out");
    fs::create_symlink(base_ / "outside" / "secret", base_ / "droot" / "secret-link");
    fs::create_symlink("../../outside", base_ / "droot" / "sub" / "rel-out");  // relative target
    for (const char* p : {"out/secret", "secret-link", "sub/rel-out/secret", "out", "out/new-file"})
        EXPECT_EQ(corpus_error(p), std::string("data.corpus = \"") + p +
                                       "\": leaves the data root (through \"..\" or a symbolic link)")
            << p;
    // The link's target is not revealed to the caller.
    EXPECT_EQ(corpus_error("out/secret").find(base_.string()), std::string::npos);
    // As a cache or checkpoint, a link out is refused too: nothing would be written outside.
    RunConfig c;
    c.data.cache_dir = "out";
    EXPECT_NE(confine_paths(c, root_).message().find("data.cache_dir = \"out\": leaves the data root"),
              std::string::npos);
    RunConfig k;
    k.train.ckpt_path = "sub/rel-out/run.ckpt";
    EXPECT_NE(confine_paths(k, root_).message().find("train.ckpt_path"), std::string::npos);
    // A link that leads back through "..": "link/.." is the link target's parent, not "sub".
    fs::create_directory_symlink(base_ / "outside", base_ / "droot" / "sub" / "o2");
    EXPECT_NE(corpus_error("sub/o2/../outside/secret").find("leaves the data root"), std::string::npos);
    EXPECT_NE(corpus_error("missing/../out/secret").find("leaves the data root"), std::string::npos);
}

TEST_F(DataRoot, LinksInsideTheRootAreFollowedAndDanglingOnesRefused) {
    fs::create_symlink("corpus.txt", base_ / "droot" / "sub" / "dummy");  // dangling: sub/corpus.txt
    fs::create_symlink("../corpus.txt", base_ / "droot" / "sub" / "c");
    RunConfig c;
    EXPECT_EQ(corpus_error("sub/c", &c), "");
    EXPECT_EQ(c.data.corpus, root_ + "/corpus.txt") << "rewritten to the target the check saw";
    // A dangling link could be pointed anywhere after the check.
    EXPECT_NE(corpus_error("sub/dummy").find("data.corpus = \"sub/dummy\": holds a symbolic link that leads nowhere"),
              std::string::npos)
        << corpus_error("sub/dummy");
    fs::create_symlink(base_ / "nowhere", base_ / "droot" / "dangling-out");
    RunConfig k;
    k.train.ckpt_path = "dangling-out";
    EXPECT_NE(confine_paths(k, root_).message().find("train.ckpt_path = \"dangling-out\""), std::string::npos);
}

TEST_F(DataRoot, EmptyCacheDirIsRefused) {
    RunConfig c;
    c.data.cache_dir = "";  // the engine would write under "/data/..."
    Status s = confine_paths(c, root_);
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("data.cache_dir = \"\": an empty path"), std::string::npos) << s.message();
}

TEST_F(DataRoot, RootPrefixIsComparedByComponents) {
    fs::create_directories(base_ / "rootother");
    std::ofstream(base_ / "rootother" / "f") << "x";
    fs::create_symlink(base_ / "rootother" / "f", base_ / "droot" / "f");  // "<root>other/f" shares the root's text prefix
    EXPECT_NE(corpus_error("f").find("leaves the data root"), std::string::npos);
}

TEST_F(DataRoot, CoordinatorRewritesAbsolutePathsUnderItsRootToRelativeOnes) {
    RunConfig c;
    c.data.corpus = root_ + "/corpus.txt";
    c.data.cache_dir = root_ + "/sub/../cache";
    c.train.ckpt_path = "ckpt/run.ckpt";  // relative: kept as written
    ASSERT_TRUE(relative_to_root(c, root_));
    EXPECT_EQ(c.data.corpus, "corpus.txt");
    EXPECT_EQ(c.data.cache_dir, "cache");
    EXPECT_EQ(c.train.ckpt_path, "ckpt/run.ckpt");
    RunConfig top;
    top.data.cache_dir = root_;
    ASSERT_TRUE(relative_to_root(top, root_));
    EXPECT_EQ(top.data.cache_dir, ".");
    RunConfig def;  // today's layouts: keyword corpus, relative cache, unchanged
    ASSERT_TRUE(relative_to_root(def, root_));
    EXPECT_EQ(def.data.corpus, "brown");
    EXPECT_EQ(def.data.cache_dir, ".");
}

// The default root: THINWIRE_DATA_ROOT, else $XDG_CACHE_HOME/thinwire (absolute only, as the XDG
// rules say), else $HOME/.cache/thinwire; never the working directory.
TEST(DefaultDataRoot, FollowsTheEnvironmentInOrder) {
    struct Saved {
        const char* name;
        std::optional<std::string> value;
    };
    std::vector<Saved> saved;
    for (const char* n : {"THINWIRE_DATA_ROOT", "XDG_CACHE_HOME", "HOME"}) {
        const char* v = std::getenv(n);
        saved.push_back({n, v ? std::optional<std::string>(v) : std::nullopt});
    }
    setenv("HOME", "/home/ada", 1);
    unsetenv("THINWIRE_DATA_ROOT");
    unsetenv("XDG_CACHE_HOME");
    EXPECT_EQ(default_data_root().value(), "/home/ada/.cache/thinwire");
    setenv("XDG_CACHE_HOME", "relative/cache", 1);  // not absolute: ignored
    EXPECT_EQ(default_data_root().value(), "/home/ada/.cache/thinwire");
    setenv("XDG_CACHE_HOME", "/var/cache/ada", 1);
    EXPECT_EQ(default_data_root().value(), "/var/cache/ada/thinwire");
    setenv("THINWIRE_DATA_ROOT", "/srv/tw", 1);
    EXPECT_EQ(default_data_root().value(), "/srv/tw");
    for (auto& s : saved)
        if (s.value) setenv(s.name, s.value->c_str(), 1);
        else unsetenv(s.name);
}

TEST_F(DataRoot, CoordinatorRefusesPathsOutsideItsRootNamingKeyPathAndRoot) {
    RunConfig c;
    c.data.corpus = (base_ / "outside" / "secret").string();
    Status s = relative_to_root(c, root_);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.message(), "data.corpus = \"" + c.data.corpus + "\": outside the data root (the data root is " + root_ +
                               "; thinwire run --data-root DIR sets it)");
    RunConfig r;
    r.data.val_shard = "../outside/secret";
    s = relative_to_root(r, root_);
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("data.val_shard = \"../outside/secret\": leaves the data root"), std::string::npos);
    EXPECT_NE(s.message().find(root_), std::string::npos) << s.message();
    fs::create_directory_symlink(base_ / "outside", base_ / "droot" / "out");
    RunConfig l;
    l.data.corpus = root_ + "/out/secret";  // under the root as written, outside once the link is followed
    EXPECT_FALSE(relative_to_root(l, root_));
}

TEST_F(DataRoot, NodeRootIsCreatedForTheOwnerOnly) {
    auto r = resolve_node_data_root((base_ / "fresh" / "droot").string());
    ASSERT_TRUE(r) << r.message();
    EXPECT_EQ(*r, fs::canonical(base_ / "fresh" / "droot").string());
    EXPECT_EQ(fs::status(*r).permissions() & fs::perms::all, fs::perms::owner_all);
    std::ofstream(base_ / "file") << "x";
    EXPECT_FALSE(resolve_node_data_root((base_ / "file").string()));
}

}  // namespace
}  // namespace tw
