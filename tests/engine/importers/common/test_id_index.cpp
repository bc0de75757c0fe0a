// IdIndex against std::unordered_map::emplace/find, and in_parts covering every index once.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <random>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "engine/base/in_parts.h"
#include "engine/importers/common/id_index.h"

using kiln::importers::IdIndex;
using kiln::in_parts;

TEST(IdIndex, AnswersAsAnUnorderedMapKeepingTheFirstIndex) {
  std::mt19937_64 rng(std::random_device{}());
  for (size_t expected : {size_t(0), size_t(10), size_t(50000)}) {
    IdIndex index(expected);
    std::unordered_map<int64_t, size_t> reference;
    std::vector<int64_t> ids = {0, -1, 1, INT64_MIN, INT64_MAX, INT64_MIN + 1};
    // Dense ids (CUDA correlations), repeats, ids that agree in their low bits, and random ones.
    for (int64_t i = 0; i < 20000; ++i) ids.push_back(i);
    for (int64_t i = 0; i < 5000; ++i) ids.push_back(i * 2);
    for (int64_t i = 0; i < 5000; ++i) ids.push_back(i << 32);
    for (int i = 0; i < 20000; ++i) ids.push_back(static_cast<int64_t>(rng()));
    std::shuffle(ids.begin(), ids.end(), rng);
    for (size_t at = 0; at < ids.size(); ++at) {
      const bool fresh = reference.emplace(ids[at], at).second;
      ASSERT_EQ(index.emplace(ids[at], at), fresh) << ids[at];
    }
    EXPECT_EQ(index.size(), reference.size());
    for (const auto& [id, at] : reference) ASSERT_EQ(index.find(id), at) << id;
    for (int i = 0; i < 1000; ++i) {
      int64_t id = static_cast<int64_t>(rng());
      EXPECT_EQ(index.find(id), reference.count(id) ? reference[id] : IdIndex::kAbsent) << id;
    }
  }
}

TEST(IdIndex, AnEmptyIndexFindsNothing) {
  IdIndex index;
  EXPECT_TRUE(index.empty());
  EXPECT_EQ(index.find(0), IdIndex::kAbsent);
  EXPECT_EQ(index.find(INT64_MIN), IdIndex::kAbsent);
}

TEST(InParts, EveryIndexOnceWhateverTheSizeAndTheParts) {
  for (unsigned parts : {0u, 2u, 3u, 7u})
    for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(99999), size_t(100000), size_t(250001)}) {
      std::vector<std::atomic<int>> seen(n);
      in_parts(
          n,
          [&](size_t begin, size_t end) {
            for (size_t i = begin; i < end; ++i) seen[i].fetch_add(1);
          },
          100000, parts);
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(seen[i].load(), 1) << i << " of " << n << ", " << parts << " parts";
    }
}

TEST(InParts, AFailingPartFailsTheCallAfterEveryPartEnded) {
  for (size_t failing : {size_t(0), size_t(1), size_t(2)}) {
    std::atomic<int> ran{0};
    try {
      in_parts(
          300000,
          [&](size_t begin, size_t) {
            ++ran;
            if (begin / 100000 >= failing) throw std::runtime_error("part " + std::to_string(begin / 100000));
          },
          100000, 3);
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "part " + std::to_string(failing));  // the earliest failing part's
    }
    EXPECT_EQ(ran.load(), 3);
  }
}
