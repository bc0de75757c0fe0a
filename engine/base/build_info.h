#pragma once
// What build of Kiln is running: the release version and the git commit it was built from. Every
// session records both (env.kiln_version), and `kiln --version` / `kiln-gui --version` print them.
#include <string>

namespace kiln {

const char* build_version();  // "0.1.0"
const char* build_commit();   // "4b6787f1a2b3", "4b6787f1a2b3-dirty", or "unknown" outside a git checkout

// "0.1.0 (git 4b6787f1a2b3)": what sessions and --version show.
inline std::string build_description() {
  return std::string(build_version()) + " (git " + build_commit() + ")";
}

}  // namespace kiln
