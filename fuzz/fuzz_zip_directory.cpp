// libFuzzer target: the model loader's own reading of a zip archive's central directory (the check
// it makes before LibTorch's reader, which is not instrumented, sees the file), on arbitrary bytes.
#include <string>

#include "engine/model/zip_directory.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  auto names = kiln::model::zip_entry_names_of(bytes);
  if (names)
    for (const auto& n : *names)
      if (n.size() > size) __builtin_trap();  // a name longer than the whole archive cannot be real
  return 0;
}
