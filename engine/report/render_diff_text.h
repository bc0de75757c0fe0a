// What the Markdown, HTML and JSON forms of `kiln diff` print alike: the numbers of a run pair and a
// structure side as plain (unescaped) text, each renderer escaping them for its medium.
#pragma once

#include <string>
#include <vector>

#include "engine/report/session_diff.h"

namespace kiln::report::diff_text {

std::string or_dash(const std::string& s);
std::string cut(const std::string& s, size_t n);
// "a → b", or one value when both are equal; a and b already escaped.
std::string arrow(const std::string& a, const std::string& b);
std::string change_name(Change c);  // "added", "removed", "both"

// One run pair's cells, A and B: "-" where a side has no such run or measured nothing.
struct RunValues {
  std::string label;  // "default / kiln", or "default / kiln ↔ default / inductor"
  std::string median_a, median_b, ratio;  // ratio: B's median against A's ("0.52x"; "-")
  std::string compile_a, compile_b;       // "12.3 / 0.4"
  std::string kernels_a, kernels_b, busy_a, busy_b, peak_a, peak_b, error_a, error_b, status_a, status_b;
};
RunValues run_values(const RunPair& p);

// "default / kiln: device kernel time 1.234 ms per iteration (3 iterations, 63 records); modules
// attribute 98.1%, lines 97.0%", or why a side has none.
std::string side_summary(const StructureSide& s);

std::string ms_or_dash(double ms);  // 3 decimals; "-" when negative (the side has no such row)
std::string delta(double a_ms, double b_ms);  // "+0.123", "-0.050"; "-" unless both sides have the row

// Indices of the rows to show: all when they fit, else the `limit` largest (max of both sides),
// the unattributed row always; in_order keeps the rows' own order, else largest first.
std::vector<size_t> top_rows(const std::vector<StructureLine>& rows, size_t limit, bool in_order);

}  // namespace kiln::report::diff_text
