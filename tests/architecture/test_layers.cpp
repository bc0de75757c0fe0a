// The layer rules, checked on the source tree (docs/architecture.md):
//  - engine/ folders are ordered; a file may include its own folder and the folders below it only.
//  - app/ and viewers/ include the engine through engine/api only.
// Violations that predate the rules are listed in known_layer_violations.txt: a new one fails this
// test, and so does a listed one that no longer exists (the list only shrinks).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

// Lowest first (docs/architecture.md). `profile` holds the tracers the runtime records into;
// `backends` the built-in backends linked into the engine; `commands` the drivers over all stages.
// plugins/ holds backends loaded at run time: like the apps, they see the engine's headers only.
const std::vector<std::string> kEngineOrder = {"base",    "records", "ir",        "model",  "capture",  "lowering",
                                               "fusion",  "codegen",   "profile", "runtime", "pipeline", "backends",
                                               "session", "importers", "report", "commands", "api"};

int rank_of(const std::string& folder) {
  auto it = std::find(kEngineOrder.begin(), kEngineOrder.end(), folder);
  return it == kEngineOrder.end() ? -1 : static_cast<int>(it - kEngineOrder.begin());
}

// "engine/report/x.cpp" -> "report"; apps, viewers and plugins by top folder.
std::string layer_of(const std::string& rel) {
  if (rel.rfind("engine/", 0) == 0) return rel.substr(7, rel.find('/', 7) - 7);
  return rel.substr(0, rel.find('/'));
}

std::vector<std::string> source_files(std::initializer_list<const char*> tops = {"engine", "plugins", "app", "viewers"}) {
  std::vector<std::string> out;
  fs::path root(KILN_SOURCE_DIR);
  for (const char* top : tops) {
    if (!fs::exists(root / top)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root / top)) {
      auto ext = e.path().extension().string();
      if (e.is_regular_file() && (ext == ".h" || ext == ".cpp")) out.push_back(fs::relative(e.path(), root).string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::set<std::string> violations() {
  std::set<std::string> found;
  const std::regex include_re(R"(^\s*#\s*include\s+"((engine|plugins)/[^"]+)\")");
  for (const auto& rel : source_files()) {
    std::string from = layer_of(rel);
    std::ifstream in(fs::path(KILN_SOURCE_DIR) / rel);
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (!std::regex_search(line, m, include_re)) continue;
      std::string target = m[1];
      std::string to = layer_of(target);
      bool ok;
      if (from == "app" || from == "viewers" || from == "plugins") {
        ok = to == "api";
      } else {
        int a = rank_of(from), b = rank_of(to);
        ok = a >= 0 && b >= 0 && b <= a;
      }
      if (!ok) found.insert(rel + " -> " + target);
    }
  }
  return found;
}

std::set<std::string> known() {
  std::set<std::string> out;
  std::ifstream in(fs::path(KILN_SOURCE_DIR) / "tests/architecture/known_layer_violations.txt");
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') out.insert(line);
  return out;
}

}  // namespace

TEST(Layers, NoNewUpwardOrInternalIncludes) {
  auto actual = violations();
  auto listed = known();
  std::vector<std::string> added, gone;
  std::set_difference(actual.begin(), actual.end(), listed.begin(), listed.end(), std::back_inserter(added));
  std::set_difference(listed.begin(), listed.end(), actual.begin(), actual.end(), std::back_inserter(gone));
  std::ostringstream a, g;
  for (const auto& s : added) a << "  " << s << "\n";
  for (const auto& s : gone) g << "  " << s << "\n";
  EXPECT_TRUE(added.empty()) << added.size() << " include(s) break the layer rules (docs/architecture.md):\n" << a.str();
  EXPECT_TRUE(gone.empty()) << gone.size()
                            << " listed violation(s) are fixed: remove them from "
                               "tests/architecture/known_layer_violations.txt:\n"
                            << g.str();
  std::cout << "layer violations left: " << actual.size() << "\n";
}

TEST(Layers, TheCheckSeesAnUpwardInclude) {
  // The rule itself: lower folders may not reach higher ones, apps only reach engine/api.
  EXPECT_LT(rank_of("base"), rank_of("ir"));
  EXPECT_LT(rank_of("session"), rank_of("report"));
  EXPECT_EQ(layer_of("engine/report/render_html.cpp"), "report");
  EXPECT_EQ(layer_of("engine/backends/kiln/kiln_backend.cpp"), "backends");
  EXPECT_EQ(layer_of("plugins/examples/sample_backend_plugin.cpp"), "plugins");
  EXPECT_EQ(layer_of("viewers/graph/graph_panel.cpp"), "viewers");
}

// std::filesystem::remove_all jumps to address 0 on a non-empty folder in programs linked with the
// torch wheel's LibTorch (engine/base/output_file.h): every program that links the engine, tests and
// benchmarks included, removes folders with kiln::remove_tree instead.
TEST(SourceRules, NoFilesystemRemoveAll) {
  std::vector<std::string> found;
  for (const auto& rel : source_files({"engine", "plugins", "app", "viewers", "tests", "bench", "fuzz"})) {
    if (rel == "tests/architecture/test_layers.cpp") continue;
    std::ifstream in(fs::path(KILN_SOURCE_DIR) / rel);
    int n = 0;
    for (std::string line; std::getline(in, line);) {
      ++n;
      const size_t at = line.find("remove_all(");
      if (at != std::string::npos && line.rfind("//", at) == std::string::npos)
        found.push_back(rel + ":" + std::to_string(n) + ": " + line);
    }
  }
  std::ostringstream list;
  for (const auto& f : found) list << "  " << f << "\n";
  EXPECT_TRUE(found.empty()) << "use kiln::remove_tree (engine/base/output_file.h):\n" << list.str();
}

// KILN_WITH_CUDA comes from the generated kiln_build_config.h (cmake/kiln_build_config.h.in), not from a
// definition on every compile line: a file that tests it without including the header would silently
// compile its CPU-only branch in a CUDA build.
TEST(SourceRules, FilesTestingTheCudaBuildIncludeTheConfigHeader) {
  std::vector<std::string> missing;
  for (const auto& rel : source_files({"engine", "plugins", "app", "viewers", "tests", "bench", "fuzz"})) {
    if (rel == "tests/architecture/test_layers.cpp") continue;
    std::ifstream in(fs::path(KILN_SOURCE_DIR) / rel);
    bool uses = false, includes = false;
    for (std::string line; std::getline(in, line);) {
      if (line.find("#include \"kiln_build_config.h\"") != std::string::npos) includes = true;
      if (line.find("KILN_WITH_CUDA") != std::string::npos && line.find('#') != std::string::npos) uses = true;
    }
    if (uses && !includes) missing.push_back(rel);
  }
  std::ostringstream list;
  for (const auto& f : missing) list << "  " << f << "\n";
  EXPECT_TRUE(missing.empty()) << "these test KILN_WITH_CUDA without #include \"kiln_build_config.h\":\n" << list.str();
}

// ...and no CMake file puts the definition on compile lines again.
TEST(SourceRules, NoCompileLineDefinesTheCudaBuild) {
  std::vector<std::string> found;
  fs::path root(KILN_SOURCE_DIR);
  std::vector<fs::path> files = {root / "CMakeLists.txt"};
  for (const char* top : {"cmake", "engine", "app", "tests", "bench", "viewers", "plugins", "fuzz"}) {
    if (!fs::exists(root / top)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root / top)) {
      const std::string name = e.path().filename().string();
      if (e.is_regular_file() && (name == "CMakeLists.txt" || e.path().extension() == ".cmake")) files.push_back(e.path());
    }
  }
  for (const auto& file : files) {
    std::ifstream in(file);
    int n = 0;
    for (std::string line; std::getline(in, line);) {
      ++n;
      if (line.find("KILN_WITH_CUDA") != std::string::npos &&
          (line.find("compile_definitions") != std::string::npos || line.find("add_definitions") != std::string::npos))
        found.push_back(fs::relative(file, root).string() + ":" + std::to_string(n));
    }
  }
  EXPECT_TRUE(found.empty()) << "KILN_WITH_CUDA is defined on compile lines at " << (found.empty() ? "" : found[0]);
}

// Lowering, fusion and code generation never include LibTorch, directly or through the project's headers:
// they compile without LibTorch's precompiled header (engine/CMakeLists.txt), and the compiler's passes stay
// testable on hand-built programs.
TEST(SourceRules, LoweringFusionAndCodegenIncludeNoLibTorch) {
  const std::regex include_re(R"(^\s*#\s*include\s*[<"]([^">]+)[">])");
  std::map<std::string, std::string> memo;  // file -> the LibTorch header it reaches ("" when none)
  std::function<std::string(const std::string&, std::set<std::string>&)> reaches =
      [&](const std::string& rel, std::set<std::string>& seen) -> std::string {
    if (auto it = memo.find(rel); it != memo.end()) return it->second;
    if (!seen.insert(rel).second) return "";
    std::ifstream in(fs::path(KILN_SOURCE_DIR) / rel);
    std::string found;
    for (std::string line; found.empty() && std::getline(in, line);) {
      std::smatch m;
      if (!std::regex_search(line, m, include_re)) continue;
      const std::string h = m[1];
      if (h.rfind("torch/", 0) == 0 || h.rfind("ATen/", 0) == 0 || h.rfind("c10/", 0) == 0) found = h;
      else if (fs::exists(fs::path(KILN_SOURCE_DIR) / h)) {
        const std::string via = reaches(h, seen);
        if (!via.empty()) found = h + " -> " + via;
      }
    }
    return memo[rel] = found;
  };
  std::vector<std::string> found;
  for (const auto& rel : source_files({"engine/lowering", "engine/fusion", "engine/codegen"})) {
    std::set<std::string> seen;
    const std::string via = reaches(rel, seen);
    if (!via.empty()) found.push_back(rel + " -> " + via);
  }
  std::ostringstream list;
  for (const auto& f : found) list << "  " << f << "\n";
  EXPECT_TRUE(found.empty()) << "LibTorch reached from lowering, fusion or codegen:\n" << list.str();
}
