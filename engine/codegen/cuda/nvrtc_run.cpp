#include "engine/codegen/cuda/nvrtc_run.h"

#include <dlfcn.h>
#include <nvrtc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "engine/base/error.h"

namespace kiln::codegen {

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

namespace {

void check(nvrtcResult r, const char* what) {
  if (r != NVRTC_SUCCESS) throw Error(std::string("NVRTC ") + what + " failed: " + nvrtcGetErrorString(r));
}

bool write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool write_blob(int fd, const std::string& s) {
  uint64_t n = s.size();
  return write_all(fd, &n, sizeof n) && write_all(fd, s.data(), s.size());
}

// The whole file, read from its start.
std::string read_whole(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size <= 0) return {};
  std::string all(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < all.size()) {
    ssize_t r = ::pread(fd, all.data() + got, all.size() - got, static_cast<off_t>(got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  all.resize(got);
  return all;
}

// Reads fixed-size values and blobs off a byte string; every read checks what is left.
struct Reader {
  const std::string& all;
  size_t at = 0;
  bool take(void* dst, size_t n) {
    if (all.size() - at < n) return false;
    std::memcpy(dst, all.data() + at, n);
    at += n;
    return true;
  }
  bool blob(std::string& s) {
    uint64_t n = 0;
    if (!take(&n, sizeof n) || all.size() - at < n) return false;
    s.assign(all, at, n);
    at += n;
    return true;
  }
};

}  // namespace

std::string nvrtc_first_errors(const std::string& log) {
  std::vector<std::string> lines;
  std::istringstream in(log);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::string out;
  int taken = 0;
  for (size_t i = 0; i < lines.size() && taken < 6; ++i) {
    if (lines[i].find(": error") == std::string::npos && lines[i].find("error:") == std::string::npos) continue;
    for (size_t j = i; j < lines.size() && j < i + 3 && taken < 6; ++j, ++taken) {
      if (j > i && lines[j].find(": error") != std::string::npos) break;
      out += (out.empty() ? "" : " | ") + lines[j];
    }
  }
  if (!out.empty()) return out;
  for (size_t i = 0; i < lines.size() && i < 6; ++i) out += (out.empty() ? "" : " | ") + lines[i];
  return out;
}

namespace {

CubinResult compile_with(const std::string& source, const std::string& arch, std::string* ptx, bool verbose) {
  CubinResult out;
  auto t0 = std::chrono::steady_clock::now();
  nvrtcProgram prog;
  check(nvrtcCreateProgram(&prog, source.c_str(), "kiln_kernels.cu", 0, nullptr, nullptr), "create");
  std::string arch_opt = "--gpu-architecture=" + arch;
  const char* opts[] = {arch_opt.c_str(), "--std=c++17", "-default-device", "-lineinfo", "-Xptxas=-v"};
  nvrtcResult r = nvrtcCompileProgram(prog, verbose ? 5 : 4, opts);
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  out.log.resize(log_size);
  if (log_size) nvrtcGetProgramLog(prog, out.log.data());
  while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n')) out.log.pop_back();
  if (r != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&prog);
    throw Error("CUDA kernel compilation (NVRTC " + nvrtc_version() + ", " + arch + ") failed: " +
                nvrtc_first_errors(out.log));
  }
  size_t size = 0;
  check(nvrtcGetCUBINSize(prog, &size), "get CUBIN size");
  out.cubin.resize(size);
  check(nvrtcGetCUBIN(prog, out.cubin.data()), "get CUBIN");
  if (ptx) {
    size_t n = 0;
    if (nvrtcGetPTXSize(prog, &n) == NVRTC_SUCCESS && n > 0) {
      ptx->resize(n);
      if (nvrtcGetPTX(prog, ptx->data()) != NVRTC_SUCCESS) ptx->clear();
      while (!ptx->empty() && ptx->back() == '\0') ptx->pop_back();
    } else {
      ptx->clear();
    }
  }
  nvrtcDestroyProgram(&prog);
  out.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

// The first integer after `after` in line, or -1.
int64_t number_after(const std::string& line, size_t after) {
  while (after < line.size() && !std::isdigit(static_cast<unsigned char>(line[after]))) ++after;
  if (after >= line.size()) return -1;
  int64_t v = 0;
  for (; after < line.size() && std::isdigit(static_cast<unsigned char>(line[after])); ++after) {
    if (v > (INT64_MAX - 9) / 10) return -1;
    v = v * 10 + (line[after] - '0');
  }
  return v;
}

// The number just before `unit` in line ("0 bytes spill stores" -> 0), or -1.
int64_t number_before(const std::string& line, const std::string& unit) {
  size_t at = line.find(unit);
  if (at == std::string::npos) return -1;
  size_t end = at;
  while (end > 0 && line[end - 1] == ' ') --end;
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(line[begin - 1]))) --begin;
  if (begin == end || end - begin > 18) return -1;
  return std::stoll(line.substr(begin, end - begin));
}

}  // namespace

CubinResult nvrtc_compile(const std::string& source, const std::string& arch, std::string* ptx) {
  return compile_with(source, arch, ptx, false);
}

std::vector<KernelResources> parse_ptxas_resources(const std::string& log) {
  std::vector<KernelResources> out;
  std::istringstream in(log);
  const std::string props = "Function properties for ";
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("ptxas", 0) != 0) continue;
    if (size_t at = line.find(props); at != std::string::npos) {
      KernelResources k;
      k.function = line.substr(at + props.size());
      while (!k.function.empty() && k.function.back() == ' ') k.function.pop_back();
      out.push_back(std::move(k));
      continue;
    }
    if (out.empty()) continue;
    KernelResources& k = out.back();
    if (line.find("bytes stack frame") != std::string::npos) {
      k.stack_bytes = std::max<int64_t>(0, number_before(line, "bytes stack frame"));
      k.spill_store_bytes = std::max<int64_t>(0, number_before(line, "bytes spill stores"));
      k.spill_load_bytes = std::max<int64_t>(0, number_before(line, "bytes spill loads"));
    } else if (size_t used = line.find("Used "); used != std::string::npos && line.find("registers") != std::string::npos) {
      k.registers = static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(number_after(line, used), 1 << 20)));
      k.shared_bytes = std::max<int64_t>(0, number_before(line, "bytes smem"));
    }
  }
  return out;
}

std::vector<KernelResources> kernel_resources(const std::string& source, const std::string& arch) {
  return parse_ptxas_resources(compile_with(source, arch, nullptr, true).log);
}

namespace {

bool ptx_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$'; }

// nvJitLink's entry points, looked up once: beside the NVRTC this process loaded, else on the loader's path.
struct JitLink {
  using Handle = void*;
  int (*create)(Handle*, uint32_t, const char**) = nullptr;
  int (*add_data)(Handle, int, const void*, size_t, const char*) = nullptr;
  int (*complete)(Handle) = nullptr;
  int (*cubin_size)(Handle, size_t*) = nullptr;
  int (*cubin)(Handle, void*) = nullptr;
  int (*error_log_size)(Handle, size_t*) = nullptr;
  int (*error_log)(Handle, char*) = nullptr;
  int (*destroy)(Handle*) = nullptr;
  std::string missing;  // why it cannot be used; "" when it can
};
const JitLink& jit_link() {
  static const JitLink j = [] {
    JitLink out;
    void* lib = nullptr;
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) && info.dli_fname) {
      std::string dir = info.dli_fname;
      dir = dir.substr(0, dir.find_last_of('/') + 1);
      lib = dlopen((dir + "libnvJitLink.so.13").c_str(), RTLD_NOW | RTLD_LOCAL);
    }
    if (!lib) lib = dlopen("libnvJitLink.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      out.missing = "libnvJitLink.so.13 not found";
      return out;
    }
    auto sym = [&](const char* name) { return dlsym(lib, name); };
    out.create = reinterpret_cast<decltype(out.create)>(sym("__nvJitLinkCreate_13_0"));
    out.add_data = reinterpret_cast<decltype(out.add_data)>(sym("__nvJitLinkAddData_13_0"));
    out.complete = reinterpret_cast<decltype(out.complete)>(sym("__nvJitLinkComplete_13_0"));
    out.cubin_size = reinterpret_cast<decltype(out.cubin_size)>(sym("__nvJitLinkGetLinkedCubinSize_13_0"));
    out.cubin = reinterpret_cast<decltype(out.cubin)>(sym("__nvJitLinkGetLinkedCubin_13_0"));
    out.error_log_size = reinterpret_cast<decltype(out.error_log_size)>(sym("__nvJitLinkGetErrorLogSize_13_0"));
    out.error_log = reinterpret_cast<decltype(out.error_log)>(sym("__nvJitLinkGetErrorLog_13_0"));
    out.destroy = reinterpret_cast<decltype(out.destroy)>(sym("__nvJitLinkDestroy_13_0"));
    if (!out.create || !out.add_data || !out.complete || !out.cubin_size || !out.cubin || !out.error_log_size ||
        !out.error_log || !out.destroy)
      out.missing = "libnvJitLink.so.13 lacks the 13.0 entry points";
    return out;
  }();
  return j;
}

constexpr int kInputPtx = 2;  // NVJITLINK_INPUT_PTX

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += n + "\n";
  return s;
}
std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

bool write_unit(int fd, const UnitSource& u) {
  return write_all(fd, &u.index, sizeof u.index) && write_blob(fd, *u.source) && write_blob(fd, joined(u.functions));
}

}  // namespace

std::optional<std::string> rename_ptx_functions(const std::string& ptx, const std::vector<std::string>& from,
                                                const std::vector<std::string>& to) {
  if (from.size() != to.size()) return std::nullopt;
  std::map<std::string, std::string> names;
  for (size_t i = 0; i < from.size(); ++i) names[from[i]] = to[i];
  // An identifier that is a function's name, or its parameter's: the name, "_param_", digits.
  auto mapped = [&](const std::string& id) -> std::optional<std::string> {
    if (auto it = names.find(id); it != names.end()) return it->second;
    size_t p = id.rfind("_param_");
    if (p == std::string::npos || p + 7 == id.size()) return std::nullopt;
    for (size_t k = p + 7; k < id.size(); ++k)
      if (!std::isdigit(static_cast<unsigned char>(id[k]))) return std::nullopt;
    if (auto it = names.find(id.substr(0, p)); it != names.end()) return it->second + id.substr(p);
    return std::nullopt;
  };
  std::string out;
  out.reserve(ptx.size() + 64);
  size_t i = 0;
  while (i < ptx.size()) {
    if (ptx_ident_char(ptx[i]) || ptx[i] == '%') {
      size_t j = i + 1;
      while (j < ptx.size() && ptx_ident_char(ptx[j])) ++j;
      std::string id = ptx.substr(i, j - i);
      auto m = mapped(id);
      out += m ? *m : id;
      i = j;
      continue;
    }
    out += ptx[i++];
  }
  // Nothing of the old names may be left (a name inside a string of the debug sections, say): refused.
  std::set<std::string> now_named(to.begin(), to.end());
  for (const auto& f : from) {
    if (now_named.count(f)) continue;  // a name both lists hold (swapped names): it is a new one now
    for (size_t at = out.find(f); at != std::string::npos; at = out.find(f, at + 1)) {
      bool left = at == 0 || !ptx_ident_char(out[at - 1]);
      size_t end = at + f.size();
      bool right = end >= out.size() || !ptx_ident_char(out[end]) || out.compare(end, 7, "_param_") == 0;
      if (left && right) return std::nullopt;
    }
  }
  return out;
}

CubinResult assemble_ptx(const std::string& ptx, const std::string& arch) {
  const JitLink& j = jit_link();
  if (!j.missing.empty()) throw Error("CUDA kernel assembly: " + j.missing);
  CubinResult out;
  auto t0 = std::chrono::steady_clock::now();
  std::string arch_opt = "-arch=" + arch;
  const char* opts[] = {arch_opt.c_str(), "-lineinfo"};
  JitLink::Handle h = nullptr;
  if (j.create(&h, 2, opts) != 0 || !h) throw Error("CUDA kernel assembly: nvJitLink could not start");
  auto fail = [&](const char* what) {
    std::string log;
    size_t n = 0;
    if (j.error_log_size(h, &n) == 0 && n > 0) {
      log.resize(n);
      j.error_log(h, log.data());
      while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    }
    j.destroy(&h);
    throw Error(std::string("CUDA kernel assembly (nvJitLink, ") + arch + ") " + what + " failed: " +
                nvrtc_first_errors(log));
  };
  if (j.add_data(h, kInputPtx, ptx.data(), ptx.size(), "kiln_kernels.ptx") != 0) fail("reading the PTX");
  if (j.complete(h) != 0) fail("assembling");
  size_t size = 0;
  if (j.cubin_size(h, &size) != 0 || size == 0) fail("getting the CUBIN");
  out.cubin.resize(size);
  if (j.cubin(h, out.cubin.data()) != 0) fail("getting the CUBIN");
  j.destroy(&h);
  out.assembled = true;
  out.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

void compile_chunk(const UnitChunk& chunk, const std::string& arch,
                   const std::function<void(uint64_t, CubinResult&&)>& done) {
  std::string ptx;
  done(chunk.first.index, nvrtc_compile(*chunk.first.source, arch, chunk.members.empty() ? nullptr : &ptx));
  for (const auto& m : chunk.members) {
    CubinResult r;
    bool made = false;
    if (!ptx.empty())
      if (auto renamed = rename_ptx_functions(ptx, chunk.first.functions, m.functions)) try {
          r = assemble_ptx(*renamed, arch);
          made = true;
        } catch (const Error&) {
        }
    if (!made) r = nvrtc_compile(*m.source, arch);
    done(m.index, std::move(r));
  }
}

bool write_unit_sources(int fd, const std::string& arch, const std::vector<UnitChunk>& chunks) {
  if (!write_blob(fd, arch)) return false;
  for (const auto& c : chunks) {
    uint64_t members = c.members.size();
    if (!write_unit(fd, c.first) || !write_all(fd, &members, sizeof members)) return false;
    for (const auto& m : c.members)
      if (!write_unit(fd, m)) return false;
  }
  return true;
}

void read_unit_results(int fd, std::vector<CubinResult>& out, std::vector<bool>& done) {
  std::string all = read_whole(fd);
  Reader in{all};
  for (;;) {
    uint64_t index = 0;
    uint8_t assembled = 0;
    CubinResult r;
    if (!in.take(&index, sizeof index) || !in.take(&r.compile_ms, sizeof r.compile_ms) ||
        !in.take(&assembled, sizeof assembled) || !in.blob(r.cubin) || !in.blob(r.log) || index >= out.size() ||
        r.cubin.empty())
      return;
    r.assembled = assembled != 0;
    out[index] = std::move(r);
    done[index] = true;
  }
}

int nvrtc_worker_main(int in_fd, int out_fd) {
  std::string all = read_whole(in_fd);
  Reader in{all};
  std::string arch;
  if (!in.blob(arch) || arch.empty()) return 2;
  for (;;) {
    auto read_unit = [&](UnitSource& u, std::string& src) {
      std::string fns;
      if (!in.take(&u.index, sizeof u.index) || !in.blob(src) || !in.blob(fns)) return false;
      u.functions = split_lines(fns);
      return true;
    };
    UnitChunk chunk;
    std::string first_source;
    uint64_t members = 0;
    if (!read_unit(chunk.first, first_source) || !in.take(&members, sizeof members) || members > all.size()) break;
    std::vector<std::string> member_sources(members);
    chunk.members.resize(members);
    bool whole = true;
    for (uint64_t k = 0; k < members && whole; ++k) whole = read_unit(chunk.members[k], member_sources[k]);
    if (!whole) break;
    chunk.first.source = &first_source;
    for (uint64_t k = 0; k < members; ++k) chunk.members[k].source = &member_sources[k];
    bool written = true;
    try {
      compile_chunk(chunk, arch, [&](uint64_t index, CubinResult&& r) {
        uint8_t assembled = r.assembled ? 1 : 0;
        written = written && write_all(out_fd, &index, sizeof index) &&
                  write_all(out_fd, &r.compile_ms, sizeof r.compile_ms) && write_all(out_fd, &assembled, 1) &&
                  write_blob(out_fd, r.cubin) && write_blob(out_fd, r.log);
      });
    } catch (const std::exception&) {
      // the engine compiles what is left again, for the error
    }
    if (!written) return 3;
  }
  return 0;
}

}  // namespace kiln::codegen
