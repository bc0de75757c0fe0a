// The .kiln schema (version 2; version 1 had no break_costs table and is read as it is). Later
// additions that older readers can ignore keep version 2 and are read only where present: the
// break_costs columns of imported runs and of lost fusion, and the recompile_costs and
// recompile_summary tables (kiln explain --cost -o). Rows keep their order through a `seq` column; nested lists and
// maps that are only ever read whole (guards, symbols, metrics, node lists, user stacks) are JSON
// text. Every REAL column stores an IEEE double exactly; NULL in one means NaN.
//
// The timeline is a view that every reader (older Kilns, sqlite3, Python) reads as the table it
// used to be, one row per event. Its events are stored in blocks (timeline_blocks, one row per
// block of one run; the block text is described in timeline_blocks.h) and the view unpacks them
// with SQLite's JSON functions. An event whose args share a large value with other events (the
// cache-key components Inductor repeats on several compile events) holds the text before that value
// and the text after it, and the value itself once, in args_parts, by id; the view joins them back.
// Files written before hold the events one per row (timeline_rows, with args_json, args_part and
// args_tail columns, under a view of the same columns), or, older still, a plain timeline table;
// they are read, and runs appended to them, in their own form.
#include "engine/session/store_schema.h"

#include <cstdlib>

#include "engine/session/session.h"

#ifndef KILN_VERSION
#define KILN_VERSION "unknown"
#endif

namespace kiln::session {

namespace {

// The timeline's blocks: first_seq numbers a block's first event, the others follow; memory counts
// its events of category "memory" or "memory peak" (readers of memory alone skip the others).
const char* kTimelineTables = R"sql(
CREATE TABLE timeline_blocks (
  first_seq INTEGER PRIMARY KEY, run INTEGER NOT NULL, count INTEGER NOT NULL, memory INTEGER NOT NULL,
  events TEXT NOT NULL);
CREATE INDEX timeline_blocks_by_run ON timeline_blocks (run);
CREATE TABLE args_parts (id INTEGER PRIMARY KEY, text TEXT NOT NULL);
)sql";

const char* kTables = R"sql(
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE env (
  kiln_version TEXT, libtorch_version TEXT, os TEXT, cpu TEXT, gpu TEXT, driver TEXT, cuda TEXT, created_at TEXT);
CREATE TABLE model (path TEXT, sha256 TEXT, inputs_json TEXT, parameter_count INTEGER);
CREATE TABLE op_histogram (op TEXT PRIMARY KEY, count INTEGER NOT NULL);
CREATE TABLE breaks (
  seq INTEGER PRIMARY KEY, category TEXT NOT NULL, break_id TEXT, op TEXT, reason TEXT, hint TEXT,
  file TEXT, line INTEGER, col INTEGER, text TEXT, module_path TEXT, ends_region INTEGER, resumes_region INTEGER,
  hits INTEGER, compile_id TEXT, user_stack_json TEXT);
CREATE TABLE regions (
  seq INTEGER PRIMARY KEY, compile_id TEXT, region INTEGER, frame TEXT, guards_json TEXT, symbols_json TEXT,
  recompile_reason TEXT, compile_ms REAL, hits INTEGER, metrics_json TEXT);
CREATE TABLE region_graphs (
  region_seq INTEGER NOT NULL REFERENCES regions(seq), seq INTEGER NOT NULL, stage TEXT, text TEXT, json TEXT,
  dot TEXT, PRIMARY KEY (region_seq, seq));
CREATE TABLE events (
  seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, t_ns INTEGER, call INTEGER, region INTEGER, compile_id TEXT,
  message TEXT);
CREATE TABLE kernels (
  seq INTEGER PRIMARY KEY, name TEXT, compile_id TEXT, language TEXT, source TEXT, nodes_json TEXT,
  launch_config TEXT, registers INTEGER, shared_bytes INTEGER);
CREATE TABLE autotune (
  kernel_seq INTEGER NOT NULL REFERENCES kernels(seq), seq INTEGER NOT NULL, config TEXT, ms REAL,
  chosen INTEGER, PRIMARY KEY (kernel_seq, seq));
CREATE TABLE fusion (
  seq INTEGER PRIMARY KEY, compile_id TEXT, first TEXT, second TEXT, fused INTEGER, reason TEXT);
CREATE TABLE runs (
  seq INTEGER PRIMARY KEY, id INTEGER NOT NULL UNIQUE, mode TEXT, backend TEXT, device TEXT, status TEXT,
  compile_cold_ms REAL, compile_warm_ms REAL, first_call_ms REAL, median_ms REAL, p10_ms REAL, p90_ms REAL,
  iterations INTEGER, kernels_per_iter REAL, gpu_busy REAL, launch_gap_ms REAL, host_overhead_ms REAL,
  peak_memory_bytes INTEGER, speedup_vs_eager REAL, max_abs_error REAL, max_rel_error REAL);
CREATE VIEW timeline AS SELECT b.first_seq + e.key AS seq, b.run AS run,
  json_extract(e.value, '$[0]') AS lane, json_extract(e.value, '$[1]') AS name,
  json_extract(e.value, '$[2]') AS category, json_extract(e.value, '$[3]') AS start_ns,
  json_extract(e.value, '$[4]') AS dur_ns, json_extract(e.value, '$[5]') AS compile_id,
  json_extract(e.value, '$[6]') AS kernel, json_extract(e.value, '$[7]') AS correlation,
  CASE WHEN json_array_length(e.value) < 11 THEN json_extract(e.value, '$[8]')
       ELSE json_extract(e.value, '$[8]') || (SELECT text FROM args_parts WHERE id = json_extract(e.value, '$[9]')) ||
            json_extract(e.value, '$[10]') END AS args_json
  FROM timeline_blocks AS b, json_each(b.events) AS e;
CREATE TABLE import_notes (seq INTEGER PRIMARY KEY, source TEXT, what TEXT, count INTEGER, example TEXT);
CREATE TABLE break_costs (
  seq INTEGER PRIMARY KEY, run INTEGER NOT NULL, break_id TEXT, reason TEXT, file TEXT, line INTEGER,
  iterations INTEGER, gaps INTEGER, shared_gaps INTEGER, gap_ms REAL, interpreter_ms REAL, guard_ms REAL,
  total_ms REAL, step_ms REAL, share REAL, fusion_pair TEXT, fusion_pair_ms REAL, device_ms REAL, compile_ms REAL,
  compiles INTEGER, unmeasured TEXT, lost_fusion_checked INTEGER, lost_fusion TEXT, lost_fusion_ms REAL,
  lost_fusion_unmeasured TEXT);
CREATE TABLE recompile_costs (
  seq INTEGER PRIMARY KEY, region INTEGER, compile_ms REAL, failed_guard_checks INTEGER, failed_guard_ms REAL,
  eager_fallback_calls INTEGER, eager_fallback_ms REAL, limit_reached INTEGER, entries_json TEXT);
CREATE TABLE recompile_summary (rounds INTEGER, calls INTEGER, pass_json TEXT, advice_json TEXT, effect_json TEXT);
)sql";

}  // namespace

std::string kiln_version() { return KILN_VERSION; }

void create_schema(SqliteDb& db, const std::string& created_at) {
  // SQLite's default pages (4 KiB): the timeline's blocks fill their overflow pages but the last,
  // whose unused rest costs 2 KiB per block on average (64 KiB pages made a million-event file a
  // third larger).
  db.exec("PRAGMA page_size = 4096");
  // The file is a temporary nobody reads before it is complete: a rollback journal in memory
  // (pages added to a fresh file are never journaled; a failed write removes the file), no syncs
  // (the caller syncs the finished file once) and no write-ahead log, which would write every
  // page twice. finish_schema() turns the log on for the finished file.
  db.exec("PRAGMA journal_mode = MEMORY");
  db.exec("PRAGMA synchronous = OFF");
  Transaction t(db);
  db.exec(kTimelineTables);
  db.exec(kTables);
  auto put = db.prepare("INSERT INTO meta (key, value) VALUES (?, ?)");
  put->bind(1, "schema_version").bind(2, std::to_string(kSchemaVersion)).run();
  put->bind(1, "kiln_version").bind(2, kiln_version()).run();
  put->bind(1, "created_at").bind(2, created_at).run();
  put.reset();
  t.commit();
}

void finish_schema(SqliteDb& db) {
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = NORMAL");
}

void check_schema(SqliteDb& db, const std::string& path) {
  if (!db.has_table("meta")) throw Error(path + ": not a Kiln session (no meta table)");
  auto get = db.prepare("SELECT value FROM meta WHERE key = 'schema_version'");
  if (!get->step()) throw Error(path + ": not a Kiln session (no schema_version in its meta table)");
  std::string text = get->column_text(0);
  char* end = nullptr;
  long version = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0') throw Error(path + ": not a Kiln session (schema_version '" + text + "')");
  if (version < kOldestSchemaVersion || version > kSchemaVersion)
    throw Error(path + ": written by schema " + std::to_string(version) + "; this Kiln reads schema " +
                std::to_string(kOldestSchemaVersion) + " to " + std::to_string(kSchemaVersion));
}

}  // namespace kiln::session
