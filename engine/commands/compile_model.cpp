#include "engine/commands/compile_model.h"
#include "engine/runtime/float_precision.h"


#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/backends/builtin.h"
#include "engine/base/error.h"
#include "engine/base/json_text.h"
#include "engine/runtime/captured_runtime.h"
#include "engine/runtime/compare_values.h"
#include "engine/runtime/example_inputs.h"
#include "engine/model/scoped_print_handler.h"

namespace kiln::runtime {

namespace fs = std::filesystem;

namespace {

void write_dumps(const std::string& dir, const CompileResult& r) {
  for (const auto& reg : r.regions) {
    std::string id = reg.compile_id;
    std::string sub;
    for (char c : id)
      if (std::isdigit(static_cast<unsigned char>(c)) || c == '/') sub += c == '/' ? '_' : c;
    fs::path d = fs::path(dir) / ("region_" + sub);
    std::error_code ec;
    fs::create_directories(d, ec);
    if (ec) throw Error(dir + ": cannot create the dump folder (" + ec.message() + ")");
    for (const auto& s : reg.artifacts.stages) {
      std::ofstream out(d / s.file);
      out << s.text;
      if (!out.flush()) throw Error((d / s.file).string() + ": cannot write the stage dump");
    }
  }
}

}  // namespace

CompileResult compile_model(const model::Model& model, const std::vector<InputSpec>& inputs,
                            const capture::CompileOptions& options, const std::string& dump_dir, int checks) {
  backends::register_builtin_backends();
  CompileResult r;
  r.model = model.path();
  r.backend = options.backend;
  r.mode = options.mode;
  r.cuda_build_arch = options.cuda_build_arch;
  r.inputs = inputs;
  auto names = model.forward_arg_names();
  if (names.size() != inputs.size())
    throw Error(model.path() + ": forward takes " + std::to_string(names.size()) + " input(s), " +
                std::to_string(inputs.size()) + " given");
  CapturedRuntime rt(model, options);
  std::ostringstream printed;
  bool all_ok = true;
  const bool tf32 = tf32_in_effect(model);
  if (model.device() != "cpu") r.precision = float32_precision_text();
  {
    model::ScopedPrintHandler quiet;
    for (int call = 0; call < std::max(1, checks); ++call) {
      auto x = make_inputs(inputs);
      if (model.device() != "cpu")
        for (auto& t : x) t = t.to(torch::Device(model.device()));
      std::vector<c10::IValue> args(x.begin(), x.end());
      torch::NoGradGuard g;
      auto ref = eager_forward(const_cast<torch::jit::Module&>(model.impl->module), args, model.path(), inputs);
      auto t0 = std::chrono::steady_clock::now();
      std::vector<c10::IValue> outs;
      try {
        outs = rt.run(x, &printed);
      } catch (const Error& e) {
        throw Error(model.path() + ": compiled forward failed: " + e.what());
      } catch (const c10::Error& e) {  // LibTorch refusing an op after a region's first run (a first run's error
                                       // already runs the region eagerly) or in the eager run: this model's error
        throw Error(model.path() + ": compiled forward failed: " + e.what_without_backtrace());
      }
      if (call == 0) r.capture_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      // Every output, by the one measure and the one rule of runtime/compare_values.h.
      c10::IValue actual = outs.size() == 1 ? outs[0] : c10::IValue(c10::ivalue::Tuple::create(outs));
      Tolerance tol = tolerance_for(ref, tf32);
      ValueError err = value_error(compare_values("output", actual, ref, tol.rtol, tol.atol, tol.scale_atol));
      r.max_abs_error = std::max(r.max_abs_error, err.max_abs);
      r.max_rel_error = std::max(r.max_rel_error, err.max_rel);
      r.tolerance = std::max(r.tolerance, tol.rtol);
      r.atol = std::max(r.atol, tol.atol);
      all_ok = all_ok && err.ok;
      if (r.mismatch.empty() && !err.problem.empty()) r.mismatch = err.problem;
      r.eager_constant = (call == 0 || r.eager_constant) && floating_leaves_constant(ref);
      ++r.checks;
    }
  }
  r.graph_breaks = static_cast<int>(rt.partition().breaks.size());
  for (const auto& info : rt.regions()) {
    const auto& arts = rt.artifacts(info.index);
    for (size_t k = 0; k < info.entries.size() && k < arts.size(); ++k) {
      RegionCompileReport rep;
      rep.region = info.index;
      rep.compile_id = info.entries[k].compile_id;
      rep.graph_ops = static_cast<int>(info.entries[k].graph.call_nodes().size());
      rep.artifacts = arts[k];
      rep.artifacts.stage_ms.insert(rep.artifacts.stage_ms.begin(), {"capture", info.entries[k].compile_ms});
      r.compiler_invocations += arts[k].compiler_invocations;
      r.cache_hits += arts[k].cache_hit ? 1 : 0;
      r.regions.push_back(std::move(rep));
    }
  }
  r.within_tolerance = all_ok && r.checks > 0;
  if (!dump_dir.empty()) write_dumps(dump_dir, r);
  return r;
}

std::string compile_text(const CompileResult& r) {
  std::ostringstream os;
  os << "model     " << r.model << "\nbackend   " << r.backend << " (mode " << r.mode << ")\n";
  os << "regions   " << r.regions.size() << " compiled, " << r.graph_breaks << " graph break"
     << (r.graph_breaks == 1 ? "" : "s") << "\n";
  for (const auto& reg : r.regions) {
    const auto& a = reg.artifacts;
    os << "\nRegion " << reg.compile_id << ": " << reg.graph_ops << " graph ops -> " << a.kernels.size() << " kernel"
       << (a.kernels.size() == 1 ? "" : "s") << ", " << a.externs.size() << " extern call"
       << (a.externs.size() == 1 ? "" : "s") << ", " << a.fallbacks.size() << " fallback"
       << (a.fallbacks.size() == 1 ? "" : "s") << (a.cache_hit ? "  (kernel library from the disk cache)" : "") << "\n";
    if (!a.note.empty()) os << "  note: " << a.note << "\n";
    for (const auto& k : a.kernels) {
      os << "  kernel " << k.name << " fuses " << k.nodes.size() << ":";
      for (const auto& n : k.nodes) os << " " << n;
      if (k.registers > 0) os << "  (" << k.registers << " registers)";
      os << "\n";
    }
    // Functions that keep local memory per thread (max-autotune's forms among them): ptxas ran out of registers or
    // a local array is indexed at run time; either costs memory traffic the registers would not.
    std::string local;
    int with_local = 0;
    for (const auto& f : a.function_resources)
      if (f.stack_bytes > 0) {
        if (++with_local <= 8)
          local += (local.empty() ? "" : ", ") + f.function + " " + std::to_string(f.stack_bytes) + " B (" +
                   std::to_string(f.registers) + " registers)";
      }
    if (with_local > 0)
      os << "  local memory per thread (spilled registers or a local array) in " << with_local << " of "
         << a.function_resources.size() << " functions: " << local << (with_local > 8 ? ", ..." : "") << "\n";
    for (const auto& e : a.externs) os << "  extern " << e << "\n";
    for (const auto& f : a.fallbacks) os << "  fallback " << f << "\n";
    os << "  compile ms:";
    double total = 0;
    for (const auto& [stage, ms] : a.stage_ms) {
      char buf[64];
      std::snprintf(buf, sizeof buf, " %s %.1f", stage.c_str(), ms);
      os << buf;
      total += ms;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, " (total %.1f)", total);
    os << buf << "\n";
    if (!a.compile_unit_ms.empty()) {
      double sum = 0, slowest = 0;
      for (double ms : a.compile_unit_ms) sum += ms, slowest = std::max(slowest, ms);
      char line[200];
      std::snprintf(line, sizeof line, "  compiler: %zu unit%s in %d process%s, %.1f ms of compiler time, slowest unit %.1f ms",
                    a.compile_unit_ms.size(), a.compile_unit_ms.size() == 1 ? "" : "s", a.compile_workers,
                    a.compile_workers == 1 ? "" : "es", sum, slowest);
      os << line;
      if (a.compile_assembled > 0)
        os << "; " << a.compile_assembled << " of them only assembled (the same code as another kernel, its PTX renamed)";
      os << "\n";
    }
  }
  char line[256];
  std::snprintf(line, sizeof line,
                "\ncheck vs LibTorch eager over %d call%s with fresh random inputs: max abs %.3g, max rel %.3g "
                "(rtol %.0e, atol %.0e) %s\n",
                r.checks, r.checks == 1 ? "" : "s", r.max_abs_error, r.max_rel_error, r.tolerance, r.atol,
                r.within_tolerance ? "OK" : "MISMATCH");
  os << line;
  if (!r.precision.empty()) os << "  under " << r.precision << (r.tolerance > 1e-4 && r.tolerance < 1e-2 ? " (TF32 tolerance)" : "") << "\n";
  if (!r.mismatch.empty()) os << "  " << r.mismatch << "\n";
  if (r.eager_constant)
    os << "  WARNING: eager's outputs are constant on every checked call (untrained zero weights?): this check "
          "cannot tell a right kernel from a wrong one; use weights that make the output depend on the input\n";
  if (!r.cuda_build_arch.empty())
    os << "  the regions ran eagerly here: their CUDA kernels were built for " << r.cuda_build_arch
       << ", not run, so this check says nothing of them\n";
  bool cuda = false;
  for (const auto& reg : r.regions)
    for (const auto& k : reg.artifacts.kernels) cuda |= k.language == "cuda";
  os << (cuda ? "CUDA" : "C++") << " compiler invocations: " << r.compiler_invocations << ", disk cache hits: " << r.cache_hits
     << "\n";
  return os.str();
}

std::string compile_json(const CompileResult& r) {
  using nlohmann::ordered_json;
  ordered_json j = {{"model", r.model}, {"backend", r.backend}, {"mode", r.mode}, {"graph_breaks", r.graph_breaks}};
  ordered_json regs = ordered_json::array();
  for (const auto& reg : r.regions) {
    ordered_json kernels = ordered_json::array();
    for (const auto& k : reg.artifacts.kernels) {
      kernels.push_back({{"name", k.name}, {"nodes", k.nodes}});
      if (k.registers > 0) kernels.back()["registers"] = k.registers;
    }
    ordered_json functions = ordered_json::array();
    for (const auto& f : reg.artifacts.function_resources)
      functions.push_back({{"name", f.function}, {"registers", f.registers}, {"stack_bytes", f.stack_bytes}});
    ordered_json ms = ordered_json::object();
    for (const auto& [s, v] : reg.artifacts.stage_ms) ms[s] = v;
    ordered_json units = ordered_json::array();
    for (double v : reg.artifacts.compile_unit_ms) units.push_back(v);
    ordered_json decisions = ordered_json::array();
    for (const auto& d : reg.artifacts.decisions)
      decisions.push_back({{"first", d.first}, {"second", d.second}, {"fused", d.fused}, {"reason", d.reason}});
    regs.push_back({{"compile_id", reg.compile_id}, {"graph_ops", reg.graph_ops}, {"kernels", kernels},
                    {"externs", reg.artifacts.externs}, {"fallbacks", reg.artifacts.fallbacks},
                    {"compile_ms", ms}, {"compiler_unit_ms", units}, {"compiler_processes", reg.artifacts.compile_workers},
                    {"compiler_units_assembled", reg.artifacts.compile_assembled},
                    {"cache_hit", reg.artifacts.cache_hit}, {"note", reg.artifacts.note},
                    {"fusion_decisions", decisions}, {"functions", functions}});
  }
  j["regions"] = regs;
  j["check"] = {{"calls", r.checks}, {"max_abs_error", r.max_abs_error}, {"max_rel_error", r.max_rel_error},
                {"rtol", r.tolerance}, {"atol", r.atol}, {"ok", r.within_tolerance}, {"precision", r.precision}};
  if (!r.mismatch.empty()) j["check"]["mismatch"] = r.mismatch;
  if (r.eager_constant) j["check"]["eager_constant"] = true;
  j["compiler_invocations"] = r.compiler_invocations;
  if (!r.cuda_build_arch.empty()) j["cuda_build_arch"] = r.cuda_build_arch;
  j["cache_hits"] = r.cache_hits;
  return safe_dump(j, 2);
}

}  // namespace kiln::runtime
