// SHA-256 of a file or a string (FIPS 180-4), hex encoded: identifies models in sessions.
#pragma once

#include <string>

namespace kiln {

std::string sha256_hex(const std::string& data);
// Streams the file; throws kiln::Error naming it when it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace kiln
