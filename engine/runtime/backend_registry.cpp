#include <dlfcn.h>

#include <map>
#include <mutex>

#include "engine/base/error.h"
#include "engine/runtime/backend.h"

namespace kiln::runtime {

namespace {

std::map<std::string, BackendFactory>& registry() {
  static std::map<std::string, BackendFactory> r;
  return r;
}

std::recursive_mutex& registry_mutex() {
  static std::recursive_mutex m;
  return m;
}

}  // namespace

void register_backend(const std::string& name, BackendFactory factory) {
  std::lock_guard<std::recursive_mutex> lock(registry_mutex());
  registry()[name] = std::move(factory);
}

std::vector<std::string> backend_names() {
  std::lock_guard<std::recursive_mutex> lock(registry_mutex());
  std::vector<std::string> names;
  for (const auto& [n, f] : registry()) names.push_back(n);
  return names;
}

std::unique_ptr<Backend> make_backend(const std::string& name) {
  std::lock_guard<std::recursive_mutex> lock(registry_mutex());
  auto it = registry().find(name);
  if (it == registry().end()) {
    std::string known;
    for (const auto& [n, f] : registry()) known += (known.empty() ? "" : ", ") + n;
    throw Error("backend '" + name + "' is not known (known: " + known + "; load others with --plugin FILE.so)");
  }
  return it->second();
}

void load_backend_plugin(const std::string& path) {
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!h) throw Error(path + ": cannot load the backend plugin: " + ::dlerror());
  using RegisterFn = void (*)();
  auto fn = reinterpret_cast<RegisterFn>(::dlsym(h, "kiln_register_backends"));
  if (!fn) throw Error(path + ": not a Kiln backend plugin (no kiln_register_backends symbol)");
  fn();
}

}  // namespace kiln::runtime
