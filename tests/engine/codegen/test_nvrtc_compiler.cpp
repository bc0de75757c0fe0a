// How the NVRTC units are shared among worker processes (engine/codegen/cuda/nvrtc_compiler.h): the largest first,
// each to the worker with the least so far, so that one worker is not left with several of the largest.
#include "engine/codegen/cuda/nvrtc_compiler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

using namespace kiln;

namespace {

std::vector<size_t> loads(const std::vector<std::vector<size_t>>& shares, const std::vector<size_t>& sizes) {
  std::vector<size_t> out;
  for (const auto& s : shares) {
    size_t sum = 0;
    for (size_t i : s) sum += sizes[i];
    out.push_back(sum);
  }
  return out;
}

}  // namespace

TEST(NvrtcCompiler, UnitsAreSharedLargestFirstToTheLeastLoadedWorker) {
  // Two large window kernels at positions 0 and 2 (with max-autotune's forms) among small pointwise ones: dealt
  // round-robin to two workers, both large would go to the first (positions 0, 2, 4, ...).
  const std::vector<size_t> sizes = {900, 10, 800, 10, 10, 10, 10, 10, 10, 10};
  const auto shares = codegen::share_units(sizes, 2);
  ASSERT_EQ(shares.size(), 2u);
  const auto load = loads(shares, sizes);
  EXPECT_EQ(*std::max_element(load.begin(), load.end()), 900u);  // the largest alone: the best any split can do
  // Every unit once, each worker's positions ascending.
  std::vector<size_t> all;
  for (const auto& s : shares) {
    EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));
    all.insert(all.end(), s.begin(), s.end());
  }
  std::sort(all.begin(), all.end());
  std::vector<size_t> expected(sizes.size());
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(all, expected);
}

TEST(NvrtcCompiler, SharingKeepsEveryWorkerWithinTheLargestUnitOfTheFairShare) {
  // Many units of mixed sizes among 16 workers: no worker holds more than the even share plus one unit, and a worker
  // is given nothing only when there are fewer units than workers.
  std::vector<size_t> sizes;
  for (size_t i = 0; i < 64; ++i) sizes.push_back(i % 7 == 0 ? 5000 + 100 * i : 200 + 13 * (i % 5));
  const auto shares = codegen::share_units(sizes, 16);
  ASSERT_EQ(shares.size(), 16u);
  const auto load = loads(shares, sizes);
  const size_t total = std::accumulate(sizes.begin(), sizes.end(), size_t{0});
  const size_t largest = *std::max_element(sizes.begin(), sizes.end());
  for (size_t w = 0; w < load.size(); ++w) {
    EXPECT_LE(load[w], total / 16 + largest) << w;
    EXPECT_FALSE(shares[w].empty()) << w;
  }
  EXPECT_EQ(codegen::share_units({7, 3}, 4).size(), 4u);  // more workers than units: the rest get none
  EXPECT_EQ(codegen::share_units({}, 3).size(), 3u);
  EXPECT_EQ(codegen::share_units({5}, 0).size(), 1u);  // no workers asked: one share
}
