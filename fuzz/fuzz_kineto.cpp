// libFuzzer target: the Chrome-trace (Kineto) importer on arbitrary bytes, read by one thread and
// by two (the second from the element boundary guessed mid-file): both reads must give the same
// session, or the same error.
#include <cstdlib>
#include <string>

#include "engine/base/error.h"
#include "engine/importers/kineto/kineto.h"
#include "engine/report/render_json.h"
#include "fuzz/fuzz_input_file.h"

namespace {

std::string digest(kiln::session::Session s) {  // every field but the creation time
  s.env.created_at.clear();
  return kiln::report::render_json(s);
}

std::string import(const std::string& path, int64_t split) {
  try {
    return digest(kiln::importers::import_kineto_trace(path, nullptr, split));
  } catch (const kiln::Error& e) {
    return std::string("error: ") + e.what();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::fuzz::InputFile in(data, size, ".json");
  if (import(in.path(), 0) != import(in.path(), 1)) std::abort();
  return 0;
}
