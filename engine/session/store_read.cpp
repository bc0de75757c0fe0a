// Rows → Session values; see store_read.h and the schema in store_schema.cpp.
#include "engine/session/store_read.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "engine/session/capture_names.h"
#include "engine/session/store_schema.h"
#include "engine/session/timeline_blocks.h"

namespace kiln::session {

namespace {

// Column readers bound to one file name, so every bad value names the file and the table.
struct Rows {
  SqliteDb& db;
  const std::string& path;

  [[noreturn]] void bad(const std::string& table, const std::string& what) const {
    throw Error(path + ": corrupt session file (table " + table + ": " + what + ")");
  }

  nlohmann::json parse(const std::string& table, const std::string& text) const {
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded()) bad(table, "JSON column does not parse");
    return j;
  }

  std::vector<std::string> strings(const std::string& table, const std::string& text) const {
    auto j = parse(table, text);
    if (!j.is_array()) bad(table, "expected a JSON list");
    std::vector<std::string> out;
    for (const auto& v : j) {
      if (!v.is_string()) bad(table, "expected a JSON list of strings");
      out.push_back(v.get<std::string>());
    }
    return out;
  }

  std::map<std::string, std::string> string_map(const std::string& table, const std::string& text) const {
    auto j = parse(table, text);
    if (!j.is_object()) bad(table, "expected a JSON object");
    std::map<std::string, std::string> out;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!it.value().is_string()) bad(table, "expected a JSON object of strings");
      out[it.key()] = it.value().get<std::string>();
    }
    return out;
  }
};

void read_meta_env_model(const Rows& rows, Session& s) {
  auto meta = rows.db.prepare("SELECT key, value FROM meta");
  while (meta->step()) {
    std::string key = meta->column_text(0), value = meta->column_text(1);
    if (key == "schema_version") s.schema_version = std::stoi(value);
    if (key == "origin") s.origin = value;
    if (key == "float32_precision") s.env.float32_precision = value;
    if (key == "rank") {
      try {
        s.rank = std::stoi(value);
      } catch (const std::exception&) {
        rows.bad("meta", "rank '" + value + "'");
      }
    }
  }
  auto env = rows.db.prepare(
      "SELECT kiln_version, libtorch_version, os, cpu, gpu, driver, cuda, created_at FROM env LIMIT 1");
  if (env->step()) {
    auto& e = s.env;
    e.kiln_version = env->column_text(0);
    e.libtorch_version = env->column_text(1);
    e.os = env->column_text(2);
    e.cpu = env->column_text(3);
    e.gpu = env->column_text(4);
    e.driver = env->column_text(5);
    e.cuda = env->column_text(6);
    e.created_at = env->column_text(7);
  }
  auto model = rows.db.prepare("SELECT path, sha256, inputs_json, parameter_count FROM model LIMIT 1");
  if (model->step()) {
    s.model.path = model->column_text(0);
    s.model.sha256 = model->column_text(1);
    s.model.inputs = rows.strings("model", model->column_text(2));
    s.model.parameter_count = model->column_int(3);
  }
  auto hist = rows.db.prepare("SELECT op, count FROM op_histogram ORDER BY op");
  while (hist->step()) s.model.op_histogram[hist->column_text(0)] = static_cast<int>(hist->column_int(1));
}

void read_breaks(const Rows& rows, Session& s) {
  auto st = rows.db.prepare(
      "SELECT category, break_id, op, reason, hint, file, line, col, text, module_path, ends_region, "
      "resumes_region, hits, compile_id, user_stack_json FROM breaks ORDER BY seq");
  while (st->step()) {
    GraphBreakRecord r;
    auto& b = r.info;
    auto category = break_category_from_name(st->column_text(0));
    if (!category) rows.bad("breaks", "unknown category '" + st->column_text(0) + "'");
    b.category = *category;
    b.id = st->column_text(1);
    b.op = st->column_text(2);
    b.reason = st->column_text(3);
    b.hint = st->column_text(4);
    b.loc.file = st->column_text(5);
    b.loc.line = static_cast<int>(st->column_int(6));
    b.loc.col = static_cast<int>(st->column_int(7));
    b.loc.text = st->column_text(8);
    b.module_path = st->column_text(9);
    b.ends_region = static_cast<int>(st->column_int(10));
    b.resumes_region = static_cast<int>(st->column_int(11));
    r.hits = static_cast<int>(st->column_int(12));
    r.compile_id = st->column_text(13);
    r.user_stack = rows.strings("breaks", st->column_text(14));
    s.breaks.push_back(std::move(r));
  }
}

void each_region(const Rows& rows, const std::function<void(CompiledRegion&&)>& fn) {
  auto st = rows.db.prepare(
      "SELECT seq, compile_id, region, frame, guards_json, symbols_json, recompile_reason, compile_ms, hits, "
      "metrics_json FROM regions ORDER BY seq");
  auto graphs = rows.db.prepare(
      "SELECT stage, text, json, dot FROM region_graphs WHERE region_seq = ? ORDER BY seq");
  while (st->step()) {
    CompiledRegion r;
    int64_t seq = st->column_int(0);
    r.compile_id = st->column_text(1);
    r.region = static_cast<int>(st->column_int(2));
    r.frame = st->column_text(3);
    r.guards = rows.strings("regions", st->column_text(4));
    r.symbols = rows.strings("regions", st->column_text(5));
    r.recompile_reason = st->column_text(6);
    r.compile_ms = st->column_double(7);
    r.hits = st->column_int(8);
    r.metrics = rows.string_map("regions", st->column_text(9));
    graphs->bind(1, seq);
    while (graphs->step())
      r.graphs.push_back({graphs->column_text(0), graphs->column_text(1), graphs->column_text(2),
                          graphs->column_text(3)});
    graphs->reset();
    fn(std::move(r));
  }
}

void read_events(const Rows& rows, Session& s) {
  auto st = rows.db.prepare("SELECT kind, t_ns, call, region, compile_id, message FROM events ORDER BY seq");
  while (st->step()) {
    capture::Event e;
    auto kind = event_kind_from_name(st->column_text(0));
    if (!kind) rows.bad("events", "unknown event kind '" + st->column_text(0) + "'");
    e.kind = *kind;
    e.t_ns = st->column_int(1);
    e.call = static_cast<int>(st->column_int(2));
    e.region = static_cast<int>(st->column_int(3));
    e.compile_id = st->column_text(4);
    e.message = st->column_text(5);
    s.events.push_back(std::move(e));
  }
}

void each_kernel(const Rows& rows, const std::function<void(Kernel&&)>& fn) {
  auto st = rows.db.prepare(
      "SELECT seq, name, compile_id, language, source, nodes_json, launch_config, registers, shared_bytes "
      "FROM kernels ORDER BY seq");
  auto tune = rows.db.prepare("SELECT config, ms, chosen FROM autotune WHERE kernel_seq = ? ORDER BY seq");
  while (st->step()) {
    Kernel k;
    int64_t seq = st->column_int(0);
    k.name = st->column_text(1);
    k.compile_id = st->column_text(2);
    k.language = st->column_text(3);
    k.source = st->column_text(4);
    k.nodes = rows.strings("kernels", st->column_text(5));
    k.launch_config = st->column_text(6);
    k.registers = static_cast<int>(st->column_int(7));
    k.shared_bytes = static_cast<int>(st->column_int(8));
    tune->bind(1, seq);
    while (tune->step()) k.autotune.push_back({tune->column_text(0), tune->column_double(1), tune->column_int(2) != 0});
    tune->reset();
    fn(std::move(k));
  }
}

void read_fusion_and_notes(const Rows& rows, Session& s) {
  auto fusion = rows.db.prepare("SELECT compile_id, first, second, fused, reason FROM fusion ORDER BY seq");
  while (fusion->step())
    s.fusion.push_back({fusion->column_text(0), fusion->column_text(1), fusion->column_text(2),
                        fusion->column_int(3) != 0, fusion->column_text(4)});
  auto notes = rows.db.prepare("SELECT source, what, count, example FROM import_notes ORDER BY seq");
  while (notes->step())
    s.import_notes.push_back({notes->column_text(0), notes->column_text(1), notes->column_int(2),
                              notes->column_text(3)});
}

void read_runs(const Rows& rows, Session& s) {
  auto st = rows.db.prepare(
      "SELECT id, mode, backend, device, status, compile_cold_ms, compile_warm_ms, first_call_ms, median_ms, "
      "p10_ms, p90_ms, iterations, kernels_per_iter, gpu_busy, launch_gap_ms, host_overhead_ms, "
      "peak_memory_bytes, speedup_vs_eager, max_abs_error, max_rel_error FROM runs ORDER BY seq");
  while (st->step()) {
    Run r;
    r.id = static_cast<int>(st->column_int(0));
    r.mode = st->column_text(1);
    r.backend = st->column_text(2);
    r.device = st->column_text(3);
    r.status = st->column_text(4);
    r.compile_cold_ms = st->column_double(5);
    r.compile_warm_ms = st->column_double(6);
    r.first_call_ms = st->column_double(7);
    r.latency.median_ms = st->column_double(8);
    r.latency.p10_ms = st->column_double(9);
    r.latency.p90_ms = st->column_double(10);
    r.latency.iterations = static_cast<int>(st->column_int(11));
    r.kernels_per_iter = st->column_double(12);
    r.gpu_busy = st->column_double(13);
    r.launch_gap_ms = st->column_double(14);
    r.host_overhead_ms = st->column_double(15);
    r.peak_memory_bytes = st->column_int(16);
    r.speedup_vs_eager = st->column_double(17);
    r.max_abs_error = st->column_double(18);
    r.max_rel_error = st->column_double(19);
    s.runs.push_back(std::move(r));
  }
}

// Files of this schema: the blocks of the run (or all), decoded here; the args_parts texts an
// event refers to are looked up once each.
void each_block_event(const Rows& rows, std::optional<int> run, bool memory_only,
                      const std::function<void(TimelineEvent&&)>& fn) {
  std::string where;
  if (run) where = " WHERE run = ?";
  if (memory_only) where += std::string(run ? " AND" : " WHERE") + " memory > 0";
  auto blocks = rows.db.prepare("SELECT first_seq, run, count, events FROM timeline_blocks" + where + " ORDER BY first_seq");
  if (run) blocks->bind(1, *run);
  std::unique_ptr<SqliteStatement> part;
  std::map<int64_t, std::string> parts;
  auto part_text = [&](int64_t id) -> std::string {
    auto it = parts.find(id);
    if (it != parts.end()) return it->second;
    if (!part) part = rows.db.prepare("SELECT text FROM args_parts WHERE id = ?");
    part->bind(1, id);
    if (!part->step()) throw BlockError("args part " + std::to_string(id) + " is missing");
    std::string text = part->column_text(0);
    part->reset();
    if (parts.size() >= 64) parts.clear();  // memory bounded however many parts the file holds
    return parts.emplace(id, std::move(text)).first->second;
  };
  while (blocks->step()) {
    const int64_t first_seq = blocks->column_int(0);
    const int block_run = static_cast<int>(blocks->column_int(1));
    size_t decoded = 0;
    try {
      decoded = decode_block(blocks->column_view(3), block_run, part_text, [&](TimelineEvent&& e) {
        if (!memory_only || is_memory_category(e.category)) fn(std::move(e));
      });
    } catch (const BlockError& e) {
      throw Error(rows.path + ": corrupt session file (timeline block at seq " + std::to_string(first_seq) + ": " +
                  e.what() + ")");
    }
    if (static_cast<int64_t>(decoded) != blocks->column_int(2))
      throw Error(rows.path + ": corrupt session file (timeline block at seq " + std::to_string(first_seq) + " holds " +
                  std::to_string(decoded) + " events, its count says " + std::to_string(blocks->column_int(2)) + ")");
  }
}

void each_timeline_event(const Rows& rows, std::optional<int> run, bool memory_only,
                         const std::function<void(TimelineEvent&&)>& fn) {
  if (rows.db.has_table("timeline_blocks")) return each_block_event(rows, run, memory_only, fn);
  // Files written before: one row per event (a table, or a view over timeline_rows).
  std::string where;
  if (run) where = " WHERE run = ?";
  if (memory_only) where += std::string(run ? " AND" : " WHERE") + " category IN ('memory', 'memory peak')";
  auto tl = rows.db.prepare(
      "SELECT run, lane, name, category, start_ns, dur_ns, compile_id, kernel, correlation, args_json "
      "FROM timeline" + where + " ORDER BY seq");
  if (run) tl->bind(1, *run);
  while (tl->step()) {
    TimelineEvent e;
    e.run = static_cast<int>(tl->column_int(0));
    e.lane = tl->column_text(1);
    e.name = tl->column_text(2);
    e.category = tl->column_text(3);
    e.start_ns = tl->column_int(4);
    e.dur_ns = tl->column_int(5);
    e.compile_id = tl->column_text(6);
    e.kernel = tl->column_text(7);
    e.correlation = tl->column_int(8);
    e.args_json = tl->column_text(9);
    fn(std::move(e));
  }
}

// Schema 1 files have no break_costs table: they hold no costs.
void read_break_costs(const Rows& rows, Session& s) {
  if (!rows.db.has_table("break_costs")) return;
  // Earlier schema-2 files lack the imported-run columns: they read as 0 and empty.
  const bool imported = rows.db.has_column("break_costs", "unmeasured");
  // And files written before lost fusion was measured: not checked.
  const bool lost = rows.db.has_column("break_costs", "lost_fusion_unmeasured");
  auto st = rows.db.prepare(
      std::string("SELECT run, break_id, reason, file, line, iterations, gaps, shared_gaps, gap_ms, interpreter_ms, "
                  "guard_ms, total_ms, step_ms, share, fusion_pair, fusion_pair_ms") +
      (imported ? ", device_ms, compile_ms, compiles, unmeasured" : ", 0, 0, 0, ''") +
      (lost ? ", lost_fusion_checked, lost_fusion, lost_fusion_ms, lost_fusion_unmeasured" : "") +
      " FROM break_costs ORDER BY seq");
  while (st->step()) {
    BreakCost c;
    c.run = static_cast<int>(st->column_int(0));
    c.break_id = st->column_text(1);
    c.reason = st->column_text(2);
    c.file = st->column_text(3);
    c.line = static_cast<int>(st->column_int(4));
    c.iterations = static_cast<int>(st->column_int(5));
    c.gaps = static_cast<int>(st->column_int(6));
    c.shared_gaps = static_cast<int>(st->column_int(7));
    c.gap_ms = st->column_double(8);
    c.interpreter_ms = st->column_double(9);
    c.guard_ms = st->column_double(10);
    c.total_ms = st->column_double(11);
    c.step_ms = st->column_double(12);
    c.share = st->column_double(13);
    c.fusion_pair = st->column_text(14);
    c.fusion_pair_ms = st->column_double(15);
    if (imported) {
      c.device_ms = st->column_double(16);
      c.compile_ms = st->column_double(17);
      c.compiles = static_cast<int>(st->column_int(18));
      c.unmeasured = st->column_text(19);
    }
    if (lost) {
      c.lost_fusion_checked = st->column_int(20) != 0;
      c.lost_fusion = st->column_text(21);
      c.lost_fusion_ms = st->column_double(22);
      c.lost_fusion_unmeasured = st->column_text(23);
    }
    s.break_costs.push_back(std::move(c));
  }
}

RecompilePass read_pass(const Rows& rows, const nlohmann::json& j) {
  if (!j.is_object()) rows.bad("recompile_summary", "expected a JSON object for a pass");
  RecompilePass p;
  p.dynamic = j.value("dynamic", "");
  p.compiles = j.value("compiles", 0);
  p.compile_ms = j.value("compile_ms", 0.0);
  p.cold_ms = j.value("cold_ms", 0.0);
  p.warm_call_ms = j.value("warm_call_ms", 0.0);
  p.failed_guard_ms = j.value("failed_guard_ms", 0.0);
  p.eager_fallback_ms = j.value("eager_fallback_ms", 0.0);
  return p;
}

// Files written before recompile costs were stored (or by other commands) have none.
void read_recompile_costs(const Rows& rows, Session& s) {
  if (!rows.db.has_table("recompile_summary") || !rows.db.has_table("recompile_costs")) return;
  auto sum = rows.db.prepare("SELECT rounds, calls, pass_json, advice_json, effect_json FROM recompile_summary LIMIT 1");
  if (!sum->step()) return;
  auto& c = s.recompile_costs;
  c.rounds = static_cast<int>(sum->column_int(0));
  c.calls = static_cast<int>(sum->column_int(1));
  c.pass = read_pass(rows, rows.parse("recompile_summary", sum->column_text(2)));
  c.advice = rows.strings("recompile_summary", sum->column_text(3));
  const std::string effect = sum->column_text(4);
  if (!effect.empty()) {
    auto j = rows.parse("recompile_summary", effect);
    if (!j.is_object() || !j.contains("before") || !j.contains("after"))
      rows.bad("recompile_summary", "expected a JSON object with before and after");
    c.has_effect = true;
    c.effect.advice = j.value("advice", "");
    c.effect.before = read_pass(rows, j["before"]);
    c.effect.after = read_pass(rows, j["after"]);
    c.effect.outputs_equal = j.value("outputs_equal", false);
    c.effect.max_abs_diff = j.value("max_abs_diff", 0.0);
  }
  auto st = rows.db.prepare(
      "SELECT region, compile_ms, failed_guard_checks, failed_guard_ms, eager_fallback_calls, eager_fallback_ms, "
      "limit_reached, entries_json FROM recompile_costs ORDER BY seq");
  while (st->step()) {
    RegionRecompileCost r;
    r.region = static_cast<int>(st->column_int(0));
    r.compile_ms = st->column_double(1);
    r.failed_guard_checks = static_cast<int>(st->column_int(2));
    r.failed_guard_ms = st->column_double(3);
    r.eager_fallback_calls = static_cast<int>(st->column_int(4));
    r.eager_fallback_ms = st->column_double(5);
    r.limit_reached = st->column_int(6) != 0;
    auto entries = rows.parse("recompile_costs", st->column_text(7));
    if (!entries.is_array()) rows.bad("recompile_costs", "expected a JSON list of entries");
    for (const auto& e : entries) {
      if (!e.is_object()) rows.bad("recompile_costs", "expected a JSON object per entry");
      RecompileEntryCost ec;
      ec.compile_id = e.value("compile_id", "");
      ec.compile_ms = e.value("compile_ms", 0.0);
      ec.hits = e.value("hits", int64_t{0});
      ec.recompile_reason = e.value("recompile_reason", "");
      r.entries.push_back(std::move(ec));
    }
    c.regions.push_back(std::move(r));
  }
}

namespace fs = std::filesystem;

uint32_t big_endian(const unsigned char* p, int n) {
  uint32_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

// Checks what can be checked before SQLite opens the file: it exists, it starts like an SQLite
// database, and (with no WAL beside it) it is as long as its header says.
void check_file(const std::string& path) {
  std::error_code ec;
  auto status = fs::status(path, ec);
  if (!fs::exists(status)) throw Error(path + ": file not found");
  if (fs::is_directory(status)) throw Error(path + ": is a folder, not a session file");
  uint64_t size = fs::file_size(path, ec);
  if (ec) throw Error(path + ": cannot read (" + ec.message() + ")");
  if (size == 0) throw Error(path + ": not a Kiln session (empty file)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot read (" + std::strerror(errno) + ")");
  unsigned char header[100] = {};
  in.read(reinterpret_cast<char*>(header), sizeof header);
  auto got = static_cast<size_t>(in.gcount());
  static const char kMagic[] = "SQLite format 3";  // 16 bytes with its NUL
  if (got < sizeof kMagic || std::memcmp(header, kMagic, sizeof kMagic) != 0)
    throw Error(path + ": not a Kiln session (not an SQLite database)");
  if (got < sizeof header)
    throw Error(path + ": corrupt session file (truncated: " + std::to_string(size) + " bytes)");
  if (fs::exists(path + "-wal", ec)) return;  // the WAL may hold pages the main file does not have yet
  uint64_t page_size = big_endian(header + 16, 2);
  if (page_size == 1) page_size = 65536;
  uint32_t change_counter = big_endian(header + 24, 4);
  uint32_t pages = big_endian(header + 28, 4);
  uint32_t valid_for = big_endian(header + 92, 4);
  if (valid_for == change_counter && pages > 0 && page_size * pages > size)
    throw Error(path + ": corrupt session file (truncated: " + std::to_string(size) + " of " +
                std::to_string(page_size * pages) + " bytes)");
}

}  // namespace

Error read_error(const std::string& path, const SqliteError& e) {
  if (e.is_not_a_db()) return Error(path + ": not a Kiln session (not an SQLite database)");
  if (e.is_corrupt()) return Error(path + ": corrupt session file (" + std::string(e.what()) + ")");
  return Error(path + ": cannot read session (" + std::string(e.what()) + ")");
}

namespace {

std::unique_ptr<SqliteDb> open_for_reading(const std::string& path) {
  try {
    auto db = std::make_unique<SqliteDb>(path, SqliteDb::Mode::ReadOnly);
    db->has_table("meta");  // the first read: SQLite opens the file (and its WAL) lazily
    return db;
  } catch (const SqliteError& e) {
    std::error_code ec;
    // A folder this process cannot write: no -shm can be made; read the file as it stands.
    if (e.is_cant_open() && !fs::exists(path + "-wal", ec)) return std::make_unique<SqliteDb>(path, SqliteDb::Mode::Immutable);
    throw;
  }
}

}  // namespace

std::unique_ptr<SqliteDb> open_session_file(const std::string& path) {
  check_file(path);
  try {
    auto db = open_for_reading(path);
    check_schema(*db, path);
    return db;
  } catch (const SqliteError& e) {
    throw read_error(path, e);
  }
}

Session read_session_summary(SqliteDb& db, const std::string& path) {
  Rows rows{db, path};
  Session s;
  read_meta_env_model(rows, s);
  read_breaks(rows, s);
  read_events(rows, s);
  read_fusion_and_notes(rows, s);
  read_runs(rows, s);
  read_break_costs(rows, s);
  read_recompile_costs(rows, s);
  return s;
}

Session read_session(SqliteDb& db, const std::string& path) {
  Rows rows{db, path};
  Session s;
  read_meta_env_model(rows, s);
  read_breaks(rows, s);
  each_region(rows, [&](CompiledRegion&& r) { s.regions.push_back(std::move(r)); });
  read_events(rows, s);
  each_kernel(rows, [&](Kernel&& k) { s.kernels.push_back(std::move(k)); });
  read_fusion_and_notes(rows, s);
  read_runs(rows, s);
  each_timeline_event(rows, std::nullopt, false, [&](TimelineEvent&& e) { s.timeline.push_back(std::move(e)); });
  read_break_costs(rows, s);
  read_recompile_costs(rows, s);
  return s;
}

void read_regions(SqliteDb& db, const std::string& path, const std::function<void(CompiledRegion&&)>& fn) {
  each_region(Rows{db, path}, fn);
}

void read_kernels(SqliteDb& db, const std::string& path, const std::function<void(Kernel&&)>& fn) {
  each_kernel(Rows{db, path}, fn);
}

void read_timeline(SqliteDb& db, const std::string& path, std::optional<int> run, bool memory_only,
                   const std::function<void(TimelineEvent&&)>& fn) {
  each_timeline_event(Rows{db, path}, run, memory_only, fn);
}

bool has_timeline_events(SqliteDb& db, int run) {
  auto st = db.prepare(db.has_table("timeline_blocks") ? "SELECT 1 FROM timeline_blocks WHERE run = ? LIMIT 1"
                                                       : "SELECT 1 FROM timeline WHERE run = ? LIMIT 1");
  st->bind(1, run);
  return st->step();
}

int64_t earliest_start(SqliteDb& db, const std::string& path, int run) {
  int64_t origin = 0;
  bool first = true;
  auto take = [&](int64_t t) {
    if (first || t < origin) origin = t;
    first = false;
  };
  if (db.has_table("timeline_blocks")) {
    each_block_event(Rows{db, path}, run, false, [&](TimelineEvent&& e) { take(e.start_ns); });
    return origin;
  }
  // As read_timeline reads start_ns (column_int: NULL is 0), without the rest of each row.
  auto st = db.prepare("SELECT start_ns FROM timeline WHERE run = ?");
  st->bind(1, run);
  while (st->step()) take(st->column_int(0));
  return origin;
}

}  // namespace kiln::session
