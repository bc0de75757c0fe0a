// kiln report SESSION.kiln --format html|md|json [-o OUT]
// kiln trace SESSION.kiln --mode MODE -o trace.json
// kiln stats SESSION.kiln [--run MODE[/BACKEND]] [--format md|json] [--top N]
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include "app/cli/commands.h"
#include "engine/api/kiln.h"
#include "engine/api/report.h"
#include "engine/api/files.h"
#include "engine/api/session.h"

namespace kiln::cli {

namespace {

// Writes what `write` makes to path as it comes (engine/base/output_file.h): never a half-written
// report, never the input.
void write_file(const std::string& path, const std::string& input, const std::function<void(OutputSink&)>& write) {
  refuse_input_as_output(path, {input});
  OutputLock lock(path);
  AtomicOutputFile out(path);
  write(out);
  out.commit();
}

// Standard output as a sink: the first write that fails ends the command.
class StandardOutput : public OutputSink {
 public:
  void write(std::string_view text) override {
    std::cout.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!std::cout) throw Error(std::string("writing to standard output failed (") + std::strerror(errno) + ")");
  }
};

struct ReportArgs {
  std::string session;
  std::string format = "html";
  std::string out;
};

struct StatsArgs {
  std::string session;
  std::string run;
  std::string format = "md";
  size_t top = 0;
};

struct TraceArgs {
  std::string session;
  std::string mode = "default";
  std::string out;
};

}  // namespace

Command add_report(CLI::App& app) {
  auto [cmd, args, command] = subcommand<ReportArgs>(app, "report",
      "Write a report of a session: one self-contained HTML file, Markdown to paste into an issue, or JSON for "
      "scripts.");
  add_session_argument(cmd, args.session);
  cmd.add_option("--format", args.format, "html, md or json")->capture_default_str();
  add_output_option(cmd, args.out, "Output file (stdout when absent)");
  return command([](const ReportArgs& a) {
    if (a.format != "html" && a.format != "md" && a.format != "json")
      throw Error("--format '" + a.format + "': use html, md or json");
    // Read from the file as it is written: the timeline one event at a time, never the whole session.
    session::SessionFile rows(a.session);
    std::function<void(OutputSink&)> write;
    if (a.format == "json")
      write = [&](OutputSink& out) { report::write_json(rows, out); };
    else if (a.format == "html")
      write = [&](OutputSink& out) { report::write_html(rows, out); };
    else
      write = [&](OutputSink& out) { out.write(report::render_markdown(rows)); };
    if (a.out.empty()) {
      StandardOutput out;
      write(out);
    } else {
      write_file(a.out, a.session, write);
      std::cerr << "report written to " << a.out << "\n";
    }
    return 0;
  });
}

Command add_trace(CLI::App& app) {
  auto [cmd, args, command] = subcommand<TraceArgs>(app, "trace",
      "Export one run's timeline as Chrome trace JSON (opens in Perfetto).");
  add_session_argument(cmd, args.session);
  cmd.add_option("--mode", args.mode,
                 "Which run: a mode (eager, default, reduce-overhead, max-autotune), MODE/BACKEND or a peer backend "
                 "(cudagraphs, torchscript); an imported session without runs exports its compile and profiler events")
      ->capture_default_str();
  add_output_option(cmd, args.out, "Output file (.json)")->required();
  return command([](const TraceArgs& a) {
    session::SessionFile rows(a.session);  // streamed: memory for one event, not the run
    const int run = report::find_run(rows, a.mode);
    write_file(a.out, a.session, [&](OutputSink& out) { report::write_chrome_trace(rows, run, out); });
    std::cerr << "trace written to " << a.out << " (open it in ui.perfetto.dev)\n";
    return 0;
  });
}

Command add_stats(CLI::App& app) {
  auto [cmd, args, command] = subcommand<StatsArgs>(app, "stats",
      "Where one run's device time went: every GPU kernel (cuBLAS, cuDNN, Triton and Kiln's own) with launches and "
      "time per iteration, sorted by time, and what launched it; host spans apart.");
  add_session_argument(cmd, args.session);
  cmd.add_option("--run", args.run,
                 "Which run: a mode (eager, default, reduce-overhead, max-autotune), MODE/BACKEND or a "
                 "peer backend; default: the run the reports show (the fastest compiled run that recorded kernels)");
  cmd.add_option("--format", args.format, "md or json")->capture_default_str();
  cmd.add_option("--top", args.top, "Markdown: list the N longest kernels and fold the rest into one line (0: all)");
  return command([](const StatsArgs& a) {
    if (a.format != "md" && a.format != "json") throw Error("--format '" + a.format + "': use md or json");
    session::SessionFile rows(a.session);  // the timeline read one event at a time
    const int run = a.run.empty() ? report::report_run(rows) : report::find_run(rows, a.run);
    auto st = report::kernel_stats(rows, run);
    const session::Session& s = rows.summary();
    std::cout << (a.format == "md" ? report::render_kernel_stats_markdown(s, st, a.top)
                                   : report::render_kernel_stats_json(s, st));
    return 0;
  });
}

}  // namespace kiln::cli
