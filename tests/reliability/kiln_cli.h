// The real `kiln` binary run from the reliability tests, and the one "kiln: error: " line a refusal prints.
#pragma once

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tests/support/paths.h"

namespace kiln::test {

// What one run of the binary answered: its exit status, and its stdout and stderr together.
struct CliAnswer {
  int status = 0;
  std::string output;
};

// `kiln <args>`.
inline CliAnswer run_kiln(const std::string& args) {
  CliAnswer a;
  a.status = run_command(binary("app/kiln") + " " + args + " 2>&1", a.output);
  return a;
}

// The output's lines starting with "kiln: error: ".
inline std::vector<std::string> error_lines(const std::string& out) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);)
    if (l.rfind("kiln: error: ", 0) == 0) lines.push_back(l);
  return lines;
}

// Exit `status` and exactly one "kiln: error: " line, which starts with `prefix` and contains `part` (if given).
inline void expect_one_error(const CliAnswer& a, int status, const std::string& prefix, const std::string& part = "") {
  EXPECT_EQ(a.status, status);
  auto lines = error_lines(a.output);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind(prefix, 0), 0u) << lines[0];
  if (!part.empty()) EXPECT_NE(lines[0].find(part), std::string::npos) << lines[0];
}

// As expect_one_error, for a refused input: no internal error and no LibTorch backtrace either.
inline void expect_clean_refusal(const CliAnswer& a, int status, const std::string& prefix,
                                 const std::string& problem) {
  EXPECT_EQ(a.output.find("internal error"), std::string::npos);
  EXPECT_EQ(a.output.find("frame #"), std::string::npos);
  expect_one_error(a, status, prefix, problem);
}

}  // namespace kiln::test
