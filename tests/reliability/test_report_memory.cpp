// kiln report (json, html, md), kiln trace and kiln stats read a session from its file: their memory
// does not grow with the session. A session of ~60 MB (timeline events with 2 KB args, graphs, kernel
// sources) is exported by the engine in a child process whose address space is limited to far less
// than the session (the whole-session path fails under the same limit), and by the real binary,
// whose peak resident size stays within a few MB of the same command on a small session. The outputs
// equal the whole-session renderings, and a failed write keeps the previous output.
#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "engine/base/output_file.h"
#include "engine/report/gpu_kernel_stats.h"
#include "engine/report/render_chrome_trace.h"
#include "engine/report/render_html.h"
#include "engine/report/render_json.h"
#include "engine/report/render_markdown.h"
#include "engine/session/session_rows.h"
#include "engine/session/store.h"
#include "tests/reliability/kiln_cli.h"
#include "tests/support/paths.h"

using namespace kiln;
namespace fs = std::filesystem;

namespace {

constexpr int kEvents = 24000;       // timeline events of 2 KB args each: 48 MB
constexpr size_t kArgsBytes = 2000;
constexpr long kLimitMb = 32;        // address space the streaming export may add

// Built in a child: this process's heap stays as small as before, so that the limit below is real.
const std::string& big_session() {
  // Its folder, as every test::temp_dir(), is removed when the tests end (it and the outputs beside it
  // are large).
  static const std::string path = [] {
    std::string p = test::temp_dir() + "/big.kiln";
    int rc = test::in_child([&] {
      session::Session s;
      s.origin = "TORCH_TRACE import";
      s.model.path = "big.py";
      session::Run run;
      run.id = 0;
      run.mode = "default";
      run.backend = "inductor";
      s.runs.push_back(run);
      for (int r = 0; r < 200; ++r) {
        session::CompiledRegion region;
        region.compile_id = "[" + std::to_string(r) + "/0]";
        region.graphs.push_back({"dynamo_output_graph", std::string(20000, 'g'), "", ""});
        s.regions.push_back(region);
        session::Kernel k;
        k.name = "triton_poi_" + std::to_string(r);
        k.source = std::string(10000, 'k');
        s.kernels.push_back(k);
      }
      for (int i = 0; i < kEvents; ++i) {
        session::TimelineEvent e;
        e.run = i % 3 == 0 ? -1 : 0;
        e.lane = i % 2 ? "cuda:0/stream 7" : "host/thread 1";
        e.name = "event " + std::to_string(i);
        e.category = "kernel";
        e.start_ns = 1000 * static_cast<int64_t>(i);
        e.dur_ns = 500;
        e.correlation = i;
        e.args_json = "{\"grid\": [" + std::to_string(i) + ", 1, 1], \"stack\": \"" + std::string(kArgsBytes, 's') + "\"}";
        s.timeline.push_back(std::move(e));
      }
      session::save_session(p, s);
      return 0;
    });
    EXPECT_EQ(rc, 0) << "building the session failed";
    return p;
  }();
  return path;
}

// Runs f in a child whose address space may grow by kLimitMb only.
int under_limit(const std::function<int()>& f) { return test::in_child_with_address_room(size_t(kLimitMb) << 20, f); }

// The peak resident size (MB) of `kiln args` (its standard output discarded). A process's peak
// (ru_maxrss) counts what the process it was forked from held at the fork, and keeps it across exec:
// kiln is forked by a shell (a fresh, small process) and adopted by this one as a subreaper, so its
// peak is its own and not this larger test's.
long kiln_peak_mb(const std::vector<std::string>& args) {
  static const bool subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
  EXPECT_TRUE(subreaper) << "prctl(PR_SET_CHILD_SUBREAPER): " << std::strerror(errno);
  int pid_pipe[2];
  if (pipe(pid_pipe) != 0) return -1;
  pid_t shell = fork();
  if (shell == 0) {
    close(pid_pipe[0]);
    dup2(pid_pipe[1], 3);
    std::string sh = "/bin/sh", kiln = test::binary("app/kiln");
    std::vector<const char*> argv = {sh.c_str(), "-c", "\"$@\" 3>&- > /dev/null & echo $! >&3", "sh", kiln.c_str()};
    for (const auto& a : args) argv.push_back(a.c_str());
    argv.push_back(nullptr);
    execv(sh.c_str(), const_cast<char* const*>(argv.data()));
    _exit(127);
  }
  close(pid_pipe[1]);
  std::string pid_text;
  char buf[32];
  for (ssize_t n; (n = read(pid_pipe[0], buf, sizeof buf)) > 0;) pid_text.append(buf, static_cast<size_t>(n));
  close(pid_pipe[0]);
  int status = 0;
  waitpid(shell, &status, 0);
  const pid_t child = static_cast<pid_t>(std::atol(pid_text.c_str()));
  EXPECT_GT(child, 0) << "the shell started no kiln";
  if (child <= 0) return -1;
  rusage use{};
  EXPECT_EQ(wait4(child, &status, 0, &use), child) << "kiln was not adopted by this process";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "kiln " << args[0] << " failed";
  return use.ru_maxrss / 1024;
}

// Runs each command in a child `kiln` on the shipped small session and on `big` ("{session}" in a command
// is the session, "{out}" an output path: DIR/s on the small one, DIR/b on the big one) and expects each
// command's peak on the big session within kLimitMb of the largest peak on the small one.
void expect_peaks_do_not_grow(const std::string& big, const std::string& dir,
                              const std::vector<std::vector<std::string>>& commands) {
  const std::string small = dir + "/small.kiln";
  fs::copy_file(test::example("sessions/block_h100.kiln"), small);
  auto on = [&](const std::vector<std::string>& command, const std::string& session, const std::string& out) {
    std::vector<std::string> args;
    for (const auto& a : command) {
      std::string arg = a == "{session}" ? session : a;
      if (auto at = arg.find("{out}"); at != std::string::npos) arg.replace(at, 5, dir + "/" + out);
      args.push_back(arg);
    }
    return args;
  };
  long floor = 0;
  for (const auto& c : commands) floor = std::max(floor, kiln_peak_mb(on(c, small, "s")));
  for (const auto& c : commands) {
    const long peak = kiln_peak_mb(on(c, big, "b"));
    std::string named = "kiln";
    for (const auto& a : c) named += " " + a;
    EXPECT_LT(peak, floor + kLimitMb) << named << ": " << peak << " MB, small session " << floor << " MB";
  }
}

}  // namespace

TEST(ReportMemory, StreamedExportsFitInLessMemoryThanTheSession) {
#if defined(__SANITIZE_ADDRESS__) || defined(KILN_SANITIZED)
  GTEST_SKIP() << "address-space limits do not work under AddressSanitizer";
#else
  const std::string& path = big_session();
  ASSERT_GT(fs::file_size(path), static_cast<uintmax_t>(kEvents) * kArgsBytes);
  const std::string dir = fs::path(path).parent_path().string();
  // The limit is real: holding the session (the whole-session report) does not fit under it.
  EXPECT_NE(under_limit([&] { return report::render_json(session::load_session(path)).empty() ? 3 : 0; }), 0);
  EXPECT_EQ(under_limit([&] {
              session::SessionFile rows(path);
              AtomicOutputFile out(dir + "/report.json");
              report::write_json(rows, out);
              out.commit();
              AtomicOutputFile trace(dir + "/trace.json");
              report::write_chrome_trace(rows, report::find_run(rows, "default"), trace);
              trace.commit();
              return 0;
            }),
            0);
  ASSERT_GT(fs::file_size(dir + "/report.json"), fs::file_size(path) / 2);
  auto s = session::load_session(path);
  EXPECT_TRUE(test::read_file(dir + "/report.json") == report::render_json(s)) << "the report differs";
  EXPECT_TRUE(test::read_file(dir + "/trace.json") == report::render_chrome_trace(s, "default")) << "the trace differs";
  fs::remove(dir + "/report.json");
  fs::remove(dir + "/trace.json");
#endif
}

TEST(ReportMemory, TheCommandsPeakDoesNotGrowWithTheSession) {
#if defined(__SANITIZE_ADDRESS__) || defined(KILN_SANITIZED)
  GTEST_SKIP() << "resident sizes under AddressSanitizer do not measure the program";
#else
  const std::string& big = big_session();
  const std::string dir = test::temp_dir();
  expect_peaks_do_not_grow(big, dir, {{"report", "{session}", "--format", "json", "-o", "{out}.json"},
                                      {"trace", "{session}", "--mode", "default", "-o", "{out}.trace.json"}});
  EXPECT_GT(fs::file_size(dir + "/b.json"), fs::file_size(big) / 2);
  remove_tree(dir);
#endif
}

TEST(ReportMemory, HtmlAndMarkdownFitInLessMemoryThanTheSession) {
#if defined(__SANITIZE_ADDRESS__) || defined(KILN_SANITIZED)
  GTEST_SKIP() << "address-space limits do not work under AddressSanitizer";
#else
  const std::string& path = big_session();
  const std::string dir = fs::path(path).parent_path().string();
  EXPECT_NE(under_limit([&] { return report::render_html(session::load_session(path)).empty() ? 3 : 0; }), 0);
  EXPECT_NE(under_limit([&] { return report::render_markdown(session::load_session(path)).empty() ? 3 : 0; }), 0);
  EXPECT_EQ(under_limit([&] {
              session::SessionFile rows(path);
              AtomicOutputFile html(dir + "/report.html");
              report::write_html(rows, html);
              html.commit();
              AtomicOutputFile md(dir + "/report.md");
              md.write(report::render_markdown(rows));
              md.commit();
              auto stats = report::kernel_stats(rows, report::report_run(rows));
              return stats.records > 0 ? 0 : 3;
            }),
            0);
  // Compared in a child: holding the session would leave this process larger than the commands measured next.
  EXPECT_EQ(test::in_child([&] {
              auto s = session::load_session(path);
              if (test::read_file(dir + "/report.html") != report::render_html(s)) return 4;
              return test::read_file(dir + "/report.md") != report::render_markdown(s) ? 5 : 0;
            }),
            0)
      << "4: the HTML report differs, 5: the Markdown report differs";
  fs::remove(dir + "/report.html");
  fs::remove(dir + "/report.md");
#endif
}

TEST(ReportMemory, HtmlMarkdownAndStatsPeakDoesNotGrowWithTheSession) {
#if defined(__SANITIZE_ADDRESS__) || defined(KILN_SANITIZED)
  GTEST_SKIP() << "resident sizes under AddressSanitizer do not measure the program";
#else
  const std::string& big = big_session();
  const std::string dir = test::temp_dir();
  expect_peaks_do_not_grow(big, dir, {{"report", "{session}", "--format", "html", "-o", "{out}.html"},
                                      {"report", "{session}", "--format", "md", "-o", "{out}.md"},
                                      {"stats", "{session}", "--format", "json"}});
  EXPECT_NE(test::read_file(dir + "/b.html").find("GPU time per kernel"), std::string::npos);
  EXPECT_NE(test::read_file(dir + "/b.md").find("8,000 device records"), std::string::npos)
      << test::read_file(dir + "/b.md").substr(0, 2000);
  remove_tree(dir);
#endif
}

// A write that fails half-way (the file size limit stands in for a full disk) keeps the previous
// output and leaves no temporary; standard output that fails is one error line.
TEST(ReportMemory, AFailedStreamedWriteKeepsThePreviousOutput) {
  const std::string& big = big_session();
  const std::string dir = test::temp_dir();
  for (const std::string& command : {std::string("report ") + big + " --format json -o " + dir + "/out.json",
                                     std::string("trace ") + big + " --mode default -o " + dir + "/out.json"}) {
    SCOPED_TRACE(command);
    { std::ofstream(dir + "/out.json") << "previous"; }
    test::CliAnswer a;
    a.status = test::run_command("sh -c \"trap '' XFSZ; ulimit -f 4096; exec " + test::binary("app/kiln") + " " +
                                     command + "\" 2>&1",
                                 a.output);
    test::expect_one_error(a, 1, "kiln: error: " + dir + "/out.json: writing failed", "previous file is kept");
    EXPECT_EQ(test::read_file(dir + "/out.json"), "previous");
    for (const auto& e : fs::directory_iterator(dir))
      EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  }
  std::string out;
  EXPECT_NE(test::run_command("sh -c '" + test::binary("app/kiln") + " report " + big + " --format json > /dev/full'", out),
            0);
  EXPECT_EQ(test::error_lines(out).size(), 1u) << out;
  EXPECT_NE(out.find("writing to standard output failed"), std::string::npos) << out;
  remove_tree(dir);
}
