// libFuzzer target: the SVG whitelist sanitizer on arbitrary markup. Findings besides crashes: output
// that keeps an active element or attribute, and output that changes when sanitized again.
#include <algorithm>
#include <cctype>
#include <string>

#include "engine/report/svg_sanitize.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string in(reinterpret_cast<const char*>(data), size);
  std::string out = kiln::report::sanitize_svg(in);
  std::string lower = out;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* active : {"<script", "<style", "<foreignobject", "<image", "<iframe", "<a ", "<a>", "href", " on",
                             "<!--", "javascript:", "url(h"})
    if (lower.find(active) != std::string::npos) __builtin_trap();
  if (kiln::report::sanitize_svg(out) != out) __builtin_trap();  // sanitizing is idempotent
  return 0;
}
