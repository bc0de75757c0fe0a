// advise_huge_pages marks the whole 2 MiB pages inside a range for huge pages (Linux's VmFlags "hg"
// in /proc/self/smaps), leaves the rest of the mapping as it was, and ignores a range holding no
// whole huge page.
#include "engine/base/huge_pages.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace {

// The VmFlags of the mapping of /proc/self/smaps that holds `address` ("" when none does).
std::string vm_flags_at(const void* address) {
  const auto a = reinterpret_cast<uintptr_t>(address);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = begin <= a && a < end;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line.substr(8);
  }
  return "";
}

bool huge(const void* address) { return vm_flags_at(address).find(" hg") != std::string::npos; }

}  // namespace

TEST(HugePages, WholeHugePagesInsideTheRangeAreAdvisedAndNothingElse) {
  constexpr size_t kHuge = size_t(2) << 20;
  const size_t size = 8 * kHuge;
  void* map = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(map, MAP_FAILED);
  auto* bytes = static_cast<char*>(map);
  if (vm_flags_at(bytes).empty()) GTEST_SKIP() << "no VmFlags in /proc/self/smaps here";
  ASSERT_FALSE(huge(bytes));

  // From 16 bytes past a huge page boundary to 16 bytes before the fourth after it: the two whole
  // pages between.
  const auto first_boundary = (reinterpret_cast<uintptr_t>(bytes) + kHuge - 1) & ~(kHuge - 1);
  char* from = reinterpret_cast<char*>(first_boundary) + 16;
  char* to = reinterpret_cast<char*>(first_boundary) + 4 * kHuge - 16;
  kiln::advise_huge_pages(from, static_cast<size_t>(to - from));
  const auto* boundary = reinterpret_cast<const char*>(first_boundary);
  EXPECT_FALSE(huge(boundary)) << "the page cut by the range's start";
  EXPECT_TRUE(huge(boundary + kHuge));      // the first whole page inside
  EXPECT_TRUE(huge(boundary + 2 * kHuge));  // the last one
  EXPECT_FALSE(huge(boundary + 3 * kHuge)) << "the page cut by the range's end";
  EXPECT_FALSE(huge(to + 16)) << "past the range";

  // Less than one whole huge page: nothing changes (and nothing fails).
  char* last = bytes + size - kHuge;
  kiln::advise_huge_pages(last + 1, kHuge - 2);
  EXPECT_FALSE(huge(last + kHuge / 2));
  kiln::advise_huge_pages(nullptr, 0);

  // The memory stays usable as before.
  for (size_t i = 0; i < size; i += 4096) bytes[i] = static_cast<char>(i);
  EXPECT_EQ(bytes[first_boundary - reinterpret_cast<uintptr_t>(bytes) + kHuge], static_cast<char>(first_boundary - reinterpret_cast<uintptr_t>(bytes) + kHuge));
  ::munmap(map, size);
}
