// A deliberately wrong lowering, for the tests of the accuracy checker (`kiln check`) only: it makes
// one pointwise function lower to another ("relu" to "identity", "add" to "sub"), so a test knows
// which kernel the checker must name. Only these functions turn it on: no option, flag or
// environment variable does, and nothing outside tests calls them.
//
// wrong_lowering_of(fn)
//   post: fn itself unless a test injected a wrong lowering for fn; then its replacement. The
//         decomposition table asks this for every unary and binary pointwise function it lowers.
#pragma once

#include <string>

namespace kiln::lowering {

// Until cleared, `fn` lowers as `becomes` (a unary or binary function name, or "identity").
void inject_wrong_lowering_for_testing(const std::string& fn, const std::string& becomes);
void clear_wrong_lowering_for_testing();

std::string wrong_lowering_of(const std::string& fn);

// Scoped injection for tests.
struct WrongLoweringForTesting {
  WrongLoweringForTesting(const std::string& fn, const std::string& becomes) {
    inject_wrong_lowering_for_testing(fn, becomes);
  }
  ~WrongLoweringForTesting() { clear_wrong_lowering_for_testing(); }
  WrongLoweringForTesting(const WrongLoweringForTesting&) = delete;
  WrongLoweringForTesting& operator=(const WrongLoweringForTesting&) = delete;
};

}  // namespace kiln::lowering
