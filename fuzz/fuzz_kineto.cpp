// libFuzzer target: the Chrome-trace (Kineto) importer on arbitrary bytes, read by one thread and
// by two (the second from the element boundary guessed mid-file): both reads must give the same
// session, or the same error.
#include <cstdlib>
#include <string>

#include "engine/base/error.h"
#include "engine/importers/kineto/kineto.h"
#include "fuzz/fuzz_input_file.h"

namespace {

std::string digest(const kiln::session::Session& s) {
  std::string out = std::to_string(s.rank) + s.env.gpu + "\n";
  for (const auto& e : s.timeline)
    out += std::to_string(e.run) + e.lane + "|" + e.name + "|" + e.category + "|" + std::to_string(e.start_ns) + "|" +
           std::to_string(e.dur_ns) + "|" + e.compile_id + "|" + e.kernel + "|" + std::to_string(e.correlation) + "|" +
           e.args_json + "\n";
  for (const auto& r : s.runs) out += r.mode + std::to_string(r.kernels_per_iter) + "\n";
  for (const auto& k : s.kernels) out += k.name + k.launch_config + "\n";
  for (const auto& r : s.regions) out += r.compile_id + std::to_string(r.hits) + "\n";
  for (const auto& n : s.import_notes) out += n.what + std::to_string(n.count) + n.example + "\n";
  return out;
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
