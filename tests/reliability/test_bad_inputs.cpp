// The bad-input catalogue (docs/bad-inputs.md), one test per row: each runs the real `kiln` binary on a
// bad input and checks it answers with exit code 1 and one line "kiln: error: <input>: <problem>"
// (never a crash: exit codes 2 — an internal error — and >= 128 — a signal — fail), or, for the
// importers' documented never-fatal cases, exit 0 with the damage counted.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/model/model.h"
#include "engine/runtime/captured_runtime.h"
#include "engine/runtime/example_inputs.h"
#include "tests/reliability/kiln_cli.h"
#include "tests/support/paths.h"

namespace fs = std::filesystem;
using kiln::test::data;
using kiln::test::error_lines;
using kiln::test::example;
using kiln::test::expect_one_error;
using kiln::test::run_kiln;

namespace {

using Answer = kiln::test::CliAnswer;

std::string kiln_bin() { return kiln::test::binary("app/kiln"); }

// Exit 1 and exactly one "kiln: error: <input>: <problem>" line naming `input` and containing `problem`.
void expect_refused(const std::string& args, const std::string& input, const std::string& problem) {
  Answer a = run_kiln(args);
  SCOPED_TRACE("kiln " + args + "\n" + a.output);
  kiln::test::expect_clean_refusal(a, 1, "kiln: error: " + input + ": ", problem);
}

void write(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

std::string head(const std::string& path, size_t n) { return kiln::test::read_file(path).substr(0, n); }

const std::string kMlp = example("small_mlp.pt");

// A small session to damage (made once per test binary run).
std::string seed_session() {
  static std::string path;
  if (path.empty()) {
    path = kiln::test::temp_dir() + "/seed.kiln";
    Answer a = run_kiln("profile " + kMlp + " --input 4x64 -o " + path);
    EXPECT_EQ(a.status, 0) << a.output;
  }
  return path;
}

}  // namespace

// ---- model files -------------------------------------------------------------------------------------
TEST(BadModel, Missing) { expect_refused("inspect /nonexistent/m.pt --input 4x64", "/nonexistent/m.pt", "file not found"); }
TEST(BadModel, Empty) { expect_refused("inspect " + data("models/empty.pt") + " --input 4x64", data("models/empty.pt"), "empty"); }
TEST(BadModel, Truncated) {
  expect_refused("compile " + data("models/truncated.pt") + " --input 4x64", data("models/truncated.pt"), "truncated");
}
TEST(BadModel, Corrupt) { expect_refused("explain " + data("models/corrupt.pt") + " --input 4x64", data("models/corrupt.pt"), "corrupt"); }
TEST(BadModel, NotAZip) {
  expect_refused("inspect " + data("models/not_a_model.pt") + " --input 4x64", data("models/not_a_model.pt"), "not a zip");
}
TEST(BadModel, ZipButNotTorchScript) {
  expect_refused("inspect " + data("models/plain.zip.pt") + " --input 4x64", data("models/plain.zip.pt"),
                 "not a TorchScript archive");
}
TEST(BadModel, UnknownOperator) {
  // An operator no LibTorch has (unknown_op.pt's fused attention is only unknown to 1.x).
  expect_refused("inspect " + data("models/unknown_op_any.pt") + " --input 4x64", data("models/unknown_op_any.pt"),
                 "operator aten::kiln_no_such_op");
}
TEST(BadModel, NoForward) {
  expect_refused("profile " + data("models/no_forward.pt") + " --input 4x64 -o " + kiln::test::temp_dir() + "/x.kiln",
                 data("models/no_forward.pt"), "no forward method");
}
TEST(BadModel, Folder) {
  std::string dir = kiln::test::temp_dir();
  expect_refused("inspect " + dir + " --input 4x64", dir, "is a directory");
}

// ---- inputs ------------------------------------------------------------------------------------------
TEST(BadInput, WrongShapeInspect) { expect_refused("inspect " + kMlp + " --input 4x65", kMlp, "shapes cannot be multiplied"); }
TEST(BadInput, WrongShapeCompile) { expect_refused("compile " + kMlp + " --input 4x65", kMlp, "forward on inputs [4x65] failed"); }
// profile keeps failures as data: one error line, exit 1, and the session with the failed rows.
TEST(BadInput, WrongShapeProfile) {
  std::string out = kiln::test::temp_dir() + "/x.kiln";
  std::filesystem::remove(out);
  Answer a = run_kiln("profile " + kMlp + " --input 4x65 -o " + out);
  SCOPED_TRACE(a.output);
  EXPECT_EQ(a.output.find("frame #"), std::string::npos);
  expect_one_error(a, 1,
                   "kiln: error: 2 runs failed (kept in " + out + "); first: eager / eager: failed: " + kMlp +
                       ": forward on inputs [4x65] failed");
  EXPECT_TRUE(std::filesystem::exists(out));
}
TEST(BadInput, WrongShapeExplain) { expect_refused("explain " + kMlp + " --input 3x7x2", kMlp, "failed"); }
TEST(BadInput, TooManyInputs) { expect_refused("inspect " + kMlp + " --input 4x64 --input 4x64", kMlp, "2 given"); }
TEST(BadInput, TooManyInputsCompile) { expect_refused("compile " + kMlp + " --input 4x64 --input 4x64", kMlp, "2 given"); }
TEST(BadInput, WrongDtypeForModel) {
  expect_refused("compile " + kMlp + " --input 4x64:float16", kMlp, "forward on inputs [4x64:float16] failed");
}
TEST(BadInput, IntegerInputForFloatModel) { expect_refused("inspect " + kMlp + " --input 4x64:int64", kMlp, "dtype"); }
TEST(BadInput, UnknownDtype) { expect_refused("inspect " + kMlp + " --input 4x64:complex", "input '4x64:complex'", "unknown dtype"); }
TEST(BadInput, UnknownDefaultDtype) {
  expect_refused("compile " + kMlp + " --input 4x64 --dtype float8", "--dtype 'float8'", "unknown dtype");
}
TEST(BadInput, NotAShape) { expect_refused("inspect " + kMlp + " --input 4xa", "input '4xa'", "not a size"); }
TEST(BadInput, ZeroSize) { expect_refused("inspect " + kMlp + " --input 0x64", "input '0x64'", "positive"); }
TEST(BadInput, AbsurdSizeOverflows) {
  expect_refused("profile " + kMlp + " --input 100000x100000x100000 -o " + kiln::test::temp_dir() + "/x.kiln",
                 "input '100000x100000x100000'", "2^40");
}
TEST(BadInput, AbsurdSizeBeyondMemoryIsRefusedBeforeAllocating) {
  // 10^10 floats = 37 GiB: parsed fine, refused against this machine's memory before any allocation.
  expect_refused("compile " + kMlp + " --input 100000x100000", "input '100000x100000'", "memory");
}

// NaN and Inf inputs cannot be typed on the command line (inputs are random N(0, 1)); the engine path the
// CLI uses must still run them and agree with eager under NaN-aware comparison.
TEST(BadInput, NanAndInfInputsRunAndMatchEagerNanAware) {
  auto model = kiln::model::load_model(kMlp);
  for (const char* backend : {"kiln", "aot_eager", "eager"}) {
    kiln::capture::CompileOptions o;
    o.backend = backend;
    kiln::runtime::CapturedRuntime rt(model, o);
    auto x = kiln::runtime::make_inputs({kiln::parse_input_spec("4x64")}, 7);
    x[0][0][0] = NAN;
    x[0][1][3] = INFINITY;
    x[0][2][5] = -INFINITY;
    std::ostringstream printed;
    std::vector<c10::IValue> outs;
    ASSERT_NO_THROW(outs = rt.run(x, &printed)) << backend;
    std::vector<c10::IValue> args(x.begin(), x.end());
    torch::NoGradGuard g;
    auto ref = const_cast<torch::jit::Module&>(model.impl->module).forward(args).toTensor();
    ASSERT_EQ(outs.size(), 1u);
    auto got = outs[0].toTensor();
    EXPECT_TRUE(at::isnan(ref).any().item<bool>());
    EXPECT_TRUE(at::equal(at::isnan(got), at::isnan(ref))) << backend << ": NaN positions differ";
    EXPECT_TRUE(at::allclose(got, ref, 1e-4, 1e-5, /*equal_nan=*/true)) << backend;
  }
}

// ---- TORCH_TRACE logs and Chrome traces -----------------------------------------------------------------
TEST(BadTrace, MissingLog) { expect_refused("import /nonexistent/trace.log -o x.kiln", "/nonexistent/trace.log", "no such file"); }
TEST(BadTrace, GarbageIsNeitherFormat) {
  std::string dir = kiln::test::temp_dir(), in = dir + "/garbage.bin";
  write(in, std::string("\x01\x02garbage\xff\xfe not a log", 22));
  expect_refused("import " + in + " -o " + dir + "/x.kiln", in, "neither a TORCH_TRACE log nor");
}

// Documented never-fatal cases: exit 0, the damage counted in the import notes, the session written.
void expect_imported_with_note(const std::string& in, const std::string& note) {
  std::string out = fs::path(in).parent_path().string() + "/out.kiln";
  Answer a = run_kiln("import " + in + " -o " + out);
  SCOPED_TRACE(a.output);
  EXPECT_EQ(a.status, 0);
  EXPECT_NE(a.output.find(note), std::string::npos);
  EXPECT_TRUE(fs::exists(out));
  EXPECT_EQ(run_kiln("report " + out + " --format json -o " + out + ".json").status, 0);
}
TEST(BadTrace, TruncatedTorchTrace) {
  std::string in = kiln::test::temp_dir() + "/cut.log";
  write(in, head(data("traces/breaky_dynamic.log"), 5000));
  expect_imported_with_note(in, "skipped or kept generically");
}
TEST(BadTrace, CorruptJsonInTorchTrace) { 
  std::string in = kiln::test::temp_dir() + "/c.log";
  write(in, kiln::test::read_file(data("tlparse/simple_corrupted_json.log")));
  expect_imported_with_note(in, "wrote");
}
TEST(BadTrace, UnknownEventType) {
  std::string in = kiln::test::temp_dir() + "/u.log";
  write(in, "V1122 11:00:00.000000 123 torch/x.py:1] {\"no_such_event\": {}, \"frame_id\": 0}\n");
  expect_imported_with_note(in, "unrecognized event type 'no_such_event'");
}
TEST(BadTrace, TruncatedChromeTrace) {
  std::string in = kiln::test::temp_dir() + "/cut.json";
  write(in, head(data("traces/kineto_small_mlp.json"), 3000));
  expect_imported_with_note(in, "trace cut short");
}
TEST(BadTrace, CorruptChromeTraceEvents) {
  std::string in = kiln::test::temp_dir() + "/bad.json";
  write(in, "{\"traceEvents\": [ {\"ph\": \"X\", \"name\": 3, \"ts\": \"a\"}, {{{{");
  expect_imported_with_note(in, "skipped or kept generically");
}

// ---- session files -----------------------------------------------------------------------------------------
TEST(BadSession, Missing) { expect_refused("report /nonexistent/s.kiln", "/nonexistent/s.kiln", "file not found"); }
TEST(BadSession, Empty) {
  std::string in = kiln::test::temp_dir() + "/e.kiln";
  write(in, "");
  expect_refused("report " + in, in, "empty");
}
TEST(BadSession, Garbage) {
  std::string in = kiln::test::temp_dir() + "/g.kiln";
  write(in, "garbage garbage garbage");
  expect_refused("report " + in + " --format md", in, "not a Kiln session");
}
TEST(BadSession, Truncated) {
  std::string in = kiln::test::temp_dir() + "/t.kiln";
  write(in, head(seed_session(), 3000));
  expect_refused("report " + in + " --format json", in, "truncated");
}
TEST(BadSession, NewerSchema) {
  std::string in = kiln::test::temp_dir() + "/n.kiln";
  fs::copy_file(seed_session(), in);
  int st = std::system(("python3 -c \"import sqlite3; c = sqlite3.connect('" + in +
                        "'); c.execute(\\\"UPDATE meta SET value = '99' WHERE key = 'schema_version'\\\"); c.commit()\"")
                           .c_str());
  if (st != 0) GTEST_SKIP() << "python3 with sqlite3 is needed to write a newer-schema session";
  expect_refused("report " + in, in, "written by schema 99; this Kiln reads schema 1 to 2");
}
TEST(BadSession, ModelFileGivenAsSession) { expect_refused("report " + kMlp, kMlp, "not a Kiln session"); }

// ---- outputs: read-only paths and a full disk ------------------------------------------------------------
// (Tests run as root here, so a chmod'ed folder would still be writable: /proc is read-only for everyone.)
TEST(BadOutput, ReadOnlyProfileOutput) {
  expect_refused("profile " + kMlp + " --input 4x64 -o /proc/kiln-x.kiln", "/proc/kiln-x.kiln", "cannot write session");
}
TEST(BadOutput, MissingFolderProfileOutput) {
  expect_refused("profile " + kMlp + " --input 4x64 -o /nonexistent/x.kiln", "/nonexistent/x.kiln", "does not exist");
}
TEST(BadOutput, ReadOnlyCompileDump) {
  expect_refused("compile " + kMlp + " --input 4x64 --dump /proc/kiln-dump", "/proc/kiln-dump", "cannot create the dump folder");
}
TEST(BadOutput, ReadOnlyReportOutput) {
  expect_refused("report " + seed_session() + " -o /proc/kiln-r.html", "/proc/kiln-r.html", "cannot write");
}
TEST(BadOutput, ReadOnlyImportOutput) {
  expect_refused("import " + data("traces/breaky_dynamic.log") + " -o /proc/kiln-i.kiln", "/proc/kiln-i.kiln", "cannot write session");
}
TEST(BadOutput, ReportToFullDisk) {
  expect_refused("report " + seed_session() + " --format json -o /dev/full", "/dev/full", "disk full");
  EXPECT_FALSE(fs::is_regular_file("/dev/full")) << "the device was replaced by a file";
}
TEST(BadOutput, SessionOntoADeviceIsRefused) {
  expect_refused("profile " + kMlp + " --input 4x64 -o /dev/full", "/dev/full", "not a regular file");
  expect_refused("import " + data("traces/breaky_dynamic.log") + " -o /dev/full", "/dev/full", "not a regular file");
  EXPECT_FALSE(fs::is_regular_file("/dev/full")) << "the device was replaced by a file";
}
TEST(BadOutput, ProfileToFullDisk) {
  // A file-size limit (ulimit -f, SIGXFSZ ignored) makes write() fail with EFBIG, as a full disk does
  // with ENOSPC: the header transaction cannot be written.
  std::string out = kiln::test::temp_dir() + "/full.kiln";
  Answer a;
  a.status = kiln::test::run_command("sh -c \"trap '' XFSZ; ulimit -f 40; exec " + kiln_bin() + " profile " + kMlp +
                                         " --input 4x64 -o " + out + "\" 2>&1",
                                     a.output);
  SCOPED_TRACE(a.output);
  expect_one_error(a, 1, "kiln: error: " + out + ": cannot write session");
  EXPECT_FALSE(fs::exists(out)) << "a partial session was left at the path";
}

// ---- options ------------------------------------------------------------------------------------------
TEST(BadOption, UnknownBackend) {
  for (const char* cmd : {"compile", "explain"}) {
    Answer a = run_kiln(std::string(cmd) + " " + kMlp + " --input 4x64 --backend nope");
    SCOPED_TRACE(a.output);
    expect_one_error(a, 1, "kiln: error: backend 'nope' is not known (known: ");
  }
}
TEST(BadOption, UnknownMode) {
  expect_refused("compile " + kMlp + " --input 4x64 --mode fast", "--mode 'fast'", "use default, reduce-overhead or max-autotune");
  expect_refused("profile " + kMlp + " --input 4x64 --modes fast -o " + kiln::test::temp_dir() + "/m.kiln", "--modes",
                 "unknown mode 'fast'");
}
TEST(BadOption, CountsThatWouldRunForDaysAreRefused) {
  expect_refused("profile " + kMlp + " --input 4x64 --iters 2147483647 -o " + kiln::test::temp_dir() + "/i.kiln",
                 "--iters 2147483647", "at most 100000");
  expect_refused("compile " + kMlp + " --input 4x64 --checks 2000000000", "--checks 2000000000", "at most 1000");
}
TEST(BadOption, UnknownDynamic) {
  expect_refused("compile " + kMlp + " --input 4x64 --dynamic maybe", "--dynamic 'maybe'", "use auto, true or false");
}
TEST(BadOption, UnknownDevice) {
  expect_refused("compile " + kMlp + " --input 4x64 --device tpu", "device 'tpu'", "use cpu or cuda");
}
TEST(BadOption, CudaDeviceWithoutCuda) {
  if (kiln::model::cuda_unavailable_reason().empty()) GTEST_SKIP() << "this LibTorch has a CUDA device";
  expect_refused("compile " + kMlp + " --input 4x64 --device cuda", kMlp, "cannot load onto cuda");
  expect_refused("profile " + kMlp + " --input 4x64 --device cuda -o " + kiln::test::temp_dir() + "/c.kiln",
                 "--device cuda", "no CUDA device");
}
TEST(BadOption, PluginMissingOrNotALibrary) {
  expect_refused("compile " + kMlp + " --input 4x64 --plugin /nonexistent/p.so", "/nonexistent/p.so",
                 "cannot load the backend plugin");
  expect_refused("compile " + kMlp + " --input 4x64 --plugin " + kMlp, kMlp, "cannot load the backend plugin");
}
TEST(BadOption, CountsBelowOne) {
  expect_refused("compile " + kMlp + " --input 4x64 --checks 0", "--checks 0", "must be at least 1");
  expect_refused("explain " + kMlp + " --input 4x64 --cache-limit 0", "--cache-limit 0", "must be at least 1");
  expect_refused("profile " + kMlp + " --input 4x64 --iters 0 -o " + kiln::test::temp_dir() + "/i.kiln", "--iters 0",
                 "must be at least 1");
}
TEST(BadOption, ReportFormatAndTraceMode) {
  expect_refused("report " + seed_session() + " --format pdf", "--format 'pdf'", "use html, md or json");
  Answer a = run_kiln("trace " + seed_session() + " --mode fast -o " + kiln::test::temp_dir() + "/t.json");
  SCOPED_TRACE(a.output);
  expect_one_error(a, 1, "kiln: error: ", "no run 'fast' (this session has: ");
}
TEST(BadOutput, UnwritableDotFile) {
  expect_refused("inspect " + kMlp + " --input 4x64 --dot /proc/kiln-g.dot", "/proc/kiln-g.dot", "cannot write the DOT file");
}

// ---- fuzz regressions ----------------------------------------------------------------------------------
// Every input a fuzzer crashed on (tests/data/fuzz-regressions/<target>/) is imported or opened by the real
// binary: an answer (exit 0, or 1 with one error line), never a crash. Built with scripts/sanitize, the
// same inputs also show memory errors the plain build does not.
TEST(FuzzRegressions, EveryCrashingInputIsAnswered) {
  std::string root = data("fuzz-regressions");
  int n = 0;
  for (const auto& target : fs::directory_iterator(root)) {
    if (!target.is_directory()) continue;
    std::string kind = target.path().filename().string();
    for (const auto& f : fs::directory_iterator(target.path())) {
      std::string in = kiln::test::temp_dir() + "/" + f.path().filename().string();
      fs::copy_file(f.path(), in);
      std::string args = kind == "session" ? "report " + in + " --format json -o " + in + ".json"
                                           : "import " + in + " -o " + in + ".kiln";
      Answer a = run_kiln(args);
      EXPECT_TRUE(a.status == 0 || (a.status == 1 && error_lines(a.output).size() == 1))
          << "kiln " << args << " -> " << a.status << "\n" << a.output;
      ++n;
    }
  }
  EXPECT_GE(n, 1);
}
