#include "engine/codegen/cuda/nvrtc_compiler.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "engine/base/error.h"
#include "engine/base/kernel_cache.h"
#include "engine/base/sha256.h"
#include "engine/codegen/cuda/nvrtc_run.h"

extern char** environ;

namespace kiln::codegen {

namespace fs = std::filesystem;

namespace {

// NVRTC runs one compile at a time per process anyway: Kiln's threads take turns.
std::mutex& nvrtc_mutex() {
  static std::mutex m;
  return m;
}

// A unit's entry in the cache folder: keyed by its source, the architecture and NVRTC's version.
fs::path cache_entry(const fs::path& dir, const std::string& source, const std::string& arch, const std::string& version) {
  std::string key = sha256_hex(source + "\n" + arch + "\n" + version).substr(0, 32);
  return dir / (key + "." + arch + ".cubin");
}

unsigned worker_count(unsigned asked) {
  unsigned n = asked ? asked : std::min(16u, std::max(1u, std::thread::hardware_concurrency()));
  if (const char* env = std::getenv("KILN_NVRTC_WORKERS"); env && *env) {
    char* end = nullptr;
    long v = std::strtol(env, &end, 10);
    if (end && *end == '\0' && v >= 0 && v <= 256) n = static_cast<unsigned>(v);
  }
  return n;
}

// A worker binary Kiln may run: a regular executable file owned by root or this user and writable by
// no one else (what it compiles is loaded and run as code).
bool trusted_executable(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || !(st.st_mode & S_IXUSR)) return false;
  if (st.st_uid != 0 && st.st_uid != ::geteuid()) return false;
  return (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

// kiln-nvrtc-worker: $KILN_NVRTC_WORKER, else beside this executable (kiln-model in libexec/kiln or the
// build's app/), else in libexec/kiln seen from bin/ (kiln-gui), else the build tree's when this
// executable lives in that build tree (tests, benchmarks). "" when none is found: compile here.
fs::path worker_path() {
  if (const char* env = std::getenv("KILN_NVRTC_WORKER"); env && *env)
    return trusted_executable(env) ? fs::path(env) : fs::path();
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  const char* name = "kiln-nvrtc-worker";
  std::vector<fs::path> candidates = {self.parent_path() / name};
#ifdef KILN_LIBEXEC_FROM_BIN
  candidates.push_back(self.parent_path() / KILN_LIBEXEC_FROM_BIN / name);
#endif
#ifdef KILN_BUILD_DIR
  std::string build = KILN_BUILD_DIR;
  if (self.string().rfind(build + "/", 0) == 0) candidates.push_back(fs::path(build) / "app" / name);
#endif
  for (const auto& c : candidates)
    if (trusted_executable(c)) return c;
  return {};
}

// An anonymous file for a worker, not inherited by anything this process starts.
int anonymous_file() { return static_cast<int>(syscall(SYS_memfd_create, "kiln-nvrtc", 1u /* MFD_CLOEXEC */)); }

// The chunks (unit_chunks) shared among `n` spawned workers; fills what they compiled into out/done.
// Returns the number of workers that ran. Any failure (no worker binary, no anonymous file, a spawn
// refused, a worker that dies or outlives its time) only leaves units undone.
int compile_in_workers(const fs::path& worker, const std::vector<UnitChunk>& chunks, const std::vector<size_t>& costs,
                       unsigned n, const std::string& arch, std::vector<CubinResult>& out, std::vector<bool>& done) {
  struct Worker {
    pid_t pid = -1;
    int in = -1, out = -1;
  };
  std::vector<Worker> workers;
  const std::string path = worker.string();
  const std::vector<std::vector<size_t>> shares = share_units(costs, n);
  size_t unit_count = 0;
  for (const auto& c : chunks) unit_count += 1 + c.members.size();
  for (unsigned w = 0; w < n; ++w) {
    std::vector<UnitChunk> mine;
    for (size_t i : shares[w]) mine.push_back(chunks[i]);
    Worker wk;
    wk.in = anonymous_file();
    wk.out = anonymous_file();
    // Descriptors 3 and 4 are the worker's: ours are moved above them first, so dup2 never maps one onto itself.
    for (int* fd : {&wk.in, &wk.out})
      if (*fd >= 0 && *fd <= 4) {
        int moved = fcntl(*fd, F_DUPFD_CLOEXEC, 10);
        ::close(*fd);
        *fd = moved;
      }
    bool ok = wk.in >= 0 && wk.out >= 0 && write_unit_sources(wk.in, arch, mine);
    posix_spawn_file_actions_t actions;
    if (ok && posix_spawn_file_actions_init(&actions) == 0) {
      posix_spawn_file_actions_adddup2(&actions, wk.in, 3);
      posix_spawn_file_actions_adddup2(&actions, wk.out, 4);
      // Nothing a worker prints is needed (a unit it fails on compiles here, with NVRTC's message) and
      // sixteen copies of a loader error would bury the command's own output.
      posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
      posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
      char arg0[] = "kiln-nvrtc-worker", arg1[] = "--kiln-nvrtc-worker";
      char* argv[] = {arg0, arg1, nullptr};
      ok = posix_spawn(&wk.pid, path.c_str(), &actions, nullptr, argv, environ) == 0;
      posix_spawn_file_actions_destroy(&actions);
    } else {
      ok = false;
    }
    if (!ok) {
      if (wk.in >= 0) ::close(wk.in);
      if (wk.out >= 0) ::close(wk.out);
      break;
    }
    workers.push_back(wk);
  }
  // A worker is given what one process would need for every unit, with room: past that it is stopped
  // and its units compile here.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120 + 10 * unit_count);
  std::vector<bool> finished(workers.size(), false);
  size_t running = workers.size();
  while (running > 0) {
    bool any = false;
    for (size_t w = 0; w < workers.size(); ++w) {
      if (finished[w]) continue;
      pid_t r = waitpid(workers[w].pid, nullptr, WNOHANG);
      if (r == workers[w].pid || (r < 0 && errno != EINTR)) {
        finished[w] = true;
        --running;
        any = true;
      }
    }
    if (running == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      for (size_t w = 0; w < workers.size(); ++w)
        if (!finished[w]) {
          kill(workers[w].pid, SIGKILL);
          waitpid(workers[w].pid, nullptr, 0);
        }
      break;
    }
    if (!any) std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  for (const auto& w : workers) {
    read_unit_results(w.out, out, done);
    ::close(w.in);
    ::close(w.out);
  }
  return static_cast<int>(workers.size());
}

}  // namespace

std::vector<std::vector<size_t>> share_units(const std::vector<size_t>& sizes, unsigned n) {
  std::vector<std::vector<size_t>> shares(std::max(1u, n));
  std::vector<size_t> order(sizes.size()), load(shares.size(), 0);
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return sizes[a] > sizes[b]; });
  for (size_t i : order) {
    const size_t w = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    shares[w].push_back(i);
    load[w] += sizes[i];
  }
  for (auto& s : shares) std::sort(s.begin(), s.end());
  return shares;
}

CubinResult compile_cuda(const std::string& source, const std::string& arch) {
  return compile_cuda_units({source}, arch, 1).units.at(0);  // one unit: compiled here
}

namespace {

// Unit i's group: its own (a negative number no group has) without groups.
int group_of(const UnitGroups* groups, size_t i) {
  return groups && i < groups->group.size() ? groups->group[i] : -1 - static_cast<int>(i);
}

// What a chunk costs one process: its first unit compiled whole, the others assembled.
double chunk_cost(const std::vector<size_t>& chunk, const std::vector<size_t>& sizes) {
  double cost = 0;
  for (size_t k = 0; k < chunk.size(); ++k) cost += (k == 0 ? 1.0 : kAssemblyShare) * static_cast<double>(sizes[chunk[k]]);
  return cost;
}

}  // namespace

std::vector<std::vector<size_t>> unit_chunks(const std::vector<size_t>& misses, const std::vector<size_t>& sizes,
                                             const UnitGroups* groups, double bound) {
  std::vector<std::vector<size_t>> chunks;
  std::map<int, std::vector<size_t>> by_group;  // group -> its missing units, in order
  std::vector<int> order;                       // groups in the order of their first missing unit
  for (size_t i : misses) {
    const int g = group_of(groups, i);
    if (!by_group.count(g)) order.push_back(g);
    by_group[g].push_back(i);
  }
  for (int g : order) {
    const auto& units = by_group[g];
    std::vector<size_t> chunk;
    for (size_t i : units) {
      if (!chunk.empty() && chunk_cost(chunk, sizes) + kAssemblyShare * static_cast<double>(sizes[i]) > bound) {
        chunks.push_back(std::move(chunk));
        chunk.clear();
      }
      chunk.push_back(i);
    }
    if (!chunk.empty()) chunks.push_back(std::move(chunk));
  }
  return chunks;
}

CubinSet compile_cuda_units(const std::vector<std::string>& units, const std::string& arch, unsigned workers,
                            const UnitGroups* groups) {
  CubinSet out;
  out.units.resize(units.size());
  auto t0 = std::chrono::steady_clock::now();
  std::vector<bool> done(units.size(), false);
  std::vector<fs::path> entries(units.size());
  std::vector<size_t> misses;
  const fs::path dir = open_kernel_cache("cuda");
  const std::string version = nvrtc_version();
  for (size_t i = 0; i < units.size(); ++i) {
    entries[i] = cache_entry(dir, units[i], arch, version);
    CacheLoad cached = cache_load_verified(entries[i]);
    if (cached.bytes && !cached.bytes->empty()) {
      out.units[i].cubin = std::move(*cached.bytes);
      out.units[i].cache_hit = true;
      done[i] = true;
    } else {
      misses.push_back(i);
    }
  }
  if (groups && (groups->group.size() != units.size() || groups->functions.size() != units.size())) groups = nullptr;
  std::vector<size_t> sizes(units.size());
  for (size_t i = 0; i < units.size(); ++i) sizes[i] = units[i].size();
  // Chunks no costlier than the largest unit compiled whole and one assembled beside it, or than an even share
  // of everything with each group's front end run once, whichever is more: sharing never lengthens the
  // slowest worker's work by more than an assembly.
  unsigned n = std::min<size_t>(worker_count(workers), misses.size());
  double largest = 0, shared_total = 0;
  for (const auto& whole : unit_chunks(misses, sizes, groups, 1e300)) {  // each group one chunk: its front end once
    for (size_t i : whole) largest = std::max(largest, static_cast<double>(sizes[i]));
    shared_total += chunk_cost(whole, sizes);
  }
  const double bound = std::max(largest * (1 + kAssemblyShare), shared_total / std::max(1u, n));
  std::vector<UnitChunk> chunks;
  std::vector<size_t> costs;
  for (const auto& c : unit_chunks(misses, sizes, groups, bound)) {
    UnitChunk chunk;
    auto unit = [&](size_t i) { return UnitSource{i, &units[i], groups ? groups->functions[i] : std::vector<std::string>{}}; };
    chunk.first = unit(c[0]);
    for (size_t k = 1; k < c.size(); ++k) chunk.members.push_back(unit(c[k]));
    chunks.push_back(std::move(chunk));
    costs.push_back(static_cast<size_t>(chunk_cost(c, sizes)));
  }
  // Workers pay a process start and NVRTC's own start-up each: worth it from a few units on.
  n = std::min<size_t>(n, chunks.size());
  if (n >= 2 && misses.size() >= 3) {
    fs::path worker = worker_path();
    if (!worker.empty()) {
      out.workers = compile_in_workers(worker, chunks, costs, n, arch, out.units, done);
      for (size_t i : misses)
        if (done[i]) cache_store(entries[i], out.units[i].cubin);
    }
  }
  // What no worker compiled (few units, no worker binary, a worker's failure): here, chunk by chunk in order, so
  // the error thrown is the first failing unit's.
  for (const auto& chunk : chunks) {
    std::vector<const UnitSource*> todo;  // the first of them compiles whole, the others assemble its PTX
    if (!done[chunk.first.index]) todo.push_back(&chunk.first);
    for (const auto& m : chunk.members)
      if (!done[m.index]) todo.push_back(&m);
    if (todo.empty()) continue;
    UnitChunk left;
    left.first = *todo[0];
    for (size_t k = 1; k < todo.size(); ++k) left.members.push_back(*todo[k]);
    std::lock_guard<std::mutex> lock(nvrtc_mutex());
    compile_chunk(left, arch, [&](uint64_t index, CubinResult&& r) {
      out.units[index] = std::move(r);
      done[index] = true;
      cache_store(entries[index], out.units[index].cubin);  // temporaries are unique per process and call
    });
  }
  for (const auto& u : out.units) {
    out.all_cached = out.all_cached && u.cache_hit;
    out.assembled += u.assembled ? 1 : 0;
  }
  out.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace kiln::codegen
