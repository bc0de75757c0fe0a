// One analysis of where a run's device time went, kernel by kernel (as `nsys stats`'s
// cuda_gpu_kern_sum does), read by `kiln stats`, the reports and the workbench's Kernels panel.
//
// kernel_stats(session, run)
//   pre:  run is a Run::id of the session, or -1 for the import-wide events of a session without runs.
//   post: on a run with device records (timeline events on a "cuda:…" lane of category "kernel",
//         from CUPTI or an imported profiler trace) every such record is counted once, in the row of
//         its kernel name and launcher; rows are sorted by total time, longest first; the rows'
//         total_ns add up to total_ns, which is the sum of the run's device kernel records.
//         Host spans never count as kernel time: they are summed separately, by category, in `host`.
//         A run without device records (the CPU) is measured from Kiln's host spans of its
//         kernels and extern calls instead; time_source says which.
//   Each row names what launched it: the Kiln kernel or compiled (Triton) kernel the record
//   carries, else the extern call or LibTorch op whose host span encloses the launch API call
//   with the record's correlation id; "" where nothing is known.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "engine/session/session.h"
#include "engine/session/session_rows.h"

namespace kiln::report {

struct KernelStat {
  std::string name;         // the device kernel (cuBLAS, cuDNN, Triton or Kiln's own)
  std::string launched_by;  // Kiln kernel, compiled kernel, extern call or op; "" unknown
  std::string launcher;     // "kiln kernel", "compiled kernel", "extern", "op", "CUDA graph replay" or ""
  std::string compile_id;   // region entry of the launcher, when known
  int64_t launches = 0;     // in the run's traced window
  double launches_per_iter = 0;
  int64_t total_ns = 0, min_ns = 0, max_ns = 0;
  double mean_ns = 0;
  double share = 0;  // of total_ns
};

struct HostCost {
  std::string category;  // "kernel" (launch spans), "extern", "guard", "interpreter", "cuda_runtime", ...
  int64_t calls = 0;
  int64_t total_ns = 0;
};

struct KernelStats {
  int run = -1;
  std::string time_source;  // "device" or "host" (no device records: Kiln's host spans of its kernels)
  int iterations = 1;       // traced iterations (or profiler steps) the counts are divided by
  int64_t total_ns = 0;     // sum of the run's device kernel records (host spans on the CPU)
  int64_t records = 0;      // how many records that sum holds
  std::vector<KernelStat> kernels;
  std::vector<HostCost> host;  // host spans by category, longest first
};

KernelStats kernel_stats(const session::Session& s, int run);
// The same from a session read row by row (session_rows.h): one pass over the run's events
// (each_event), each device record and launcher span kept as a few numbers with its names by number,
// not as the event; the kernel names through each_kernel.
KernelStats kernel_stats(session::SessionRows& rows, int run);

// The records kernel_stats sums, one by one, with what launched each: the analysis under it, for
// views that group device time otherwise (by graph node, module or source line: module_time.h).
// post: `records` holds every record kernel_stats counts, once, in timeline order; their durations
//       add up to kernel_stats(s, run).total_ns. Pointers point into s.timeline.
struct KernelRecord {
  const session::TimelineEvent* event = nullptr;  // the device record (the host span on the CPU)
  const session::TimelineEvent* span = nullptr;   // the Kiln kernel or extern call span around its launch,
                                                  // else the innermost launcher span (the record itself
                                                  // on the CPU); null when none was found
  std::string launched_by, launcher, compile_id;  // as in KernelStat
};
struct KernelRecords {
  int run = -1;
  std::string time_source;
  int iterations = 1;
  std::vector<KernelRecord> records;
  std::vector<HostCost> host;
};
KernelRecords kernel_records(const session::Session& s, int run);

// The summed time and launches per iteration of everything the Kiln kernel `k` launched on the
// device (all rows whose launcher is k, in k's region or with no region); nullptr-like zero
// launches when it did not run.
struct LauncherTime {
  int64_t total_ns = 0;
  double launches_per_iter = 0;
  double share = 0;
};
LauncherTime launcher_time(const KernelStats& stats, const session::Kernel& k);

// The run that `which` names: "MODE" (its first run), "MODE/BACKEND", or a peer backend alone
// ("cudagraphs"). A session without runs (an imported torch.compile log) answers -1 (its
// import-wide events). Throws kiln::Error listing the session's runs when none matches.
int find_run(const session::Session& s, const std::string& which);
int find_run(session::SessionRows& rows, const std::string& which);

// `kiln stats` output: a Markdown table (top `limit` kernels, then one line for the rest; 0 = all)
// under a heading of `level` (1 = "#"), and JSON with every row.
std::string render_kernel_stats_markdown(const session::Session& s, const KernelStats& stats, size_t limit = 0,
                                         int level = 1);
std::string render_kernel_stats_json(const session::Session& s, const KernelStats& stats);

// The run whose kernels a report shows: the fastest compiled run that recorded kernel time, else
// any run that did (eager included), else -1 (an import's own events, or nothing). From rows: one
// pass over the timeline (none when the session has no runs).
int report_run(const session::Session& s);
int report_run(session::SessionRows& rows);

// report_run gathered event by event, for a writer that reads the timeline once for several things:
// add() every event (any order), then report_run(summary).
class TimedRuns {
 public:
  void add(const session::TimelineEvent& e);
  int report_run(const session::Session& summary) const;

 private:
  std::set<int> timed_;  // runs with kernel time
};

}  // namespace kiln::report
