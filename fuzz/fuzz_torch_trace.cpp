// libFuzzer target: the TORCH_TRACE importer on arbitrary bytes. kiln::Error is an answer; anything
// else escaping, or a sanitizer report, is a finding.
#include "engine/base/error.h"
#include "engine/importers/torch_trace/torch_trace.h"
#include "fuzz/fuzz_input_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::fuzz::InputFile in(data, size, ".log");
  try {
    kiln::importers::TorchTraceOptions o;
    o.max_line_bytes = 1 << 20;
    (void)kiln::importers::import_torch_trace(in.path(), o);
  } catch (const kiln::Error&) {
  }
  return 0;
}
