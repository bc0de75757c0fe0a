#include "engine/lowering/wrong_lowering.h"

#include <mutex>

namespace kiln::lowering {

namespace {

struct Injected {
  std::mutex mutex;
  std::string fn, becomes;
};

Injected& injected() {
  static Injected i;
  return i;
}

}  // namespace

void inject_wrong_lowering_for_testing(const std::string& fn, const std::string& becomes) {
  std::lock_guard<std::mutex> lock(injected().mutex);
  injected().fn = fn;
  injected().becomes = becomes;
}

void clear_wrong_lowering_for_testing() { inject_wrong_lowering_for_testing("", ""); }

std::string wrong_lowering_of(const std::string& fn) {
  std::lock_guard<std::mutex> lock(injected().mutex);
  return !injected().fn.empty() && fn == injected().fn ? injected().becomes : fn;
}

}  // namespace kiln::lowering
