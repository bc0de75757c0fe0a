// The C++ kernel cache loads only what Kiln compiled: a library planted under the right key does not run.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include <vector>

#include "engine/base/error.h"
#include "engine/codegen/cpp/cpp_compiler.h"
#include "tests/support/paths.h"

using namespace kiln;
namespace fs = std::filesystem;

namespace {

const char* kKernel = R"(extern "C" void kiln_test_kernel(void* const* b, const double*, const int64_t*) {
  *static_cast<float*>(b[0]) = 42.0f;
}
)";

std::string source() { return std::string("#include <cstdint>\n") + kKernel; }

}  // namespace

TEST(CppKernelCache, PlantedLibraryUnderTheRightKeyDoesNotRun) {
  std::string root = test::temp_dir() + "/cache";
  ::setenv("KILN_CACHE_DIR", root.c_str(), 1);
  auto first = codegen::compile_cpp(source(), {"kiln_test_kernel"});
  ASSERT_FALSE(first.cache_hit);
  float out = 0;
  void* bufs[] = {&out};
  first.kernels.at("kiln_test_kernel")(bufs, nullptr, nullptr);
  EXPECT_EQ(out, 42.0f);

  auto again = codegen::compile_cpp(source(), {"kiln_test_kernel"});
  EXPECT_TRUE(again.cache_hit);

  // An attacker's library, with a constructor that leaves a marker, replaces the cached one.
  std::string dir = test::temp_dir();
  std::string marker = dir + "/ran";
  std::string planted = dir + "/planted.cpp";
  {
    std::ofstream f(planted);
    f << "#include <cstdio>\n#include <cstdint>\n__attribute__((constructor)) static void pwn() { "
         "std::FILE* f = std::fopen(\""
      << marker << "\", \"w\"); if (f) std::fclose(f); }\n" << kKernel;
  }
  std::string out_text;
  ASSERT_EQ(test::run_command("c++ -shared -fPIC -o '" + first.path + "' '" + planted + "'", out_text), 0) << out_text;

  auto third = codegen::compile_cpp(source(), {"kiln_test_kernel"});
  EXPECT_FALSE(third.cache_hit) << "a library that does not match its recorded hash is not a cache hit";
  EXPECT_NE(third.cache_rejected.find("SHA-256"), std::string::npos) << third.cache_rejected;
  EXPECT_FALSE(fs::exists(marker)) << "the planted library's constructor ran";
  out = 0;
  third.kernels.at("kiln_test_kernel")(bufs, nullptr, nullptr);
  EXPECT_EQ(out, 42.0f);
  // The recompiled library replaced the planted one and verifies again.
  EXPECT_TRUE(codegen::compile_cpp(source(), {"kiln_test_kernel"}).cache_hit);
  EXPECT_FALSE(fs::exists(marker));
}

TEST(CppKernelCache, RefusesACacheOthersCanWrite) {
  std::string root = test::temp_dir() + "/shared-cache";
  fs::create_directories(root);
  fs::permissions(root, fs::perms::all);
  const char* before = std::getenv("KILN_CACHE_DIR");
  const std::string saved = before ? before : "";
  ::setenv("KILN_CACHE_DIR", root.c_str(), 1);
  std::string error;
  try {
    codegen::compile_cpp(source(), {"kiln_test_kernel"});
  } catch (const Error& e) {
    error = e.what();
  }
  // Later tests in this process compile again: the cache folder goes back to what it was.
  if (before) ::setenv("KILN_CACHE_DIR", saved.c_str(), 1);
  else ::unsetenv("KILN_CACHE_DIR");
  EXPECT_NE(error.find(root), std::string::npos) << (error.empty() ? "compiled into a folder others can write" : error);
}

// Several compilers of the same new kernel at once (two test processes, two `kiln` runs): each one's
// library may be replaced by another's between its verifying and loading it, or its hash paired with
// another's library. Every one of them still loads a verified library that computes the kernel.
TEST(CppKernelCache, ConcurrentCompilersOfOneNewKernelAllLoadIt) {
  std::string root = test::temp_dir() + "/race-cache";
  ::setenv("KILN_CACHE_DIR", root.c_str(), 1);
  std::mt19937_64 rng(std::random_device{}());
  for (int round = 0; round < 3; ++round) {
    // A source no cache has seen: every compiler misses at the start.
    const std::string src = source() + "// round " + std::to_string(round) + " " + std::to_string(rng()) + "\n";
    constexpr int kCompilers = 4;
    std::vector<std::string> errors(kCompilers);
    std::vector<float> results(kCompilers, 0.0f);
    std::vector<std::thread> threads;
    for (int i = 0; i < kCompilers; ++i)
      threads.emplace_back([&, i] {
        try {
          auto lib = codegen::compile_cpp(src, {"kiln_test_kernel"});
          void* bufs[] = {&results[i]};
          lib.kernels.at("kiln_test_kernel")(bufs, nullptr, nullptr);
        } catch (const std::exception& e) {
          errors[i] = e.what();
        }
      });
    for (auto& t : threads) t.join();
    for (int i = 0; i < kCompilers; ++i) {
      EXPECT_EQ(errors[i], "") << "round " << round << ", compiler " << i;
      EXPECT_EQ(results[i], 42.0f) << "round " << round << ", compiler " << i;
    }
    EXPECT_TRUE(codegen::compile_cpp(src, {"kiln_test_kernel"}).cache_hit) << "round " << round;
  }
}
