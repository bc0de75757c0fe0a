#include "engine/base/kernel_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <vector>

#include "engine/base/error.h"
#include "tests/support/paths.h"

using namespace kiln;
namespace fs = std::filesystem;

namespace {

// Points the cache at a fresh folder for one test (each test runs in its own process under ctest).
struct ScopedCacheRoot {
  std::string root;
  std::string previous;
  bool had_previous = false;
  explicit ScopedCacheRoot(const std::string& path) : root(path) {
    if (const char* p = std::getenv("KILN_CACHE_DIR")) had_previous = true, previous = p;
    ::setenv("KILN_CACHE_DIR", root.c_str(), 1);
  }
  ~ScopedCacheRoot() {
    if (had_previous) ::setenv("KILN_CACHE_DIR", previous.c_str(), 1);
    else ::unsetenv("KILN_CACHE_DIR");
  }
};

mode_t mode_of(const fs::path& p) {
  struct stat st;
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}


void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

}  // namespace

TEST(KernelCache, FoldersArePrivate) {
  ScopedCacheRoot cache(test::temp_dir() + "/deep/cache");
  ::umask(0022);
  fs::path dir = open_kernel_cache("cpp");
  EXPECT_EQ(dir, fs::path(cache.root) / "cpp");
  EXPECT_EQ(mode_of(cache.root), 0700u);
  EXPECT_EQ(mode_of(dir), 0700u);
}

TEST(KernelCache, RefusesAFolderOthersCanWrite) {
  ScopedCacheRoot cache(test::temp_dir() + "/cache");
  fs::create_directories(cache.root);
  ::chmod(cache.root.c_str(), 0777);
  std::string e = test::error_of([] { open_kernel_cache("cpp"); });
  EXPECT_NE(e.find(cache.root), std::string::npos) << e;
  EXPECT_NE(e.find("writable by other users (mode 0777)"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(fs::path(cache.root) / "cpp")) << "nothing is created inside a refused folder";
}

TEST(KernelCache, RefusesASymlinkedFolder) {
  std::string base = test::temp_dir();
  fs::create_directories(base + "/elsewhere");
  ::chmod((base + "/elsewhere").c_str(), 0700);
  fs::create_directory_symlink(base + "/elsewhere", base + "/cache");
  ScopedCacheRoot cache(base + "/cache");
  EXPECT_NE(test::error_of([] { open_kernel_cache("cuda"); }).find("symbolic link"), std::string::npos);
}

TEST(KernelCache, RefusesAnotherUsersFolder) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a folder to another user";
  ScopedCacheRoot cache(test::temp_dir() + "/cache");
  fs::create_directories(cache.root);
  ::chmod(cache.root.c_str(), 0755);
  ASSERT_EQ(::chown(cache.root.c_str(), 65534, 65534), 0);
  std::string e = test::error_of([] { open_kernel_cache("cpp"); });
  EXPECT_NE(e.find("belongs to uid 65534"), std::string::npos) << e;
}

TEST(KernelCache, StoresAndVerifiesEntries) {
  ScopedCacheRoot cache(test::temp_dir() + "/cache");
  fs::path entry = open_kernel_cache("cuda") / "k.cubin";
  EXPECT_FALSE(cache_load_verified(entry).bytes);
  EXPECT_EQ(cache_load_verified(entry).why_not, "") << "an absent entry is a plain miss";
  cache_store(entry, std::string("cubin\0bytes", 11));
  auto loaded = cache_load_verified(entry);
  ASSERT_TRUE(loaded.bytes);
  EXPECT_EQ(*loaded.bytes, std::string("cubin\0bytes", 11));

  write(entry, "planted");  // same owner, different bytes: the recorded hash no longer matches
  loaded = cache_load_verified(entry);
  EXPECT_FALSE(loaded.bytes);
  EXPECT_NE(loaded.why_not.find("do not match the recorded SHA-256"), std::string::npos) << loaded.why_not;

  fs::remove(entry.string() + ".sha256");
  loaded = cache_load_verified(entry);
  EXPECT_FALSE(loaded.bytes);
  EXPECT_NE(loaded.why_not.find("no recorded hash"), std::string::npos) << loaded.why_not;
}

TEST(KernelCache, RefusesSymlinkedAndForeignEntries) {
  ScopedCacheRoot cache(test::temp_dir() + "/cache");
  fs::path dir = open_kernel_cache("cpp");
  cache_store(dir / "real.so", "library");
  fs::create_symlink(dir / "real.so", dir / "link.so");
  fs::copy_file(dir / "real.so.sha256", dir / "link.so.sha256");
  EXPECT_FALSE(cache_load_verified(dir / "link.so").bytes);

  ::chmod((dir / "real.so").c_str(), 0666);
  auto loaded = cache_load_verified(dir / "real.so");
  EXPECT_FALSE(loaded.bytes);
  EXPECT_NE(loaded.why_not.find("writable by other users"), std::string::npos) << loaded.why_not;
  ::chmod((dir / "real.so").c_str(), 0600);
  EXPECT_TRUE(cache_load_verified(dir / "real.so").bytes);

  if (::geteuid() == 0) {
    ASSERT_EQ(::chown((dir / "real.so").c_str(), 65534, 65534), 0);
    loaded = cache_load_verified(dir / "real.so");
    EXPECT_FALSE(loaded.bytes);
    EXPECT_NE(loaded.why_not.find("owned by uid 65534"), std::string::npos) << loaded.why_not;
  }
}

TEST(KernelCache, RemovesTemporariesOfDeadProcesses) {
  ScopedCacheRoot cache(test::temp_dir() + "/cache");
  fs::path dir = fs::path(cache.root) / "cpp";
  fs::create_directories(dir);
  ::chmod(cache.root.c_str(), 0700);
  ::chmod(dir.c_str(), 0700);
  // pid 2^22+1 is above Linux's pid_max limit: no such process can be running.
  write(dir / "abc.so.tmp-4194305-1.so", "half a library");
  fs::path mine = dir / ("abc.so.tmp-" + std::to_string(::getpid()) + "-1.so");
  write(mine, "being written");
  write(dir / "abc.so", "an entry");
  open_kernel_cache("cpp");
  EXPECT_FALSE(fs::exists(dir / "abc.so.tmp-4194305-1.so"));
  EXPECT_TRUE(fs::exists(mine));
  EXPECT_TRUE(fs::exists(dir / "abc.so"));
}

TEST(KernelCache, FallbackRootIsPerUser) {
  const char* keep[] = {"KILN_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
  std::vector<std::pair<std::string, std::string>> saved;
  for (const char* k : keep)
    if (const char* v = std::getenv(k)) saved.emplace_back(k, v);
  for (const char* k : keep) ::unsetenv(k);
  std::string root = kernel_cache_root();
  for (auto& [k, v] : saved) ::setenv(k.c_str(), v.c_str(), 1);
  EXPECT_EQ(root, "/tmp/kiln-cache-" + std::to_string(::geteuid()));
}
