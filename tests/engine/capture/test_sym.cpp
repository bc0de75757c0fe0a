#include "engine/capture/sym.h"

#include <gtest/gtest.h>

using namespace kiln::capture;
using Op = SymNode::Op;

TEST(Sym, PrintsAndEvaluates) {
  auto s0 = sym_var("s0");
  auto cond = sym_binary(Op::Gt, s0, sym_const(4));
  EXPECT_EQ(sym_str(cond), "s0 > 4");
  EXPECT_EQ(sym_eval(cond, {{"s0", 8}}), 1);
  EXPECT_EQ(sym_eval(cond, {{"s0", 3}}), 0);
  EXPECT_FALSE(sym_eval(cond, {}).has_value());
  auto e = sym_binary(Op::FloorDiv, sym_binary(Op::Mul, s0, sym_const(16)), sym_const(3));
  EXPECT_EQ(sym_str(e), "(s0 * 16) // 3");
  EXPECT_EQ(sym_eval(e, {{"s0", 2}}), 10);
  EXPECT_EQ(sym_str(sym_not(cond)), "not (s0 > 4)");
}

TEST(Sym, FoldsConstantsAndFollowsPythonDivision) {
  auto c = sym_binary(Op::Add, sym_const(2), sym_const(3));
  EXPECT_TRUE(sym_is_const(c));
  EXPECT_EQ(c->value, 5);
  EXPECT_EQ(sym_eval(sym_binary(Op::FloorDiv, sym_var("a"), sym_const(2)), {{"a", -3}}), -2);
  EXPECT_EQ(sym_eval(sym_binary(Op::Mod, sym_var("a"), sym_const(3)), {{"a", -1}}), 2);
  EXPECT_FALSE(sym_eval(sym_binary(Op::FloorDiv, sym_var("a"), sym_const(0)), {{"a", 1}}).has_value());
}
