// Linking a Kineto trace: flows complete missing correlations; correlation links GPU work to its
// runtime call, "External id" to the CPU op that made it; ProfilerStep spans (or the whole trace)
// become runs with their summary numbers.
#include <algorithm>
#include <iterator>
#include <map>

#include "engine/base/in_parts.h"
#include "engine/importers/common/id_index.h"
#include "engine/importers/common/json_doc.h"
#include "engine/importers/kineto/kineto_trace.h"

namespace kiln::importers {

namespace {

// json_quote(s) appended to out; without a copy for text that needs no escape (most names).
void append_quoted(std::string& out, std::string_view s) {
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == '"' || c == '\\') {
      out += json_quote(s);
      return;
    }
  }
  out += '"';
  out.append(s);
  out += '"';
}

// Adds "key": value to object (see add_json_field), the value quoted first when `quote`: written
// in place before the object's closing brace, so an object with room to spare (the reader leaves
// some in GPU events' args) takes it without a new allocation.
void add_field(std::string& object, std::string_view key, std::string_view value, bool quote) {
  const bool empty = object.empty() || object == "{}";
  size_t close = object.size();
  if (!empty) {
    close = object.rfind('}');
    if (close == std::string::npos) return;
  }
  thread_local std::string piece;
  piece.clear();
  if (empty) piece += '{';
  else piece += ',';
  append_quoted(piece, key);
  piece += ':';
  if (quote) append_quoted(piece, value);
  else piece.append(value);
  if (empty) {
    piece += '}';
    object.assign(piece);
  } else {
    object.insert(close, piece);
  }
}

}  // namespace

void add_json_field(std::string& object, std::string_view key, std::string_view value_json) {
  add_field(object, key, value_json, false);
}

namespace {

// What one pass over the events finds for the links, in timeline order (in parts at once): the GPU
// events (the passes that concern them alone split these evenly over the threads: a trace lists its
// GPU work together, often after all of the CPU's), the runtime calls with a correlation and the CPU
// ops with an External id, each as (id, index).
struct LinkScan {
  std::vector<size_t> gpu;
  std::vector<std::pair<int64_t, size_t>> calls, ops;
  bool missing = false;  // a GPU event or runtime call without a correlation
};

LinkScan scan_links(const KinetoTrace& t) {
  const auto& tl = t.session.timeline;
  auto parts = in_parts_map(t.ids.size(), [&](size_t begin, size_t end) {
    LinkScan p;
    for (size_t i = begin; i < end; ++i) {
      const EventIds& ids = t.ids[i];
      if (ids.device) {
        p.gpu.push_back(i);
        p.missing = p.missing || tl[i].correlation < 0;
      } else if (ids.runtime) {
        if (tl[i].correlation >= 0) p.calls.emplace_back(tl[i].correlation, i);
        else p.missing = true;
      } else if (ids.external_id >= 0) {
        p.ops.emplace_back(ids.external_id, i);
      }
    }
    return p;
  });
  if (parts.size() == 1) return std::move(parts.front());
  LinkScan all;
  size_t gpu = 0, calls = 0, ops = 0;
  for (const auto& p : parts) {
    gpu += p.gpu.size();
    calls += p.calls.size();
    ops += p.ops.size();
  }
  all.gpu.reserve(gpu);
  all.calls.reserve(calls);
  all.ops.reserve(ops);
  for (const auto& p : parts) {
    all.gpu.insert(all.gpu.end(), p.gpu.begin(), p.gpu.end());
    all.calls.insert(all.calls.end(), p.calls.begin(), p.calls.end());
    all.ops.insert(all.ops.end(), p.ops.begin(), p.ops.end());
    all.missing = all.missing || p.missing;
  }
  return all;
}

// Correlations the trace left out, taken from its "ac2g" flows (same lane and time).
void complete_correlations(KinetoTrace& t) {
  std::map<std::pair<std::string, int64_t>, int64_t> starts, ends;  // (lane, ts) → flow id
  for (const auto& f : t.flows) (f.start ? starts : ends)[{f.lane, f.ts_ns}] = f.id;
  for (size_t i = 0; i < t.ids.size(); ++i) {
    auto& ev = t.session.timeline[i];
    if (ev.correlation >= 0 || !(t.ids[i].device || t.ids[i].runtime)) continue;
    auto& table = t.ids[i].device ? ends : starts;
    auto it = table.find({ev.lane, ev.start_ns});
    if (it != table.end()) ev.correlation = it->second;
  }
}

// id → the first index that carried it, as the trace lists them.
IdIndex index_of(const std::vector<std::pair<int64_t, size_t>>& found) {
  IdIndex index(found.size());
  for (const auto& [id, i] : found) index.emplace(id, i);
  return index;
}

void annotate_launches(KinetoTrace& t, const IdIndex& runtime_of, const std::vector<size_t>& gpu,
                       const IdIndex& op_of) {
  auto& tl = t.session.timeline;
  // Each GPU event's args change alone; the calls and ops it names are only read.
  in_parts(gpu.size(), [&](size_t begin, size_t end) {
    for (size_t g = begin; g < end; ++g) {
      const size_t i = gpu[g];
      int64_t ext = t.ids[i].external_id;
      const size_t r = tl[i].correlation >= 0 ? runtime_of.find(tl[i].correlation) : IdIndex::kAbsent;
      if (r != IdIndex::kAbsent) {
        add_field(tl[i].args_json, "launch", tl[r].name, true);
        if (tl[r].name == "cudaGraphLaunch") add_json_field(tl[i].args_json, "cuda_graph", "true");
        if (ext < 0) ext = t.ids[r].external_id;
      }
      const size_t op = ext >= 0 ? op_of.find(ext) : IdIndex::kAbsent;
      if (op != IdIndex::kAbsent) add_field(tl[i].args_json, "cpu_op", tl[op].name, true);
    }
  });
}

// Length of the union of [start, end) intervals, and the mean gap between consecutive ones.
void busy_and_gaps(std::vector<std::pair<int64_t, int64_t>>& iv, int64_t* busy, double* mean_gap) {
  std::sort(iv.begin(), iv.end());
  *busy = 0;
  int64_t gaps = 0, gap_count = 0, end = INT64_MIN;
  for (const auto& [s, e] : iv) {
    if (end != INT64_MIN) {
      gaps += std::max<int64_t>(0, s - end);
      ++gap_count;
    }
    if (s >= end) *busy += e - s;
    else if (e > end) *busy += e - end;
    end = std::max(end, e);
  }
  *mean_gap = gap_count ? double(gaps) / double(gap_count) : 0;
}

// Returns how many events lie outside every run.
int64_t make_runs(KinetoTrace& t, const IdIndex& runtime_of, const std::vector<size_t>& gpu) {
  auto& s = t.session;
  auto& tl = s.timeline;
  struct Window {
    int64_t start, end;
    std::string name;
  };
  std::vector<Window> steps;
  for (auto& part : in_parts_map(tl.size(), [&](size_t begin, size_t end) {
         std::vector<Window> found;
         for (size_t i = begin; i < end; ++i) {
           const auto& ev = tl[i];
           if (ev.category == "step" && ev.lane.rfind("host:", 0) == 0)
             found.push_back({ev.start_ns, ev.start_ns + ev.dur_ns, ev.name});
         }
         return found;
       }))
    std::move(part.begin(), part.end(), std::back_inserter(steps));
  std::sort(steps.begin(), steps.end(), [](const Window& a, const Window& b) { return a.start < b.start; });
  if (steps.empty()) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (const auto& ev : tl) {
      lo = std::min(lo, ev.start_ns);
      hi = std::max(hi, ev.start_ns + ev.dur_ns);
    }
    if (tl.empty()) lo = hi = 0;
    steps.push_back({lo, hi, "imported"});
  }
  auto run_at = [&](int64_t ts) -> int {
    auto it = std::upper_bound(steps.begin(), steps.end(), ts, [](int64_t v, const Window& w) { return v < w.start; });
    if (it == steps.begin()) return -1;
    --it;
    return ts <= it->end ? static_cast<int>(it - steps.begin()) : -1;
  };

  // Host events by time, then GPU work by the run of its launch (a host event's).
  in_parts(tl.size(), [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i)
      if (!t.ids[i].device) tl[i].run = run_at(tl[i].start_ns);
  });
  in_parts(gpu.size(), [&](size_t begin, size_t end) {
    for (size_t g = begin; g < end; ++g) {
      const size_t i = gpu[g];
      const size_t r = tl[i].correlation >= 0 ? runtime_of.find(tl[i].correlation) : IdIndex::kAbsent;
      tl[i].run = r != IdIndex::kAbsent ? tl[r].run : run_at(tl[i].start_ns);
    }
  });

  // Per run: GPU busy intervals, kernels, guard time, whether compiled code ran; gathered per part
  // of the timeline, then added up in timeline order.
  struct Tally {
    std::vector<std::vector<std::pair<int64_t, int64_t>>> busy;
    std::vector<int64_t> kernels, guard_ns;
    std::vector<char> compiled;
    std::string device;   // the first GPU event's device
    int64_t orphans = 0;  // events outside every run
  };
  const size_t run_count = steps.size();
  std::vector<Tally> parts = in_parts_map(tl.size(), [&](size_t begin, size_t end) {
    Tally p;
    p.busy.resize(run_count);
    p.kernels.assign(run_count, 0);
    p.guard_ns.assign(run_count, 0);
    p.compiled.assign(run_count, 0);
    for (size_t i = begin; i < end; ++i) {
      const auto& ev = tl[i];
      const int r = ev.run;
      if (r < 0) {
        ++p.orphans;
        continue;
      }
      if (t.ids[i].busy) p.busy[r].push_back({ev.start_ns, ev.start_ns + ev.dur_ns});
      if (ev.category == "kernel") ++p.kernels[r];
      else if (ev.category == "guard") p.guard_ns[r] += ev.dur_ns;
      else if (ev.category == "region") p.compiled[r] = 1;
      if (t.ids[i].device && p.device.empty()) p.device = ev.lane.substr(0, ev.lane.find('/'));
    }
    return p;
  });
  Tally all = std::move(parts.front());
  for (size_t k = 1; k < parts.size(); ++k) {
    Tally& p = parts[k];
    for (size_t r = 0; r < run_count; ++r) {
      all.busy[r].insert(all.busy[r].end(), p.busy[r].begin(), p.busy[r].end());
      all.kernels[r] += p.kernels[r];
      all.guard_ns[r] += p.guard_ns[r];
      all.compiled[r] = all.compiled[r] || p.compiled[r];
    }
    if (all.device.empty()) all.device = std::move(p.device);
    all.orphans += p.orphans;
  }
  auto& busy = all.busy;
  const auto& kernels = all.kernels;
  const auto& guard_ns = all.guard_ns;
  const auto& compiled = all.compiled;
  const std::string& device = all.device;
  std::sort(t.memory.begin(), t.memory.end(), [](const auto& a, const auto& b) { return a.ts_ns < b.ts_ns; });
  for (size_t r = 0; r < steps.size(); ++r) {
    session::Run run;
    run.id = static_cast<int>(r);
    run.mode = steps[r].name;
    run.backend = compiled[r] ? "torch.compile" : "eager";
    run.device = device.empty() ? "cpu" : device;
    double ms = double(steps[r].end - steps[r].start) / 1e6;
    run.latency.median_ms = run.latency.p10_ms = run.latency.p90_ms = ms;
    run.latency.iterations = 1;
    run.kernels_per_iter = double(kernels[r]);
    int64_t busy_ns = 0;
    double gap_ns = 0;
    busy_and_gaps(busy[r], &busy_ns, &gap_ns);
    int64_t span = steps[r].end - steps[r].start;
    run.gpu_busy = span > 0 ? std::min(1.0, double(busy_ns) / double(span)) : 0;
    run.launch_gap_ms = gap_ns / 1e6;
    run.host_overhead_ms = double(guard_ns[r]) / 1e6;
    auto m = std::lower_bound(t.memory.begin(), t.memory.end(), steps[r].start,
                              [](const MemorySample& s, int64_t ts) { return s.ts_ns < ts; });
    for (; m != t.memory.end() && m->ts_ns <= steps[r].end; ++m)
      run.peak_memory_bytes = std::max(run.peak_memory_bytes, m->allocated);
    s.runs.push_back(std::move(run));
  }
  return all.orphans;
}

}  // namespace

void link_kineto_trace(KinetoTrace& t, ImportTally& tally) {
  LinkScan scan = scan_links(t);
  if (scan.missing && !t.flows.empty()) {
    complete_correlations(t);
    scan = scan_links(t);
  }
  const IdIndex runtime_of = index_of(scan.calls);  // correlation → the runtime call
  const IdIndex op_of = index_of(scan.ops);         // External id → the CPU op
  annotate_launches(t, runtime_of, scan.gpu, op_of);
  const int64_t orphans = make_runs(t, runtime_of, scan.gpu);
  if (orphans > 0 && t.session.runs.size() > 1)
    tally.note("events outside every ProfilerStep (run -1)", t.session.timeline.front().name, orphans);
}

}  // namespace kiln::importers
