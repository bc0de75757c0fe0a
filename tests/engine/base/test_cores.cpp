// usable_cores: the processors the process may run on, not the machine's: a process held to one
// processor (taskset) splits its work for one, and a large import read by it makes one part.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

#include "engine/base/cores.h"
#include "engine/importers/kineto/kineto.h"
#include "tests/support/paths.h"

TEST(Cores, AtLeastOneAndNoMoreThanTheMachineHas) {
  const unsigned n = kiln::usable_cores();
  EXPECT_GE(n, 1u);
  EXPECT_LE(n, std::max(1u, std::thread::hardware_concurrency()));
}

TEST(Cores, AProcessHeldToOneProcessorUsesOne) {
  // A trace large enough to be read in parts on more cores (2 MB, parts from 1 byte on).
  const std::string path = kiln::test::temp_dir() + "/trace.json";
  {
    std::ofstream out(path, std::ios::binary);
    out << "{\"traceEvents\": [\n";
    for (int i = 0; i < 20000; ++i)
      out << (i ? ",\n" : "") << "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op" << i
          << "\", \"pid\": 1, \"tid\": 1, \"ts\": " << i * 10 << ", \"dur\": 5, \"args\": {\"External id\": " << i
          << "}}";
    out << "\n]}\n";
  }
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) _exit(9);
    if (kiln::usable_cores() != 1) _exit(2);
    kiln::importers::KinetoFacts facts;
    auto s = kiln::importers::import_kineto_trace(path, &facts, 1);
    if (facts.parts != 1) _exit(3);
    if (s.timeline.size() != 20000) _exit(4);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: more than one core counted; 3: read in parts; 4: events lost; 9: no affinity";
}
