// Text and JSON forms of a CheckResult (kiln check's output).
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/commands/check_model.h"

#include "engine/base/json_text.h"

namespace kiln::runtime {

namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string diff_text(const ValueDiff& d) {
  std::string s = d.what + ": " + (d.ok ? "ok" : "MISMATCH");
  if (!d.problem.empty()) return s + " (" + d.problem + ")";
  s += ", max abs " + num(d.max_abs) + ", max rel " + num(d.max_rel);
  if (!d.ok) s += " (" + std::to_string(d.mismatched) + " of " + std::to_string(d.elements) + " elements outside the tolerance)";
  return s;
}

std::string inputs_text(const std::vector<InputSpec>& inputs) {
  std::string s;
  for (const auto& i : inputs) s += (s.empty() ? "" : ", ") + i.str();
  return s;
}

nlohmann::ordered_json diff_json(const ValueDiff& d) {
  // JSON has no infinity: an infinite error (NaN or infinity on one side only) is written as null.
  auto finite = [](double v) { return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr); };
  return {{"name", d.what},         {"ok", d.ok},         {"max_abs_error", finite(d.max_abs)},
          {"max_rel_error", finite(d.max_rel)}, {"elements", d.elements}, {"mismatched", d.mismatched},
          {"problem", d.problem}};
}

}  // namespace

std::string check_text(const CheckResult& r) {
  std::ostringstream os;
  os << "model     " << r.model << "\n";
  os << "backend   " << r.backend << " (mode " << r.mode << ")\n";
  os << "inputs    " << inputs_text(r.inputs) << ", random N(0, 1) with seed " << r.seed << " (--seed " << r.seed
     << " repeats them)\n";
  os << "tolerance rtol " << num(r.rtol) << ", atol " << num(r.atol) << "\n";
  if (!r.precision.empty()) os << "precision " << r.precision << "\n";
  os << "\n";
  os << "Compiled vs LibTorch eager\n";
  for (const auto& d : r.outputs) os << "  " << diff_text(d) << "\n";
  if (r.match) {
    os << "\nMATCH: the compiled outputs agree with eager within the tolerances\n";
    return os.str();
  }
  if (r.tf32_verdict == "TF32 rounding")
    os << "\nTF32: with TF32 off on both sides the same inputs match at the float32 tolerance (max rel "
       << num(r.max_rel_without_tf32) << "): the difference is TF32 rounding, not a wrong kernel\n";
  else if (r.tf32_verdict == "not TF32")
    os << "\nTF32: with TF32 off on both sides the outputs still differ (max rel " << num(r.max_rel_without_tf32)
       << "): not TF32 rounding\n";
  os << "\nRegions (compiled, in run order; each against an eager replay of its nodes on the same inputs)\n";
  if (r.regions.empty()) os << "  none ran compiled\n";
  for (size_t i = 0; i < r.regions.size(); ++i) {
    const auto& rc = r.regions[i];
    os << "  " << rc.compile_id << " " << (rc.ok ? "ok" : "MISMATCH") << (static_cast<int>(i) == r.first_region ? "  <- first" : "")
       << "\n";
    for (const auto& d : rc.outputs) os << "      " << diff_text(d) << "\n";
  }
  if (r.first_region >= 0 && !r.kernels.empty()) {
    os << "\nKernels of region " << r.regions[r.first_region].compile_id
       << " (in run order; each fed the eager values of what it reads)\n";
    for (size_t k = 0; k < r.kernels.size(); ++k) {
      const auto& kc = r.kernels[k];
      os << "  " << kc.name << " " << (kc.ok ? "ok" : "MISMATCH") << (static_cast<int>(k) == r.culprit ? "  <- first" : "")
         << "\n";
      for (const auto& d : kc.outputs) os << "      " << diff_text(d) << "\n";
      if (kc.unchecked > 0)
        os << "      " << kc.unchecked << " output" << (kc.unchecked == 1 ? "" : "s")
           << " without an eager counterpart (not compared)\n";
    }
  }
  if (r.culprit >= 0) {
    const auto& kc = r.kernels[r.culprit];
    os << "\nFIRST DIFFERING KERNEL: " << kc.name << " in region " << r.regions[r.first_region].compile_id << "\n";
    os << "  nodes:";
    for (const auto& n : kc.nodes) os << " " << n;
    os << "\n";
    for (const auto& d : kc.outputs)
      if (!d.ok) os << "  " << diff_text(d) << "\n";
    if (!kc.source.empty()) {
      os << "  source:\n";
      std::istringstream lines(kc.source);
      for (std::string l; std::getline(lines, l);) os << "    " << l << "\n";
    }
  } else {
    os << "\nMISMATCH: " << (r.note.empty() ? "no kernel named" : r.note) << "\n";
  }
  return os.str();
}

std::string check_json(const CheckResult& r) {
  using nlohmann::ordered_json;
  ordered_json ins = ordered_json::array();
  for (const auto& i : r.inputs) ins.push_back(i.str());
  ordered_json j = {{"model", r.model}, {"backend", r.backend}, {"mode", r.mode}, {"inputs", ins}};
  j["seed"] = r.seed;
  j["rtol"] = r.rtol;
  j["atol"] = r.atol;
  j["match"] = r.match;
  j["precision"] = r.precision;
  if (!r.tf32_verdict.empty()) {
    j["tf32_verdict"] = r.tf32_verdict;
    j["max_rel_without_tf32"] = r.max_rel_without_tf32;
  }
  ordered_json outs = ordered_json::array();
  for (const auto& d : r.outputs) outs.push_back(diff_json(d));
  j["outputs"] = outs;
  ordered_json regions = ordered_json::array();
  for (const auto& rc : r.regions) {
    ordered_json o = ordered_json::array();
    for (const auto& d : rc.outputs) o.push_back(diff_json(d));
    regions.push_back({{"region", rc.region}, {"compile_id", rc.compile_id}, {"ok", rc.ok}, {"outputs", o}});
  }
  j["regions"] = regions;
  j["first_region"] = r.first_region >= 0 ? ordered_json(r.regions[r.first_region].compile_id) : ordered_json(nullptr);
  ordered_json kernels = ordered_json::array();
  for (const auto& kc : r.kernels) {
    ordered_json o = ordered_json::array();
    for (const auto& d : kc.outputs) o.push_back(diff_json(d));
    kernels.push_back({{"name", kc.name}, {"nodes", kc.nodes}, {"ok", kc.ok}, {"outputs", o},
                       {"unchecked_outputs", kc.unchecked}, {"source", kc.source}});
  }
  j["kernels"] = kernels;
  j["first_kernel"] = r.culprit >= 0 ? ordered_json(r.kernels[r.culprit].name) : ordered_json(nullptr);
  j["note"] = r.note;
  return safe_dump(j, 2);
}

}  // namespace kiln::runtime
