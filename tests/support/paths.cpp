#include "tests/support/paths.h"

#include "engine/base/output_file.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/base/error.h"

namespace kiln::test {

namespace fs = std::filesystem;

std::string example(const std::string& name) { return std::string(KILN_EXAMPLES) + "/" + name; }
std::string data(const std::string& name) { return std::string(KILN_TEST_DATA) + "/" + name; }
std::string binary(const std::string& name) { return std::string(KILN_BINARY_DIR) + "/" + name; }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

namespace {

// The directories temp_dir() made, removed when the test process that made them exits (not by a
// forked child that exits normally). A full run writes gigabytes of logs and sessions: left behind,
// they fill the disk, or the memory where /tmp is a tmpfs. KILN_KEEP_TEST_FILES=1 keeps them.
struct TempDirs {
  pid_t owner = ::getpid();
  std::vector<std::string> made;
  ~TempDirs() {
    const char* keep = std::getenv("KILN_KEEP_TEST_FILES");
    if (::getpid() != owner || (keep && std::string(keep) == "1")) return;
    for (const auto& dir : made) remove_tree(dir);
  }
};

TempDirs& temp_dirs() {
  static TempDirs dirs;
  return dirs;
}

}  // namespace

std::string temp_dir() {
  static int counter = 0;
  fs::path p = fs::temp_directory_path() /
               ("kiln-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  remove_tree(p.string());  // not fs::remove_all: see engine/base/output_file.h
  fs::create_directories(p);
  temp_dirs().made.push_back(p.string());
  return p.string();
}

std::string write_temp_file(const std::string& name, const std::string& text) {
  std::string path = temp_dir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::string check_golden(const std::string& name, const std::string& actual) {
  std::string path = data("golden/" + name);
  const char* update = std::getenv("KILN_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << actual;
    return "";
  }
  std::string expected = read_file(path);
  if (expected == actual) return "";
  std::istringstream a(actual), e(expected);
  std::string la, le;
  int line = 1;
  while (true) {
    bool ga = static_cast<bool>(std::getline(a, la)), ge = static_cast<bool>(std::getline(e, le));
    if (!ga && !ge) break;
    if (!ga || !ge || la != le)
      return "golden " + path + " differs at line " + std::to_string(line) + "\n  expected: " + (ge ? le : "<end>") +
             "\n  actual:   " + (ga ? la : "<end>") + "\n(rerun with KILN_UPDATE_GOLDEN=1 to accept)";
    ++line;
  }
  return "golden " + path + " differs (line endings?)";
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

int run_command(const std::string& command, std::string& output) {
  output.clear();
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) output.append(buf, n);
  int status = ::pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int in_child(const std::function<int()>& f) {
  pid_t child = fork();
  if (child < 0) return -1;
  if (child == 0) {
    int code = 1;
    try {
      code = f();
    } catch (...) {
      code = 2;
    }
    _exit(code);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int in_child_with_address_room(size_t room_bytes, const std::function<int()>& f) {
  return in_child([&] {
    long vm_kb = 0;
    {
      std::ifstream st("/proc/self/status");
      for (std::string line; std::getline(st, line);)
        if (line.rfind("VmSize:", 0) == 0) vm_kb = std::atol(line.c_str() + 7);
    }
    rlimit lim{};
    lim.rlim_cur = lim.rlim_max = static_cast<rlim_t>(vm_kb) * 1024 + room_bytes;
    if (setrlimit(RLIMIT_AS, &lim) != 0) return 125;
    return f();
  });
}

}  // namespace kiln::test
