#include <gtest/gtest.h>
#include <iostream>
#include <cstdlib>
#include "engine/importers/torch_trace.h"
#include "engine/importers/kineto.h"
#include "tests/support/paths.h"
using namespace kiln;
static void summary(const session::Session& s) {
  std::cout << "rank " << s.rank << " regions " << s.regions.size() << " breaks " << s.breaks.size() << " events "
            << s.events.size() << " kernels " << s.kernels.size() << " timeline " << s.timeline.size() << "\n";
  for (auto& r : s.regions) {
    std::cout << "  " << r.compile_id << " frame=" << r.frame << " ms=" << r.compile_ms << " guards=" << r.guards.size()
              << " syms=" << r.symbols.size() << " recompile=" << r.recompile_reason << " graphs:";
    for (auto& g : r.graphs) std::cout << " " << g.stage << "(" << g.text.size() << ")";
    std::cout << "\n";
  }
  for (auto& b : s.breaks)
    std::cout << "  break " << b.compile_id << " " << b.info.id << " " << b.info.loc.file << ":" << b.info.loc.line << " '"
              << b.info.loc.text << "' reason=" << b.info.reason << " stack=" << b.user_stack.size() << "\n";
  for (auto& k : s.kernels)
    std::cout << "  kernel " << k.compile_id << " " << k.name << " " << k.language << " " << k.source.size() << " nodes "
              << k.nodes.size() << " launch " << k.launch_config << "\n";
  for (auto& n : s.import_notes) std::cout << "  note " << n.what << " x" << n.count << " e.g. " << n.example << "\n";
}
TEST(Scratch, Dump) {
  const char* f = std::getenv("SCRATCH");
  if (!f) GTEST_SKIP();
  std::string p = f;
  if (p.find(".json") != std::string::npos) {
    auto s = importers::import_kineto_trace(p);
    summary(s);
    for (auto& r : s.runs) std::cout << "  run " << r.id << " " << r.mode << " " << r.backend << " " << r.device << " ms " << r.latency.median_ms << " kernels " << r.kernels_per_iter << " busy " << r.gpu_busy << " gap " << r.launch_gap_ms << " guard " << r.host_overhead_ms << " mem " << r.peak_memory_bytes << "\n";
    std::cout << "env " << s.env.gpu << " cuda " << s.env.cuda << " driver " << s.env.driver << "\n";
    int n = 0;
    for (auto& e : s.timeline) if (e.category != "cpu_op" || !e.compile_id.empty() || !e.kernel.empty()) { if (n++ < 400) std::cout << "  ev " << e.run << " " << e.lane << " " << e.category << " " << e.name.substr(0, 60) << " t=" << e.start_ns << " d=" << e.dur_ns << " c=" << e.correlation << " cid=" << e.compile_id << " k=" << e.kernel << " " << e.args_json.substr(0, 200) << "\n"; }
  } else summary(importers::import_torch_trace(f));
}
