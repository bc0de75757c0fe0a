#include "engine/base/output_file.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>

#include "engine/base/error.h"
#include "tests/support/paths.h"

using namespace kiln;
namespace fs = std::filesystem;

namespace {


// Writes past `bytes` fail with EFBIG, as on a full disk, for the life of the object.
struct FileSizeLimit {
  rlimit old{};
  explicit FileSizeLimit(rlim_t bytes) {
    std::signal(SIGXFSZ, SIG_IGN);
    ::getrlimit(RLIMIT_FSIZE, &old);
    rlimit now = old;
    now.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &now);
  }
  ~FileSizeLimit() { ::setrlimit(RLIMIT_FSIZE, &old); }
};

}  // namespace

TEST(OutputFile, AFailedWriteKeepsThePreviousFile) {
  std::string path = test::temp_dir() + "/report.html";
  write_file_atomically(path, "previous");
  std::string e;
  {
    FileSizeLimit full(4096);
    e = test::error_of([&] { write_file_atomically(path, std::string(64 * 1024, 'x')); });
  }
  EXPECT_NE(e.find(path + ": writing failed"), std::string::npos) << e;
  EXPECT_NE(e.find("previous file is kept"), std::string::npos) << e;
  EXPECT_EQ(test::read_file(path), "previous");
  for (const auto& entry : fs::directory_iterator(fs::path(path).parent_path()))
    EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos) << "temporary left: " << entry.path();
}

TEST(OutputFile, RefusesAnOutputThatIsAnInput) {
  std::string dir = test::temp_dir();
  std::string in = dir + "/s.kiln";
  std::ofstream(in) << "session";
  fs::create_symlink(in, dir + "/alias.kiln");
  EXPECT_NE(test::error_of([&] { refuse_input_as_output(in, {in}); }).find("is also an input"), std::string::npos);
  EXPECT_NE(test::error_of([&] { refuse_input_as_output(dir + "/alias.kiln", {"x", in}); }).find("refusing to overwrite"),
            std::string::npos);
  EXPECT_NE(test::error_of([&] { refuse_input_as_output(dir + "/./s.kiln", {in}); }), "");
  EXPECT_EQ(test::error_of([&] { refuse_input_as_output(dir + "/new.kiln", {in}); }), "");
  EXPECT_EQ(test::error_of([&] { refuse_input_as_output(dir + "/alias.kiln", {dir + "/other"}); }), "");
}

TEST(OutputFile, OneWriterPerOutput) {
  std::string path = test::temp_dir() + "/s.kiln";
  {
    OutputLock first(path);
    std::string e = test::error_of([&] { OutputLock second(path); });
    EXPECT_NE(e.find(path + ": being written by another Kiln process (pid " + std::to_string(::getpid()) + ")"),
              std::string::npos)
        << e;
  }
  EXPECT_FALSE(fs::exists(path + ".lock")) << "the lock file is removed when released";
  OutputLock again(path);
}

// remove_tree removes a folder with everything under it, a plain file, and a missing path; a link
// inside is removed as a link (what it points to stays).
TEST(OutputFile, RemoveTreeRemovesAFolderAndNotWhatItsLinksPointTo) {
  namespace fs = std::filesystem;
  const std::string dir = test::temp_dir();
  const std::string outside = dir + "/outside", tree = dir + "/tree";
  fs::create_directories(outside);
  std::ofstream(outside + "/keep.txt") << "kept";
  fs::create_directories(tree + "/a/b/c");
  for (const char* f : {"/one", "/a/two", "/a/b/three", "/a/b/c/four"}) std::ofstream(tree + f) << "x";
  fs::create_directory_symlink(outside, tree + "/a/link");
  EXPECT_TRUE(remove_tree(tree));
  EXPECT_FALSE(fs::exists(tree));
  EXPECT_TRUE(fs::exists(outside + "/keep.txt"));
  EXPECT_TRUE(remove_tree(tree)) << "a missing path is already removed";
  EXPECT_TRUE(remove_tree(outside + "/keep.txt"));
  EXPECT_FALSE(fs::exists(outside + "/keep.txt"));
  EXPECT_TRUE(remove_tree(dir));
  EXPECT_FALSE(fs::exists(dir));
}
