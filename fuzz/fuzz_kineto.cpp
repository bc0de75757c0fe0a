// libFuzzer target: the Chrome-trace (Kineto) importer on arbitrary bytes.
#include "engine/base/error.h"
#include "engine/importers/kineto/kineto.h"
#include "fuzz/fuzz_input_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::fuzz::InputFile in(data, size, ".json");
  try {
    (void)kiln::importers::import_kineto_trace(in.path());
  } catch (const kiln::Error&) {
  }
  return 0;
}
