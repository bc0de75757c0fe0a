// Strides of a computation's buffer along its storage order: row-major, channels-last, and sizes a model file
// can make hostile (negative, or more elements than a tensor can hold) refused with an error, never overflowed.
#include "engine/runtime/lowered_region.h"

#include <gtest/gtest.h>

#include "engine/base/error.h"

using namespace kiln;

TEST(LayoutStrides, RowMajorAndAlongAStorageOrder) {
  EXPECT_EQ(runtime::layout_strides({2, 3, 4, 5}, {}), (std::vector<int64_t>{60, 20, 5, 1}));
  // Channels-last: N, H, W, C from outermost to innermost.
  EXPECT_EQ(runtime::layout_strides({2, 3, 4, 5}, {0, 2, 3, 1}), (std::vector<int64_t>{60, 1, 15, 3}));
  EXPECT_EQ(runtime::layout_strides({2, 0, 4}, {}), (std::vector<int64_t>{4, 4, 1})) << "an empty dim counts as 1";
}

TEST(LayoutStrides, SizesThatOverflowOrAreNegativeAreRefused) {
  const int64_t big = int64_t(1) << 40;
  try {
    runtime::layout_strides({big, big, 4}, {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("more elements than a tensor can"), std::string::npos) << e.what();
  }
  EXPECT_THROW(runtime::layout_strides({big, 3, big}, {0, 2, 1}), Error);
  try {
    runtime::layout_strides({2, -3}, {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("negative"), std::string::npos) << e.what();
  }
  // The largest count that fits is not refused.
  EXPECT_EQ(runtime::layout_strides({int64_t(1) << 31, int64_t(1) << 31}, {}),
            (std::vector<int64_t>{int64_t(1) << 31, 1}));
}
