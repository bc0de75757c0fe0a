// open_kind(path): what the main window does with a path the user opens (menu, drop, command line).
//   .pt / .pth         → Model   (profile it: asks for example inputs, runs every requested mode)
//   .kiln              → Session (open the session file)
//   anything else      → Import  (TORCH_TRACE log or directory, profiler trace .json / .json.gz;
//                                 the importer tells them apart and names the file when it is neither)
#pragma once

#include <string>

namespace kiln::viewers {

enum class OpenKind { Model, Session, Import };

OpenKind open_kind(const std::string& path);

}  // namespace kiln::viewers
