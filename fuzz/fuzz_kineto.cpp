// libFuzzer target: the Chrome-trace (Kineto) importer on arbitrary bytes, read by one thread, by
// two and by three (each further part from an element boundary guessed in the file): every read must
// give the same session, or the same error.
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

std::string import(const std::string& path, int64_t split, int parts) {
  try {
    return digest(kiln::importers::import_kineto_trace(path, nullptr, split, parts));
  } catch (const kiln::Error& e) {
    return std::string("error: ") + e.what();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::fuzz::InputFile in(data, size, ".json");
  const std::string one = import(in.path(), 0, 0);
  if (one != import(in.path(), 1, 2) || one != import(in.path(), 1, 3)) std::abort();
  return 0;
}
