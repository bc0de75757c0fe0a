#include "engine/report/observations.h"

#include "engine/report/memory_view.h"
#include "engine/report/number_text.h"
#include "engine/report/recompile_history.h"

#include <cmath>
#include <cstdio>
#include <set>

namespace kiln::report {

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// "default" for Kiln's own backend, "default (torchscript)" for a peer.
std::string run_name(const session::Run& r) {
  if (r.backend.empty() || r.backend == "kiln" || (r.mode == "eager" && r.backend == "eager")) return r.mode;
  return r.mode + " (" + r.backend + ")";
}

bool is_ok(const session::Run& r) { return r.status == "ok"; }

const session::Run* find_run(const session::Session& s, const std::string& mode, bool kiln_backend) {
  for (const auto& r : s.runs)
    if (is_ok(r) && r.mode == mode && (!kiln_backend || r.backend.empty() || r.backend == "kiln")) return &r;
  return nullptr;
}

std::string error_text(double e) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0e", e);
  return buf;
}

}  // namespace

std::vector<std::string> observations(const session::Session& s) { return observations(s, run_memory_peaks(s)); }

std::vector<std::string> observations(const session::Session& s, const RunMemoryPeaks& memory) {
  std::vector<std::string> out;
  for (const auto& r : s.runs) {
    if (r.status.rfind("skipped", 0) == 0) {
      std::string why = r.status.size() > 8 ? r.status.substr(r.status.find(':') + 1) : std::string(" no reason given");
      while (!why.empty() && why.front() == ' ') why.erase(0, 1);
      out.push_back("mode " + run_name(r) + " was skipped: " + why);
    } else if (!is_ok(r)) {
      out.push_back("mode " + run_name(r) + " " + r.status);
    }
  }

  const session::Run* eager = find_run(s, "eager", false);
  for (const auto& r : s.runs) {
    if (!is_ok(r) || &r == eager || r.mode == "eager" || !eager) continue;
    const double sp = r.speedup_vs_eager > 0 ? r.speedup_vs_eager
                      : r.latency.median_ms > 0 ? eager->latency.median_ms / r.latency.median_ms
                                                : 0;
    if (sp <= 0) continue;
    const std::string name = run_name(r);
    if (sp < 0.98) {
      std::string line = name + " is slower than eager (" + fmt("%.2fx", sp) + ")";
      if (r.gpu_busy > 0 && r.gpu_busy < 0.5) {
        line += ": the GPU is busy only " + fmt("%.0f", r.gpu_busy * 100) + " % of the time";
        if (r.mode != "reduce-overhead") line += " — try reduce-overhead";
      } else if (r.host_overhead_ms > 0.2 * r.latency.median_ms && r.latency.median_ms > 0) {
        line += ": guards and the interpreter take " + fmt("%.0f", 100 * r.host_overhead_ms / r.latency.median_ms) +
                " % of each iteration";
      }
      out.push_back(line);
    } else if (sp > 1.02) {
      out.push_back(name + " is " + fmt("%.2fx", sp) + " faster than eager");
      const double saved_ms = eager->latency.median_ms - r.latency.median_ms;
      if (r.compile_cold_ms > 0 && saved_ms > 0)
        out.push_back(name + " pays back its " + fmt("%.1f", r.compile_cold_ms) + " ms cold compile after " +
                      fmt("%.0f", std::ceil(r.compile_cold_ms / saved_ms)) + " iterations");
    }
    if (r.host_overhead_ms > 0.2 * r.latency.median_ms && r.latency.median_ms > 0 && sp >= 0.98)
      out.push_back("in " + name + " guards and the interpreter take " +
                    fmt("%.0f", 100 * r.host_overhead_ms / r.latency.median_ms) + " % of each iteration");
  }

  for (const auto& r : s.runs) {
    if (!is_ok(r) || r.mode == "eager") continue;
    const double err = std::max(r.max_rel_error, 0.0);
    if (err > kErrorTolerance)
      out.push_back("max error vs eager " + error_text(err) + " exceeds " + error_text(kErrorTolerance) + " in " +
                    run_name(r));
  }

  if (eager && eager->kernels_per_iter > 0)
    for (const auto& r : s.runs) {
      if (!is_ok(r) || r.mode == "eager" || r.kernels_per_iter <= 0) continue;
      const double saved = eager->kernels_per_iter - r.kernels_per_iter;
      if (saved >= 1)
        out.push_back(run_name(r) + " launches " + fmt("%.0f", r.kernels_per_iter) + " kernels per iteration instead of " +
                      fmt("%.0f", eager->kernels_per_iter) + " (fusion saves " + fmt("%.0f", saved) + ")");
    }
  // Memory: a mode whose measured peak is above eager's (steady state, the allocators' reports).
  if (eager && eager->peak_memory_bytes > 0)
    for (const auto& r : s.runs) {
      if (!is_ok(r) || r.mode == "eager" || r.peak_memory_bytes <= 0) continue;
      const double ratio = static_cast<double>(r.peak_memory_bytes) / static_cast<double>(eager->peak_memory_bytes);
      if (ratio <= 1.05) continue;
      // The largest owners at that run's peak (report/memory_view.h), when the session kept them.
      std::string largest;
      for (const auto& lane : memory.of(r.id)) {
        const auto owners = folded_at_peak(lane);
        for (size_t i = 0; i < owners.size() && i < 3; ++i)
          largest += (largest.empty() ? "" : ", ") + owners[i].first + " " + bytes(owners[i].second);
      }
      out.push_back(run_name(r) + " peaks at " + fmt("%.1f", static_cast<double>(r.peak_memory_bytes) / (1 << 20)) +
                    " MiB of memory, " + fmt("%.0f", 100 * (ratio - 1)) + " % above eager's " +
                    fmt("%.1f", static_cast<double>(eager->peak_memory_bytes) / (1 << 20)) + " MiB" +
                    (largest.empty() ? "" : "; largest at its peak: " + largest));
    }
  const session::Run* def = find_run(s, "default", true);
  const session::Run* ro = find_run(s, "reduce-overhead", true);
  if (def && ro && def->kernels_per_iter - ro->kernels_per_iter >= 1)
    out.push_back("reduce-overhead saves " + fmt("%.0f", def->kernels_per_iter - ro->kernels_per_iter) +
                  " launches per iteration over default");

  if (!s.breaks.empty()) {
    std::set<std::string> sites;
    for (const auto& b : s.breaks) sites.insert(b.info.id + b.info.loc.file + ":" + std::to_string(b.info.loc.line));
    std::set<int> regions;
    for (const auto& r : s.regions) regions.insert(r.region);
    out.push_back(std::to_string(sites.size()) + " distinct graph break(s) split the model into " +
                  std::to_string(regions.size()) + " compiled region(s); Graph breaks lists their lines and hints");
  }
  int recompiles = 0;
  for (const auto& r : s.regions) recompiles += !r.recompile_reason.empty();
  if (recompiles > 0)
    out.push_back(std::to_string(recompiles) + " recompile(s); the recompile history shows which guard failed");
  // The same dimension changing again and again: make it dynamic once instead of recompiling.
  for (const auto& c : dimension_churn(recompile_history(s)))
    if (c.recompiles >= 2) out.push_back(churn_advice(c));
  return out;
}

std::string verdict(const session::Session& s) {
  int failed = 0;
  std::string first_failure;
  for (const auto& r : s.runs)
    if (r.status.rfind("failed", 0) == 0 && failed++ == 0) first_failure = run_name(r);
  const std::string failures =
      failed == 0 ? "" : "; " + std::to_string(failed) + " run" + (failed == 1 ? "" : "s") + " failed (" + first_failure +
                             (failed > 1 ? ", …" : "") + ")";
  if (s.runs.empty()) {
    int recompiles = 0;
    for (const auto& r : s.regions) recompiles += !r.recompile_reason.empty();
    return "Imported compile log: " + std::to_string(s.regions.size()) + " compiled graph" +
           (s.regions.size() == 1 ? "" : "s") + ", " + std::to_string(s.breaks.size()) + " graph break" +
           (s.breaks.size() == 1 ? "" : "s") + ", " + std::to_string(recompiles) + " recompile" +
           (recompiles == 1 ? "" : "s") + "; no runs were timed.";
  }
  const session::Run* eager = find_run(s, "eager", false);
  const session::Run* best = nullptr;
  for (const auto& r : s.runs)
    if (is_ok(r) && r.mode != "eager" && r.speedup_vs_eager > 0 && (!best || r.speedup_vs_eager > best->speedup_vs_eager))
      best = &r;
  if (!eager) {
    bool any_ok = false;
    for (const auto& r : s.runs) any_ok |= is_ok(r);
    if (!any_ok) return "Every run failed or was skipped" + (failures.empty() ? std::string(".") : failures + ".");
    return "No eager run to compare with" + failures + ".";
  }
  if (!best) return "No compiled run to compare with eager" + failures + ".";
  const std::string times = " (" + fmt("%.3f", best->latency.median_ms) + " ms against " +
                            fmt("%.3f", eager->latency.median_ms) + " ms median)";
  if (best->speedup_vs_eager > 1.02)
    return "Fastest: " + run_name(*best) + ", " + fmt("%.2fx", best->speedup_vs_eager) + " eager" + times + failures + ".";
  if (best->speedup_vs_eager >= 0.98)
    return "No compiled run beats eager: the best, " + run_name(*best) + ", is on par" + times + failures + ".";
  return "No compiled run beats eager: the best, " + run_name(*best) + ", runs at " +
         fmt("%.2fx", best->speedup_vs_eager) + " eager" + times + failures + ".";
}

}  // namespace kiln::report
