#include "tests/viewers/app/session_fixtures.h"

#include "engine/api/kiln.h"
#include "engine/importers/import_files.h"
#include "tests/support/paths.h"
#include "tests/support/session_builders.h"

namespace kiln::test {

std::shared_ptr<const session::Session> crafted_session() {
  auto s = std::make_shared<session::Session>();
  s->origin = "kiln profile";
  s->model.path = example("breaky.pt");
  for (int r = 0; r < 2; ++r) {
    session::CompiledRegion cr;
    cr.compile_id = "[" + std::to_string(r) + "/0]";
    cr.region = r;
    cr.graphs.push_back({"captured", "graph", "", ""});
    cr.guards = {"x.dtype == float32", "x.size(0) == 4", "x.size(1) == 64"};
    cr.hits = 10;
    cr.compile_ms = 3.5;
    s->regions.push_back(cr);
  }
  session::CompiledRegion again = s->regions[0];
  again.compile_id = "[0/1]";
  again.guards = {"x.dtype == float32", "x.size(0) == s0", "x.size(1) == 64", "s0 > 1"};
  again.symbols = {"s0 = x.size(0)"};
  again.recompile_reason = "tensor 'x' size mismatch at index 0. expected 4, actual 8";
  s->regions.push_back(again);

  session::GraphBreakRecord print;
  print.info.category = capture::BreakCategory::SideEffect;
  print.info.id = "KB001";
  print.info.op = "prim::Print";
  print.info.reason = "print() is a side effect";
  print.info.hint = "remove the print";
  print.info.loc = {"/elsewhere/sample_models.py", 42, 9, "print(\"mid\")"};
  print.info.ends_region = 0;
  print.info.resumes_region = 1;
  print.hits = 2;
  session::GraphBreakRecord print_again = print;  // same site: one group
  print_again.hits = 3;
  session::GraphBreakRecord item;
  item.info.category = capture::BreakCategory::ScalarExtraction;
  item.info.id = "KB003";
  item.info.reason = "Tensor.item() reads a value out of a tensor";
  item.info.hint = "keep the value as a 0-d tensor";
  item.info.loc = {"/elsewhere/sample_models.py", 47, 23, "scale = float(y.mean().item())"};
  item.info.ends_region = 1;
  item.hits = 1;
  s->breaks = {print, print_again, item};

  session::Kernel k0;
  k0.name = "k0_fused_add_relu";
  k0.compile_id = "[0/0]";
  k0.language = "cpp";
  k0.nodes = {"add", "relu"};
  k0.source =
      "// k0_fused_add_relu: pointwise kernel fusing 2 graph nodes\n"
      "//   add = aten::add  (sample_models.py:41:8)\n"
      "//   relu = aten::relu  (sample_models.py:41:8)\n"
      "extern \"C\" void k0_fused_add_relu(void* const* buf) {\n"
      "  const float* b0 = static_cast<const float*>(buf[0]);  // x\n"
      "  float* b2 = static_cast<float*>(buf[2]);  // relu\n"
      "  for (int64_t i0 = 0; i0 < 256LL; ++i0) {\n"
      "    const auto t0 = (b0[i0] + 1.0f);\n"
      "    b2[i0] = kiln_max(t0, 0.0f);  // relu\n"
      "  }\n"
      "}\n";
  k0.launch_config = "pointwise, OpenMP over the outer loop";
  k0.autotune = {{"block=128", 0.02, false}, {"block=256", 0.015, true}};
  session::Kernel k1;
  k1.name = "k1_row_sum";
  k1.compile_id = "[1/0]";
  k1.language = "cuda";
  k1.nodes = {"sum"};
  k1.source = "__global__ void k1_row_sum(float* out) {\n  out[0] = 0;  // sum\n}\n";
  k1.launch_config = "grid=(4,1,1) block=(256,1,1)";
  k1.registers = 32;
  k1.shared_bytes = 1024;
  s->kernels = {k0, k1};
  s->fusion = {{"[0/0]", "add", "relu", true, "inlined into its consumer (vertical fusion)"},
               {"[0/0]", "relu", "linear", false, "extern boundary"},
               {"[1/0]", "sum", "mul", false, "reduction boundary"}};

  session::Run eager;
  eager.id = 0;
  eager.mode = "eager";
  eager.backend = "eager";
  eager.device = "cuda:0";
  eager.latency = {1.0, 0.9, 1.2, 50};
  eager.kernels_per_iter = 12;
  eager.speedup_vs_eager = 1.0;
  session::Run def = eager;
  def.id = 1;
  def.mode = "default";
  def.backend = "kiln";
  def.latency = {1.25, 1.2, 1.3, 50};
  def.speedup_vs_eager = 0.8;
  def.gpu_busy = 0.29;
  def.kernels_per_iter = 5;
  def.compile_cold_ms = 40;
  session::Run ro = def;
  ro.id = 2;
  ro.mode = "max-autotune";
  ro.latency = {0.5, 0.45, 0.55, 50};
  ro.speedup_vs_eager = 2.0;
  ro.max_rel_error = 3e-2;
  ro.kernels_per_iter = 5;
  session::Run skipped;
  skipped.id = 3;
  skipped.mode = "reduce-overhead";
  skipped.backend = "kiln";
  skipped.status = "skipped: needs an NVIDIA GPU (no driver)";
  s->runs = {eager, def, ro, skipped};

  auto ev = [](int run, const std::string& kernel, int64_t start, int64_t dur) {
    return kernel_event(run, kernel, kernel == "k1_row_sum" ? "[1/0]" : "[0/0]", start, dur);
  };
  s->timeline = {ev(1, "k0_fused_add_relu", 0, 300), ev(1, "k0_fused_add_relu", 1000, 300), ev(1, "k1_row_sum", 500, 400),
                 ev(2, "k1_row_sum", 0, 100)};
  capture::Event limit;
  limit.kind = capture::Event::Kind::RecompileLimit;
  limit.region = 0;
  limit.call = 9;
  limit.compile_id = "[0/1]";
  limit.message = "region 0 reached the recompile limit (8); running it eagerly";
  capture::Event recompile;
  recompile.kind = capture::Event::Kind::Recompile;
  recompile.region = 0;
  recompile.call = 1;
  recompile.compile_id = "[0/1]";
  recompile.message = again.recompile_reason;
  s->events = {recompile, limit};
  return s;
}

std::shared_ptr<const session::Session> imported_breaky_trace() {
  static std::shared_ptr<const session::Session> s = [] {
    importers::ImportRequest req;
    req.paths = {data("traces/breaky_dynamic.log")};
    auto r = importers::import_files(req);
    return std::make_shared<const session::Session>(std::move(r.sessions.at(0).session));
  }();
  return s;
}

std::string profiled_block_path() {
  static std::string path = [] {
    std::string p = temp_dir() + "/block.kiln";
    api::ProfileOptions o;
    o.modes = {"eager", "default"};
    o.iters = 5;
    o.device = "cpu";
    api::profile(example("block.pt"), {parse_input_spec("2x16x64")}, o, p);
    return p;
  }();
  return path;
}

std::shared_ptr<const session::Session> profiled_block() {
  static std::shared_ptr<const session::Session> s =
      std::make_shared<const session::Session>(api::open_session(profiled_block_path()));
  return s;
}

std::string profiled_block_batch4_path() {
  static std::string path = [] {
    std::string p = temp_dir() + "/block_batch4.kiln";
    api::ProfileOptions o;
    o.modes = {"eager", "default"};
    o.iters = 5;
    o.device = "cpu";
    api::profile(example("block.pt"), {parse_input_spec("4x16x64")}, o, p);
    return p;
  }();
  return path;
}

std::shared_ptr<const session::Session> profiled_block_batch4() {
  static std::shared_ptr<const session::Session> s =
      std::make_shared<const session::Session>(api::open_session(profiled_block_batch4_path()));
  return s;
}

std::shared_ptr<const viewers::Comparison> block_comparison() {
  static std::shared_ptr<const viewers::Comparison> c = [] {
    auto out = std::make_shared<viewers::Comparison>();
    out->session = profiled_block_batch4();
    out->path = profiled_block_batch4_path();
    api::DiffOptions o;
    o.label_a = "block.kiln";
    o.label_b = "block_batch4.kiln";
    out->diff = std::make_shared<const report::SessionDiff>(api::diff(*profiled_block(), *out->session, o));
    return out;
  }();
  return c;
}

}  // namespace kiln::test
