// The NVRTC worker's files (engine/codegen/cuda/nvrtc_run.h): what a worker that died mid-write, or a
// file that was cut or holds nonsense, gives back is the complete records before the damage, nothing
// more, and never a crash; the worker itself compiles what it reads and stops cleanly at a cut.
#include "engine/codegen/cuda/nvrtc_run.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

using namespace kiln;

namespace {

int memfd() { return static_cast<int>(syscall(SYS_memfd_create, "kiln-nvrtc-test", 1u)); }

int file_with(const std::string& bytes) {
  int fd = memfd();
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  return fd;
}

std::string read_all(int fd) {
  std::string out(1 << 20, '\0');
  ssize_t n = ::pread(fd, out.data(), out.size(), 0);
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return out;
}

void put_u64(std::string& s, uint64_t v) { s.append(reinterpret_cast<const char*>(&v), sizeof v); }
void put_blob(std::string& s, const std::string& b) {
  put_u64(s, b.size());
  s += b;
}
std::string record(uint64_t index, double ms, const std::string& cubin, const std::string& log, bool assembled = false) {
  std::string s;
  put_u64(s, index);
  s.append(reinterpret_cast<const char*>(&ms), sizeof ms);
  s += static_cast<char>(assembled ? 1 : 0);
  put_blob(s, cubin);
  put_blob(s, log);
  return s;
}

const char* kUnit = "extern \"C\" __global__ void k0_add(float* x) { x[threadIdx.x] += 1.0f; }\n";

}  // namespace

TEST(NvrtcRun, ResultsCutAnywhereGiveTheCompleteRecordsBeforeTheCut) {
  const std::string first = record(2, 12.5, "CUBIN-two", "");
  const std::string all = first + record(0, 3.0, "CUBIN-zero", "a warning", /*assembled=*/true);
  for (size_t cut = 0; cut <= all.size(); ++cut) {
    int fd = file_with(all.substr(0, cut));
    std::vector<codegen::CubinResult> out(3);
    std::vector<bool> done(3, false);
    codegen::read_unit_results(fd, out, done);
    ::close(fd);
    EXPECT_EQ(done[2], cut >= first.size()) << cut;
    EXPECT_EQ(done[0], cut == all.size()) << cut;
    EXPECT_FALSE(done[1]);
    if (done[2]) {
      EXPECT_EQ(out[2].cubin, "CUBIN-two");
      EXPECT_EQ(out[2].compile_ms, 12.5);
    }
    if (done[0]) EXPECT_EQ(out[0].log, "a warning");
    if (done[0]) EXPECT_TRUE(out[0].assembled);
    if (done[2]) EXPECT_FALSE(out[2].assembled);
  }
}

TEST(NvrtcRun, ResultsWithAnIndexOutOfRangeOrAnEmptyCubinOrAHugeSizeStopTheReading) {
  std::string huge;
  put_u64(huge, 1);
  double ms = 1;
  huge.append(reinterpret_cast<const char*>(&ms), sizeof ms);
  huge += '\0';
  put_u64(huge, ~0ull);  // a cubin "of 2^64 - 1 bytes"
  for (const std::string& bad : {record(7, 1, "x", ""), record(1, 1, "", ""), huge}) {
    int fd = file_with(record(0, 1, "ok", "") + bad + record(2, 1, "after", ""));
    std::vector<codegen::CubinResult> out(3);
    std::vector<bool> done(3, false);
    codegen::read_unit_results(fd, out, done);
    ::close(fd);
    EXPECT_TRUE(done[0]);
    EXPECT_FALSE(done[1]);
    EXPECT_FALSE(done[2]);  // nothing after the bad record is trusted
  }
  int empty = memfd();
  std::vector<codegen::CubinResult> out(1);
  std::vector<bool> done(1, false);
  codegen::read_unit_results(empty, out, done);  // a worker that wrote nothing
  ::close(empty);
  EXPECT_FALSE(done[0]);
}

TEST(NvrtcRun, TheWorkerCompilesWhatItReadsSkipsWhatFailsAndStopsAtACut) {
  const std::string good = kUnit, bad = std::string(kUnit) + "this is not CUDA;\n";
  int in = memfd();
  ASSERT_TRUE(codegen::write_unit_sources(in, "sm_90", {{4, &good}, {1, &bad}, {0, &good}}));
  const std::string sources = read_all(in);
  // Whole: units 4 and 0 compile, 1 is left out (the engine compiles it again for its error).
  int out = memfd();
  EXPECT_EQ(codegen::nvrtc_worker_main(in, out), 0);
  std::vector<codegen::CubinResult> results(5);
  std::vector<bool> done(5, false);
  codegen::read_unit_results(out, results, done);
  EXPECT_TRUE(done[4]);
  EXPECT_TRUE(done[0]);
  EXPECT_FALSE(done[1]);
  EXPECT_NE(results[4].cubin.find("k0_add"), std::string::npos);
  ::close(in);
  ::close(out);
  // Cut inside the second unit's source: the first compiles, the rest is not read.
  int cut = file_with(sources.substr(0, sources.size() / 2));
  out = memfd();
  EXPECT_EQ(codegen::nvrtc_worker_main(cut, out), 0);
  std::vector<bool> done2(5, false);
  codegen::read_unit_results(out, results, done2);
  EXPECT_TRUE(done2[4]);
  EXPECT_FALSE(done2[1]);
  EXPECT_FALSE(done2[0]);
  ::close(cut);
  ::close(out);
  // A chunk: a unit and one of the same code but for its function's name, assembled from the first one's PTX under
  // its own name; a member whose renaming cannot apply (its name list longer) compiles whole.
  std::string renamed = good;
  renamed.replace(renamed.find("k0_add"), 6, "k9_add");
  codegen::UnitChunk chunk{{5, &good, {"k0_add"}}, {{6, &renamed, {"k9_add"}}, {7, &renamed, {"k9_add", "k9_add_w2"}}}};
  int in2 = memfd();
  ASSERT_TRUE(codegen::write_unit_sources(in2, "sm_90", {chunk}));
  out = memfd();
  EXPECT_EQ(codegen::nvrtc_worker_main(in2, out), 0);
  std::vector<codegen::CubinResult> r3(8);
  std::vector<bool> done3(8, false);
  codegen::read_unit_results(out, r3, done3);
  ASSERT_TRUE(done3[5] && done3[6] && done3[7]);
  EXPECT_FALSE(r3[5].assembled);
  EXPECT_TRUE(r3[6].assembled);
  EXPECT_FALSE(r3[7].assembled);
  for (int i : {6, 7}) {
    EXPECT_NE(r3[i].cubin.find(std::string("k9_add") + '\0'), std::string::npos) << i;
    EXPECT_EQ(r3[i].cubin.find(std::string("k0_add") + '\0'), std::string::npos) << i;
  }
  ::close(in2);
  ::close(out);
  // No architecture at all: nothing to do, a non-zero exit.
  int none = memfd();
  out = memfd();
  EXPECT_NE(codegen::nvrtc_worker_main(none, out), 0);
  ::close(none);
  ::close(out);
}

TEST(NvrtcRun, ErrorsQuoteTheErrorLinesNotTheWarningsBeforeThem) {
  const std::string log =
      "k.cu(3): warning #550-D: variable \"scalar\" was set but never used\n  const double* scalar;\n  ^\n\n"
      "k.cu(9): error: identifier \"oops\" is undefined\n  oops = 1;\n  ^\n\n1 error detected\n";
  std::string e = codegen::nvrtc_first_errors(log);
  EXPECT_EQ(e.rfind("k.cu(9): error: identifier \"oops\" is undefined", 0), 0u) << e;
  EXPECT_NE(e.find("oops = 1;"), std::string::npos) << e;
  EXPECT_EQ(e.find("warning"), std::string::npos) << e;
  // No error line: the log's first lines.
  EXPECT_EQ(codegen::nvrtc_first_errors("one\ntwo\n"), "one | two");
}

// ptxas's verbose lines (kernel_resources): each function's registers, spills, stack and static shared memory, in
// the log's order; lines of other kinds, numbers too large and a log cut mid-line give what was read, no crash.
TEST(NvrtcRun, PtxasResourceLinesAreReadPerFunction) {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'kiln_a' for 'sm_90'\n"
      "ptxas info    : Function properties for kiln_a\n"
      "ptxas         .     16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 122 registers, used 1 barriers, 40960 bytes smem, 400 bytes cmem[0]\n"
      "a warning nobody parses: Used 7 registers\n"
      "ptxas info    : Compile time = 6.010 ms\n"
      "ptxas info    : Function properties for kiln_b\r\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 99999999999999999999999 registers, used 0 barriers\n"
      "ptxas info    : Function properties for kiln_c\n"
      "ptxas info    : Used 3";
  const auto r = codegen::parse_ptxas_resources(log);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].function, "kiln_a");
  EXPECT_EQ(r[0].registers, 122);
  EXPECT_EQ(r[0].stack_bytes, 16);
  EXPECT_EQ(r[0].spill_store_bytes, 8);
  EXPECT_EQ(r[0].spill_load_bytes, 12);
  EXPECT_EQ(r[0].shared_bytes, 40960);
  EXPECT_EQ(r[1].function, "kiln_b");
  EXPECT_EQ(r[1].registers, 0);  // a count no kernel has is not taken
  EXPECT_EQ(r[1].shared_bytes, 0);
  EXPECT_EQ(r[2].function, "kiln_c");
  EXPECT_EQ(r[2].registers, 0);  // cut before "registers"
  EXPECT_TRUE(codegen::parse_ptxas_resources("").empty());
}
