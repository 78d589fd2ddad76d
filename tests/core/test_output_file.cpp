// Tests of core/output_file.h: an existing file is refused or replaced as asked, and a failed
// write leaves the target exactly as it was, with no temporary file behind.
#include <gtest/gtest.h>
#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

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
    ASSERT_TRUE(write_output_file(p, Overwrite::kRefuse, [](std::ostream& o) { return text(o, "a,b\n"); }));
    EXPECT_EQ(read_all(p), "a,b\n");
    Status again = write_output_file(p, Overwrite::kRefuse, [](std::ostream& o) { return text(o, "new"); });
    ASSERT_FALSE(again);
    EXPECT_NE(again.message().find("exists; --force replaces it"), std::string::npos) << again.message();
    EXPECT_EQ(read_all(p), "a,b\n");
    ASSERT_TRUE(write_output_file(p, Overwrite::kReplace, [](std::ostream& o) { return text(o, "new"); }));
    EXPECT_EQ(read_all(p), "new");
    EXPECT_EQ(files_in(dir), 1) << "a temporary file was left behind";
}

TEST(OutputFile, AFailedWriteLeavesTheTargetAsItWas) {
    const std::string dir = fresh_dir("fail"), p = dir + "/keep.csv";
    std::ofstream(p) << "keep me";
    Status st = write_output_file(p, Overwrite::kReplace, [](std::ostream& o) {
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
    EXPECT_FALSE(write_output_file(dir, Overwrite::kReplace, [](std::ostream& o) { return text(o, "x"); }));
    Status st = write_output_file(dir + "/no/such/folder.csv", Overwrite::kRefuse,
                                  [](std::ostream& o) { return text(o, "x"); });
    ASSERT_FALSE(st);
    EXPECT_NE(st.message().find("cannot write"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace tw
