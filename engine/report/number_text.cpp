// Number formatting for reports; see number_text.h.
#include "engine/report/number_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace kiln::report {

std::string fixed(double v, int decimals) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string grouped(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -static_cast<uint64_t>(v) : static_cast<uint64_t>(v));
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string bytes(int64_t v) {
  if (v < 1024) return std::to_string(v) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double x = static_cast<double>(v);
  int u = -1;
  while (x >= 1024 && u < 4) {
    x /= 1024;
    ++u;
  }
  return fixed(x, 1) + " " + units[u];
}

std::string speedup(double v) {
  if (!std::isfinite(v) || v <= 0) return "-";
  return fixed(v, 2) + "x";
}

std::string percent(double fraction) {
  if (!std::isfinite(fraction)) return "-";
  return fixed(fraction * 100, 1) + "%";
}

std::string signed_percent(double fraction) {
  if (!std::isfinite(fraction)) return "-";
  long p = std::lround(std::max(-1e6, std::min(1e6, fraction * 100)));
  return (p >= 0 ? "+" : "") + std::to_string(p) + " %";
}

std::string measured(double v, int decimals, bool run_ok, bool zero_is_none) {
  if (!run_ok || (zero_is_none && v == 0)) return "-";
  return fixed(v, decimals);
}

std::string measured_error(double v, bool run_ok) {
  if (!run_ok || !std::isfinite(v)) return "-";
  if (v == 0) return "0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g", v);
  return buf;
}

}  // namespace kiln::report
