// Session values → rows; see store_write.h and the schema in store_schema.cpp.
#include "engine/session/store_write.h"

#include <condition_variable>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <nlohmann/json.hpp>
#include <string_view>
#include <unordered_map>

#include "engine/base/cores.h"
#include "engine/base/json_text.h"
#include "engine/session/store_schema.h"
#include "engine/session/timeline_blocks.h"

namespace kiln::session {

namespace {

// What safe_dump(nlohmann::json(v)) writes, without building the value first.
std::string json_text(const std::vector<std::string>& v) {
  std::string out = "[";
  for (const auto& s : v) {
    if (out.size() > 1) out += ',';
    append_json_string(out, s);
  }
  return out + "]";
}
std::string json_text(const std::map<std::string, std::string>& m) {
  std::string out = "{";
  for (const auto& [k, v] : m) {
    if (out.size() > 1) out += ',';
    append_json_string(out, k);
    out += ':';
    append_json_string(out, v);
  }
  return out + "}";
}

int64_t next_seq(SqliteDb& db, const std::string& table) {
  auto st = db.prepare("SELECT COALESCE(MAX(seq) + 1, 0) FROM " + table);
  st->step();
  return st->column_int(0);
}

void write_env_and_model(SqliteDb& db, const Session& s) {
  auto meta = db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)");
  meta->bind(1, "origin").bind(2, s.origin).run();
  meta->bind(1, "rank").bind(2, std::to_string(s.rank)).run();
  if (!s.env.float32_precision.empty()) meta->bind(1, "float32_precision").bind(2, s.env.float32_precision).run();

  const auto& e = s.env;
  auto env = db.prepare(
      "INSERT INTO env (kiln_version, libtorch_version, os, cpu, gpu, driver, cuda, created_at) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  env->bind(1, e.kiln_version).bind(2, e.libtorch_version).bind(3, e.os).bind(4, e.cpu).bind(5, e.gpu);
  env->bind(6, e.driver).bind(7, e.cuda).bind(8, e.created_at).run();

  const auto& m = s.model;
  auto model = db.prepare("INSERT INTO model (path, sha256, inputs_json, parameter_count) VALUES (?, ?, ?, ?)");
  model->bind(1, m.path).bind(2, m.sha256).bind(3, json_text(m.inputs)).bind(4, m.parameter_count).run();
  auto hist = db.prepare("INSERT INTO op_histogram (op, count) VALUES (?, ?)");
  for (const auto& [op, n] : m.op_histogram) hist->bind(1, op).bind(2, n).run();
}

void write_breaks(SqliteDb& db, const std::vector<GraphBreakRecord>& breaks) {
  auto st = db.prepare(
      "INSERT INTO breaks (seq, category, break_id, op, reason, hint, file, line, col, text, module_path, "
      "ends_region, resumes_region, hits, compile_id, user_stack_json) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  int64_t seq = 0;
  for (const auto& r : breaks) {
    const auto& b = r.info;
    st->bind(1, seq++).bind(2, capture::break_category_info(b.category).name).bind(3, b.id).bind(4, b.op);
    st->bind(5, b.reason).bind(6, b.hint).bind(7, b.loc.file).bind(8, b.loc.line).bind(9, b.loc.col);
    st->bind(10, b.loc.text).bind(11, b.module_path).bind(12, b.ends_region).bind(13, b.resumes_region);
    st->bind(14, r.hits).bind(15, r.compile_id).bind(16, json_text(r.user_stack)).run();
  }
}

void write_regions(SqliteDb& db, const std::vector<CompiledRegion>& regions) {
  auto reg = db.prepare(
      "INSERT INTO regions (seq, compile_id, region, frame, guards_json, symbols_json, recompile_reason, "
      "compile_ms, hits, metrics_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  auto graph = db.prepare(
      "INSERT INTO region_graphs (region_seq, seq, stage, text, json, dot) VALUES (?, ?, ?, ?, ?, ?)");
  int64_t seq = 0;
  for (const auto& r : regions) {
    reg->bind(1, seq).bind(2, r.compile_id).bind(3, r.region).bind(4, r.frame).bind(5, json_text(r.guards));
    reg->bind(6, json_text(r.symbols)).bind(7, r.recompile_reason).bind(8, r.compile_ms).bind(9, r.hits);
    reg->bind(10, json_text(r.metrics)).run();
    int64_t g = 0;
    for (const auto& sg : r.graphs) {
      graph->bind(1, seq).bind(2, g++).bind(3, sg.stage).bind(4, sg.text).bind(5, sg.json).bind(6, sg.dot).run();
    }
    ++seq;
  }
}

void write_events(SqliteDb& db, const std::vector<capture::Event>& events) {
  auto st = db.prepare(
      "INSERT INTO events (seq, kind, t_ns, call, region, compile_id, message) VALUES (?, ?, ?, ?, ?, ?, ?)");
  int64_t seq = 0;
  for (const auto& e : events) {
    st->bind(1, seq++).bind(2, capture::event_kind_name(e.kind)).bind(3, e.t_ns).bind(4, e.call);
    st->bind(5, e.region).bind(6, e.compile_id).bind(7, e.message).run();
  }
}

void write_fusion_and_notes(SqliteDb& db, const Session& s) {
  auto fusion = db.prepare(
      "INSERT INTO fusion (seq, compile_id, first, second, fused, reason) VALUES (?, ?, ?, ?, ?, ?)");
  int64_t seq = 0;
  for (const auto& f : s.fusion) {
    fusion->bind(1, seq++).bind(2, f.compile_id).bind(3, f.first).bind(4, f.second).bind(5, f.fused);
    fusion->bind(6, f.reason).run();
  }
  auto note = db.prepare("INSERT INTO import_notes (seq, source, what, count, example) VALUES (?, ?, ?, ?, ?)");
  seq = 0;
  for (const auto& n : s.import_notes) {
    note->bind(1, seq++).bind(2, n.source).bind(3, n.what).bind(4, n.count).bind(5, n.example).run();
  }
}

}  // namespace

void write_header(SqliteDb& db, const Session& s) {
  write_env_and_model(db, s);
  write_breaks(db, s.breaks);
  write_regions(db, s.regions);
  write_events(db, s.events);
  write_kernels(db, s.kernels);
  write_fusion_and_notes(db, s);
}

void write_break_costs(SqliteDb& db, const std::vector<BreakCost>& costs) {
  // Appending to a schema-2 file written before the imported-run or lost-fusion columns: add them.
  for (const char* column : {"device_ms REAL", "compile_ms REAL", "compiles INTEGER", "unmeasured TEXT",
                             "lost_fusion_checked INTEGER", "lost_fusion TEXT", "lost_fusion_ms REAL",
                             "lost_fusion_unmeasured TEXT"}) {
    std::string def(column);
    if (!db.has_column("break_costs", def.substr(0, def.find(' ')))) db.exec("ALTER TABLE break_costs ADD COLUMN " + def);
  }
  auto st = db.prepare(
      "INSERT INTO break_costs (seq, run, break_id, reason, file, line, iterations, gaps, shared_gaps, gap_ms, "
      "interpreter_ms, guard_ms, total_ms, step_ms, share, fusion_pair, fusion_pair_ms, device_ms, compile_ms, "
      "compiles, unmeasured, lost_fusion_checked, lost_fusion, lost_fusion_ms, lost_fusion_unmeasured) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  int64_t seq = next_seq(db, "break_costs");
  for (const auto& c : costs) {
    st->bind(1, seq++).bind(2, c.run).bind(3, c.break_id).bind(4, c.reason).bind(5, c.file).bind(6, c.line);
    st->bind(7, c.iterations).bind(8, c.gaps).bind(9, c.shared_gaps).bind(10, c.gap_ms).bind(11, c.interpreter_ms);
    st->bind(12, c.guard_ms).bind(13, c.total_ms).bind(14, c.step_ms).bind(15, c.share).bind(16, c.fusion_pair);
    st->bind(17, c.fusion_pair_ms).bind(18, c.device_ms).bind(19, c.compile_ms).bind(20, c.compiles);
    st->bind(21, c.unmeasured).bind(22, c.lost_fusion_checked ? 1 : 0).bind(23, c.lost_fusion);
    st->bind(24, c.lost_fusion_ms).bind(25, c.lost_fusion_unmeasured).run();
  }
}

namespace {

nlohmann::json pass_json(const RecompilePass& p) {
  return {{"dynamic", p.dynamic},       {"compiles", p.compiles},         {"compile_ms", p.compile_ms},
          {"cold_ms", p.cold_ms},       {"warm_call_ms", p.warm_call_ms}, {"failed_guard_ms", p.failed_guard_ms},
          {"eager_fallback_ms", p.eager_fallback_ms}};
}

}  // namespace

void write_recompile_costs(SqliteDb& db, const RecompileCosts& c) {
  if (!c.measured()) return;
  // A file written before these tables existed: add them.
  if (!db.has_table("recompile_costs"))
    db.exec(
        "CREATE TABLE recompile_costs (seq INTEGER PRIMARY KEY, region INTEGER, compile_ms REAL, "
        "failed_guard_checks INTEGER, failed_guard_ms REAL, eager_fallback_calls INTEGER, eager_fallback_ms REAL, "
        "limit_reached INTEGER, entries_json TEXT)");
  if (!db.has_table("recompile_summary"))
    db.exec("CREATE TABLE recompile_summary (rounds INTEGER, calls INTEGER, pass_json TEXT, advice_json TEXT, "
            "effect_json TEXT)");
  db.exec("DELETE FROM recompile_costs");
  db.exec("DELETE FROM recompile_summary");
  auto st = db.prepare(
      "INSERT INTO recompile_costs (seq, region, compile_ms, failed_guard_checks, failed_guard_ms, "
      "eager_fallback_calls, eager_fallback_ms, limit_reached, entries_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
  int64_t seq = 0;
  for (const auto& r : c.regions) {
    nlohmann::json entries = nlohmann::json::array();
    for (const auto& e : r.entries)
      entries.push_back({{"compile_id", e.compile_id}, {"compile_ms", e.compile_ms}, {"hits", e.hits},
                         {"recompile_reason", e.recompile_reason}});
    st->bind(1, seq++).bind(2, r.region).bind(3, r.compile_ms).bind(4, r.failed_guard_checks);
    st->bind(5, r.failed_guard_ms).bind(6, r.eager_fallback_calls).bind(7, r.eager_fallback_ms);
    st->bind(8, r.limit_reached ? 1 : 0).bind(9, safe_dump(entries)).run();
  }
  std::string effect;
  if (c.has_effect)
    effect = safe_dump(nlohmann::json{{"advice", c.effect.advice},
                                      {"before", pass_json(c.effect.before)},
                                      {"after", pass_json(c.effect.after)},
                                      {"outputs_equal", c.effect.outputs_equal},
                                      {"max_abs_diff", c.effect.max_abs_diff}});
  auto sum = db.prepare(
      "INSERT INTO recompile_summary (rounds, calls, pass_json, advice_json, effect_json) VALUES (?, ?, ?, ?, ?)");
  sum->bind(1, c.rounds).bind(2, c.calls).bind(3, safe_dump(pass_json(c.pass))).bind(4, json_text(c.advice));
  sum->bind(5, effect).run();
}

void write_runs(SqliteDb& db, const std::vector<Run>& runs, const std::vector<int>& ids) {
  if (runs.empty()) return;
  auto st = db.prepare(
      "INSERT INTO runs (seq, id, mode, backend, device, status, compile_cold_ms, compile_warm_ms, first_call_ms, "
      "median_ms, p10_ms, p90_ms, iterations, kernels_per_iter, gpu_busy, launch_gap_ms, host_overhead_ms, "
      "peak_memory_bytes, speedup_vs_eager, max_abs_error, max_rel_error) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  int64_t seq = next_seq(db, "runs");
  for (size_t i = 0; i < runs.size(); ++i) {
    const Run& r = runs[i];
    st->bind(1, seq++).bind(2, ids.at(i)).bind(3, r.mode).bind(4, r.backend).bind(5, r.device);
    st->bind(6, r.status).bind(7, r.compile_cold_ms).bind(8, r.compile_warm_ms).bind(9, r.first_call_ms);
    st->bind(10, r.latency.median_ms).bind(11, r.latency.p10_ms).bind(12, r.latency.p90_ms);
    st->bind(13, r.latency.iterations).bind(14, r.kernels_per_iter).bind(15, r.gpu_busy);
    st->bind(16, r.launch_gap_ms).bind(17, r.host_overhead_ms).bind(18, r.peak_memory_bytes);
    st->bind(19, r.speedup_vs_eager).bind(20, r.max_abs_error).bind(21, r.max_rel_error).run();
  }
}

void write_run(SqliteDb& db, const Run& r, int id) { write_runs(db, {r}, {id}); }

namespace {

// Args shorter than this are stored whole; in longer ones, a member value of at least
// kSharedValueBytes is stored once (args_parts) however many rows hold it.
constexpr size_t kSplitArgsBytes = 8192;
constexpr size_t kSharedValueBytes = 4096;

// The index of the '"' that closes the string whose contents start at `i` (text.size() if none).
size_t string_end(std::string_view text, size_t i) {
  while (i < text.size()) {
    const void* q = std::memchr(text.data() + i, '"', text.size() - i);
    if (!q) return text.size();
    size_t at = static_cast<size_t>(static_cast<const char*>(q) - text.data());
    size_t backslashes = 0;
    while (at - backslashes > i && text[at - backslashes - 1] == '\\') ++backslashes;
    if (backslashes % 2 == 0) return at;
    i = at + 1;
  }
  return text.size();
}

// [begin, end) of the longest member value of the JSON object `text` (minified or not, without the
// white space around it); an empty range when text is no object. Text that is not JSON gives some
// range or none: the row stores text[0, begin) + text[begin, end) + text[end, size) either way, so
// it reads back as written.
std::pair<size_t, size_t> longest_member_value(std::string_view text) {
  size_t i = text.find_first_not_of(" \t\r\n");
  if (i == std::string_view::npos || text[i] != '{') return {0, 0};
  std::pair<size_t, size_t> best{0, 0};
  size_t value_begin = std::string_view::npos;
  int depth = 0;
  auto space = [&](size_t at) { return text[at] == ' ' || text[at] == '\t' || text[at] == '\r' || text[at] == '\n'; };
  auto close_value = [&](size_t end) {  // the value without the white space around it
    if (value_begin == std::string_view::npos) return;
    while (value_begin < end && space(value_begin)) ++value_begin;
    while (end > value_begin && space(end - 1)) --end;
    if (end - value_begin > best.second - best.first) best = {value_begin, end};
    value_begin = std::string_view::npos;
  };
  for (; i < text.size(); ++i) {
    switch (text[i]) {
      case '"': i = string_end(text, i + 1); break;
      case '{':
      case '[': ++depth; break;
      case '}':
      case ']':
        if (depth == 1) close_value(i);
        if (--depth == 0) return best;
        break;
      case ':':
        if (depth == 1) value_begin = i + 1;
        break;
      case ',':
        if (depth == 1) close_value(i);
        break;
      default: break;
    }
  }
  return best;
}

// The large values of one write_timeline call, each stored once; identical texts share an id.
class SharedValues {
 public:
  explicit SharedValues(SqliteDb& db) : insert_(db.prepare("INSERT INTO args_parts (text) VALUES (?)")), db_(db) {}

  // The id of `text` in args_parts, stored now if this call has not stored it. `text` stays valid
  // (it lives in the events being written) until the call ends.
  int64_t id(std::string_view text) {
    auto& candidates = by_key_[key(text)];
    for (const auto& [stored, id] : candidates)
      if (stored == text) return id;
    insert_->bind_view(1, text).run();
    int64_t id = db_.last_insert_rowid();
    candidates.emplace_back(text, id);
    return id;
  }

 private:
  // Length and a sample of the bytes (both ends, and spread over the middle): cheap to compute
  // for long texts; equal keys are told apart by comparing the texts.
  static uint64_t key(std::string_view t) {
    uint64_t h = std::hash<size_t>()(t.size());
    auto mix = [&h](std::string_view s) { h = (h ^ std::hash<std::string_view>()(s)) * 0x9E3779B97F4A7C15ull; };
    constexpr size_t kSample = 64;
    mix(t.substr(0, kSample));
    mix(t.substr(t.size() - std::min(t.size(), kSample)));
    for (size_t step = t.size() / 16, at = step; step >= kSample && at + kSample < t.size(); at += step)
      mix(t.substr(at, kSample));
    return h;
  }

  std::unique_ptr<SqliteStatement> insert_;
  SqliteDb& db_;
  std::unordered_map<uint64_t, std::vector<std::pair<std::string_view, int64_t>>> by_key_;
};

// Rows per INSERT statement of write_timeline_rows: one statement run per row costs a B-tree seek
// and a statement reset each; many rows in one keep its cursor at the table's end.
constexpr size_t kRowsPerInsert = 64;

// write_timeline for files written before the timeline was stored in blocks: one row per event, in
// timeline_rows (under a view) or, older still, in a plain timeline table.
void write_timeline_rows(SqliteDb& db, const TimelineEvent* first, const TimelineEvent* last, int run_override,
                         int64_t first_seq) {
  const bool rows_table = db.has_table("timeline_rows");
  const std::string table = rows_table ? "timeline_rows" : "timeline";
  const int columns = rows_table ? 13 : 11;
  auto insert = [&](size_t rows) {
    std::string row = "(?";
    for (int c = 1; c < columns; ++c) row += ", ?";
    row += ')';
    std::string sql = "INSERT INTO " + table +
                      " (seq, run, lane, name, category, start_ns, dur_ns, compile_id, kernel, correlation, args_json" +
                      (rows_table ? ", args_part, args_tail) VALUES " : ") VALUES ") + row;
    for (size_t r = 1; r < rows; ++r) sql += ", " + row;
    return db.prepare(sql);
  };
  std::unique_ptr<SqliteStatement> many, one;
  std::unique_ptr<SharedValues> shared;
  int64_t seq = first_seq >= 0 ? first_seq : next_seq(db, table);
  const int64_t seq_of_first = seq;
  // The texts live in the events until run() resets the statement.
  auto bind = [&](SqliteStatement& st, int at, const TimelineEvent& e) {
    // The first row's seq is given; the others' is left to SQLite, which numbers a row after the
    // largest stored (the same numbers, without a uniqueness check per row).
    if (seq == seq_of_first) st.bind(at + 1, seq);
    ++seq;
    st.bind(at + 2, run_override >= 0 ? run_override : e.run).bind_view(at + 3, e.lane);
    st.bind_view(at + 4, e.name).bind_view(at + 5, e.category).bind(at + 6, e.start_ns).bind(at + 7, e.dur_ns);
    st.bind_view(at + 8, e.compile_id).bind_view(at + 9, e.kernel).bind(at + 10, e.correlation);
    std::string_view args = e.args_json;
    auto [begin, end] = rows_table && args.size() >= kSplitArgsBytes ? longest_member_value(args)
                                                                     : std::pair<size_t, size_t>{0, 0};
    if (end - begin >= kSharedValueBytes) {
      if (!shared) shared = std::make_unique<SharedValues>(db);
      st.bind_view(at + 11, args.substr(0, begin)).bind(at + 12, shared->id(args.substr(begin, end - begin)));
      st.bind_view(at + 13, args.substr(end));
    } else {
      st.bind_view(at + 11, args);  // args_part and args_tail stay NULL
    }
  };
  const TimelineEvent* it = first;
  for (; static_cast<size_t>(last - it) >= kRowsPerInsert; it += kRowsPerInsert) {
    if (!many) many = insert(kRowsPerInsert);
    for (size_t r = 0; r < kRowsPerInsert; ++r) bind(*many, static_cast<int>(r) * columns, it[r]);
    many->run();
  }
  for (; it != last; ++it) {
    if (!one) one = insert(1);
    bind(*one, 0, *it);
    one->run();
  }
}

// Timelines of this many events or more are encoded by more threads than this one (write_timeline_blocks):
// one per core, at most kEncoders in all.
constexpr size_t kTwoEncoderEvents = 20000;
constexpr unsigned kEncoders = 8;
// Blocks encoded ahead of the one being inserted, at most (their texts wait in memory).
constexpr size_t kBlocksAhead = 32;
// After this many bytes of block text, the file's pages written so far are sent to the disk
// (SqliteDb::start_writeback: written and flushed by a thread of its own) instead of all at the
// final fsync.
constexpr size_t kWritebackBytes = size_t(32) << 20;

// write_timeline for files with timeline_blocks: the blocks' texts are made on this thread and, for
// large timelines, on helpers, one per further core (each takes the next block not yet taken, up to
// kBlocksAhead ahead of the insert), and inserted here in order. Shared args values are stored first, here.
void write_timeline_blocks(SqliteDb& db, const TimelineEvent* first, const TimelineEvent* last, int run_override,
                           int64_t first_seq) {
  if (first == last) return;
  int64_t seq = first_seq;
  if (seq < 0) {
    auto st = db.prepare("SELECT first_seq + count FROM timeline_blocks ORDER BY first_seq DESC LIMIT 1");
    seq = st->step() ? st->column_int(0) : 0;
  }
  ArgsSplits splits;
  std::unique_ptr<SharedValues> shared;
  for (const TimelineEvent* e = first; e != last; ++e) {
    if (e->args_json.size() < kSplitArgsBytes) continue;
    auto [begin, end] = longest_member_value(e->args_json);
    if (end - begin < kSharedValueBytes) continue;
    if (!shared) shared = std::make_unique<SharedValues>(db);
    splits[e] = {begin, end, shared->id(std::string_view(e->args_json).substr(begin, end - begin))};
  }
  const std::vector<TimelineBlock> blocks = plan_blocks(first, last, run_override);
  const size_t count = blocks.size();
  auto insert = db.prepare("INSERT INTO timeline_blocks (first_seq, run, count, memory, events) VALUES (?, ?, ?, ?, ?)");

  std::vector<BlockText> texts(std::min(count, kBlocksAhead));
  std::vector<char> ready(count, 0);
  std::mutex m;
  std::condition_variable changed;
  size_t next = 0, inserted = 0;  // the next block to take; the blocks inserted
  bool stop = false;
  std::exception_ptr failed;
  // Takes the next block when one may be taken (under the lock); count when none is left.
  auto take = [&](std::unique_lock<std::mutex>& lock, bool wait) -> size_t {
    if (wait) changed.wait(lock, [&] { return stop || next >= count || next < inserted + texts.size(); });
    if (stop || next >= count || next >= inserted + texts.size()) return count;
    return next++;
  };
  auto encode = [&](size_t i, std::unique_lock<std::mutex>& lock) {
    BlockText& text = texts[i % texts.size()];  // free: block i - kBlocksAhead is inserted
    lock.unlock();
    text.clear();
    append_block_text(text, first + blocks[i].begin, first + blocks[i].end, splits);
    lock.lock();
    ready[i] = 1;
    changed.notify_all();
  };
  std::vector<std::thread> helpers;
  const unsigned cores = usable_cores();
  const unsigned helper_count =
      static_cast<size_t>(last - first) >= kTwoEncoderEvents ? std::min(cores, kEncoders) - 1 : 0;
  for (unsigned h = 0; h < helper_count; ++h) {
    try {
      helpers.emplace_back([&] {
        std::unique_lock<std::mutex> lock(m);
        try {
          for (size_t i; (i = take(lock, true)) < count;) encode(i, lock);
        } catch (...) {
          if (!lock.owns_lock()) lock.lock();
          failed = std::current_exception();
          stop = true;
          changed.notify_all();
        }
      });
    } catch (...) {
      break;  // no thread (or memory for one) to be had: the ones started, and this one, encode
    }
  }
  auto finish_helper = [&] {
    {
      std::lock_guard<std::mutex> lock(m);
      stop = true;
    }
    changed.notify_all();
    for (auto& helper : helpers) helper.join();
  };
  size_t since_writeback = 0;  // bytes of text inserted since the last start_writeback
  try {
    std::unique_lock<std::mutex> lock(m);
    for (size_t i = 0; i < count; ++i) {
      // Until block i is ready: make the next free block here (block i itself when nobody took it).
      while (!ready[i]) {
        if (failed) std::rethrow_exception(failed);
        size_t j = take(lock, false);
        if (j < count) encode(j, lock);
        else if (!ready[i]) changed.wait(lock, [&] { return ready[i] || failed != nullptr; });
      }
      const std::string_view text = texts[i % texts.size()].view();  // not taken again before ++inserted
      lock.unlock();
      const TimelineBlock& b = blocks[i];
      insert->bind(1, seq + static_cast<int64_t>(b.begin)).bind(2, b.run);
      insert->bind(3, static_cast<int64_t>(b.end - b.begin)).bind(4, b.memory).bind_view(5, text).run();
      if ((since_writeback += text.size()) >= kWritebackBytes) {
        db.start_writeback();  // the disk writes what is done while the rest is made
        since_writeback = 0;
      }
      lock.lock();
      ++inserted;
      changed.notify_all();
    }
  } catch (...) {
    finish_helper();
    throw;
  }
  finish_helper();
}

}  // namespace

void write_timeline(SqliteDb& db, const std::vector<TimelineEvent>& events, int run_override) {
  write_timeline(db, events.data(), events.data() + events.size(), run_override, -1);
}

void write_timeline(SqliteDb& db, const TimelineEvent* first, const TimelineEvent* last, int run_override,
                    int64_t first_seq) {
  if (db.has_table("timeline_blocks")) write_timeline_blocks(db, first, last, run_override, first_seq);
  else write_timeline_rows(db, first, last, run_override, first_seq);
}

void write_kernels(SqliteDb& db, const std::vector<Kernel>& kernels) {
  auto kern = db.prepare(
      "INSERT INTO kernels (seq, name, compile_id, language, source, nodes_json, launch_config, registers, "
      "shared_bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
  auto tune = db.prepare("INSERT INTO autotune (kernel_seq, seq, config, ms, chosen) VALUES (?, ?, ?, ?, ?)");
  int64_t seq = next_seq(db, "kernels");
  for (const auto& k : kernels) {
    kern->bind(1, seq).bind(2, k.name).bind(3, k.compile_id).bind(4, k.language).bind(5, k.source);
    kern->bind(6, json_text(k.nodes)).bind(7, k.launch_config).bind(8, k.registers).bind(9, k.shared_bytes).run();
    int64_t c = 0;
    for (const auto& a : k.autotune) tune->bind(1, seq).bind(2, c++).bind(3, a.config).bind(4, a.ms).bind(5, a.chosen).run();
    ++seq;
  }
}

bool write_autotune(SqliteDb& db, const std::string& kernel, const std::string& compile_id,
                    const std::vector<AutotuneCandidate>& candidates) {
  auto find = db.prepare("SELECT seq FROM kernels WHERE name = ? AND compile_id = ? ORDER BY seq LIMIT 1");
  find->bind(1, kernel).bind(2, compile_id);
  if (!find->step()) return false;
  int64_t seq = find->column_int(0);
  find.reset();
  db.prepare("DELETE FROM autotune WHERE kernel_seq = ?")->bind(1, seq).run();
  auto tune = db.prepare("INSERT INTO autotune (kernel_seq, seq, config, ms, chosen) VALUES (?, ?, ?, ?, ?)");
  int64_t c = 0;
  for (const auto& a : candidates) tune->bind(1, seq).bind(2, c++).bind(3, a.config).bind(4, a.ms).bind(5, a.chosen).run();
  return true;
}

int next_run_id(SqliteDb& db) {
  auto st = db.prepare("SELECT COALESCE(MAX(id) + 1, 0) FROM runs");
  st->step();
  return static_cast<int>(st->column_int(0));
}

}  // namespace kiln::session
