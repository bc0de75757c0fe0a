// libFuzzer target: opening a session file (SQLite) made of arbitrary bytes.
#include "engine/base/error.h"
#include "engine/session/store.h"
#include "fuzz/fuzz_input_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::fuzz::InputFile in(data, size, ".kiln");
  try {
    (void)kiln::session::load_session(in.path());
  } catch (const kiln::Error&) {
  }
  return 0;
}
