// Tests of core/output_file.h: an existing file is refused or replaced as asked, a failed write
// leaves the target exactly as it was, with no temporary file behind, and the run store and the
// files SQLite keeps for it are never a target, however they are spelt.
#include <gtest/gtest.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/output_file.h"

namespace tw {
namespace {

std::string read_all(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// A directory of its own per test, so leftover temporary files can be counted.
std::string fresh_dir(const std::string& tag) {
    std::string d = testing::TempDir() + "tw_outfile_" + tag + "_" + std::to_string(getpid());
    std::system(("rm -rf '" + d + "' && mkdir -p '" + d + "'").c_str());
    return d;
}

int files_in(const std::string& dir) {
    int n = 0;
    DIR* d = opendir(dir.c_str());
    while (dirent* e = readdir(d))
        if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") ++n;
    closedir(d);
    return n;
}

Status text(std::ostream& out, const std::string& s) {
    out << s;
    return Status::ok();
}

TEST(OutputFile, WritesANewFileAndRefusesToReplaceIt) {
    const std::string dir = fresh_dir("new"), p = dir + "/out.csv";
    ASSERT_TRUE(write_output_file(p, Overwrite::kRefuse, "", [](std::ostream& o) { return text(o, "a,b\n"); }));
    EXPECT_EQ(read_all(p), "a,b\n");
    Status again = write_output_file(p, Overwrite::kRefuse, "", [](std::ostream& o) { return text(o, "new"); });
    ASSERT_FALSE(again);
    EXPECT_NE(again.message().find("exists; --force replaces it"), std::string::npos) << again.message();
    EXPECT_EQ(read_all(p), "a,b\n");
    ASSERT_TRUE(write_output_file(p, Overwrite::kReplace, "", [](std::ostream& o) { return text(o, "new"); }));
    EXPECT_EQ(read_all(p), "new");
    EXPECT_EQ(files_in(dir), 1) << "a temporary file was left behind";
}

TEST(OutputFile, AFailedWriteLeavesTheTargetAsItWas) {
    const std::string dir = fresh_dir("fail"), p = dir + "/keep.csv";
    std::ofstream(p) << "keep me";
    Status st = write_output_file(p, Overwrite::kReplace, "", [](std::ostream& o) {
        o << "half of an export";
        return Status::error("no run with id 999");
    });
    ASSERT_FALSE(st);
    EXPECT_EQ(st.message(), "no run with id 999");
    EXPECT_EQ(read_all(p), "keep me");
    EXPECT_EQ(files_in(dir), 1) << "a temporary file was left behind";
}

TEST(OutputFile, ADirectoryOrAMissingFolderIsAnError) {
    const std::string dir = fresh_dir("dir");
    EXPECT_FALSE(write_output_file(dir, Overwrite::kReplace, "", [](std::ostream& o) { return text(o, "x"); }));
    Status st = write_output_file(dir + "/no/such/folder.csv", Overwrite::kRefuse, "",
                                  [](std::ostream& o) { return text(o, "x"); });
    ASSERT_FALSE(st);
    EXPECT_NE(st.message().find("cannot write"), std::string::npos) << st.message();
}

// `runs export 1 --out runs.db --force` must never replace the open store with CSV: every spelling
// of the store or of a file SQLite keeps beside it is refused, with kReplace too, naming both
// paths, and nothing changes on disk.
TEST(OutputFile, TheRunStoreIsNeverATargetHoweverSpelt) {
    const std::string dir = fresh_dir("store");
    const std::string db = dir + "/runs.db";
    std::ofstream(db) << "the store";
    std::ofstream(db + "-wal") << "its log";
    ASSERT_EQ(::mkdir((dir + "/sub").c_str(), 0700), 0);
    ASSERT_EQ(::symlink(db.c_str(), (dir + "/link.csv").c_str()), 0);
    ASSERT_EQ(::link(db.c_str(), (dir + "/hard.csv").c_str()), 0);
    ASSERT_EQ(::symlink((db + "-journal").c_str(), (dir + "/dangling.csv").c_str()), 0);
    // The working directory is the store's folder, so relative spellings reach it.
    char cwd[4096];
    ASSERT_NE(::getcwd(cwd, sizeof cwd), nullptr);
    ASSERT_EQ(::chdir(dir.c_str()), 0);
    const std::vector<std::string> spellings = {
        db, "runs.db", "./runs.db", "sub/../runs.db", dir + "//runs.db", "link.csv", "hard.csv",
        "runs.db-wal", "./runs.db-shm", "runs.db-journal",  // the last two do not exist yet
        "dangling.csv"};                                    // a link to the journal's name
    for (const std::string& target : spellings) {
        for (Overwrite o : {Overwrite::kRefuse, Overwrite::kReplace}) {
            Status st = write_output_file(target, o, "runs.db", [](std::ostream& out) { return text(out, "a,b\n"); });
            ASSERT_FALSE(st) << target << " was written over the store";
            EXPECT_NE(st.message().find("refusing to write " + target), std::string::npos) << st.message();
            EXPECT_NE(st.message().find("run store runs.db"), std::string::npos) << st.message();
            EXPECT_NE(st.message().find("not even with --force"), std::string::npos) << st.message();
        }
    }
    // The store given by a symlink: SQLite keeps its -wal beside the real file, which is refused too.
    EXPECT_FALSE(check_output_target("runs.db-wal", "link.csv"));
    EXPECT_FALSE(check_output_target(db, dir + "/sub/../link.csv"));
    ASSERT_EQ(::chdir(cwd), 0);
    EXPECT_EQ(read_all(db), "the store");
    EXPECT_EQ(read_all(db + "-wal"), "its log");
    struct stat st {};
    EXPECT_NE(::stat((db + "-journal").c_str(), &st), 0) << "a journal was created";
    EXPECT_NE(::stat((db + "-shm").c_str(), &st), 0) << "an -shm was created";
    // Files beside it that are not the store's are written as ever.
    EXPECT_TRUE(check_output_target(dir + "/runs.db.csv", db));
    EXPECT_TRUE(check_output_target(dir + "/runs", db));
    EXPECT_TRUE(check_output_target(dir + "/sub/runs.db", db));
    EXPECT_TRUE(write_output_file(dir + "/runs.csv", Overwrite::kRefuse, db,
                                  [](std::ostream& out) { return text(out, "ok"); }));
    EXPECT_EQ(read_all(dir + "/runs.csv"), "ok");
    // No store (""), or an in-memory one, refuses nothing.
    EXPECT_TRUE(check_output_target(db, ""));
    EXPECT_TRUE(check_output_target(db, ":memory:"));
}

}  // namespace
}  // namespace tw
