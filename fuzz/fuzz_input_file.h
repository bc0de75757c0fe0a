// Writes a fuzzer's bytes to a per-process temporary file (the importers and the session store read
// paths, not buffers) and removes it again.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>

namespace kiln::fuzz {

class InputFile {
 public:
  InputFile(const uint8_t* data, size_t size, const char* suffix) {
    path_ = "/tmp/kiln-fuzz-" + std::to_string(::getpid()) + suffix;
    FILE* f = std::fopen(path_.c_str(), "wb");
    if (f) {
      std::fwrite(data, 1, size, f);
      std::fclose(f);
    }
  }
  ~InputFile() {
    std::remove(path_.c_str());
    std::remove((path_ + "-wal").c_str());
    std::remove((path_ + "-shm").c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace kiln::fuzz
