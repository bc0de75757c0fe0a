// The questions the Kineto importer asks of a JSON value, put to two views of the same text (EventValue,
// FlatValue, JsonValue): every answer equal, fallbacks and the sign of zero included. dump() too unless
// `dumps` is false (a root object's, which ChromeEvent does not write out).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace kiln::test {

template <typename A, typename B>
void expect_same_answers(const A& a, const B& b, const std::string& where, bool dumps = true) {
  ASSERT_EQ(a.exists(), b.exists()) << where;
  EXPECT_EQ(a.is_null(), b.is_null()) << where;
  EXPECT_EQ(a.is_object(), b.is_object()) << where;
  EXPECT_EQ(a.is_array(), b.is_array()) << where;
  EXPECT_EQ(a.is_string(), b.is_string()) << where;
  EXPECT_EQ(a.is_number(), b.is_number()) << where;
  EXPECT_EQ(a.is_bool(), b.is_bool()) << where;
  EXPECT_EQ(a.str("fb"), b.str("fb")) << where;
  EXPECT_EQ(a.i64(-7), b.i64(-7)) << where;
  const double fa = a.f64(-7), fb = b.f64(-7);
  EXPECT_TRUE(fa == fb || (std::isnan(fa) && std::isnan(fb))) << where;
  if (fa == fb) EXPECT_EQ(std::signbit(fa), std::signbit(fb)) << where;
  EXPECT_EQ(a.size(), b.size()) << where;
  if (dumps) EXPECT_EQ(a.dump(), b.dump()) << where;
}

}  // namespace kiln::test
