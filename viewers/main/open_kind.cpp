#include "viewers/main/open_kind.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace kiln::viewers {

OpenKind open_kind(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return OpenKind::Import;
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (ext == ".pt" || ext == ".pth" || ext == ".pt2") return OpenKind::Model;
  if (ext == ".kiln") return OpenKind::Session;
  return OpenKind::Import;
}

}  // namespace kiln::viewers
