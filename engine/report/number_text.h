// Numbers as reports print them: fixed decimals, thousands separators, bytes in binary units.
// All locale-independent (the C locale's '.' and ',').
//
// fixed(1.23456, 3) == "1.235"; grouped(8320) == "8,320"; bytes(1536) == "1.5 KiB";
// speedup(1.853) == "1.85x" and speedup(0) == "-"; percent(0.734) == "73.4%".
// Non-finite values print as "-".
#pragma once

#include <cstdint>
#include <string>

namespace kiln::report {

std::string fixed(double v, int decimals);
std::string grouped(int64_t v);
std::string bytes(int64_t v);
std::string speedup(double v);
std::string percent(double fraction);
// A change as a whole signed percent: signed_percent(0.0685) == "+7 %", signed_percent(-0.19) == "-19 %"
// (beyond ±1e6 % it saturates; non-finite prints "-").
std::string signed_percent(double fraction);
// A run's measured number: "-" when the run did not finish ok (skipped, failed: nothing was
// measured) or, with zero_is_none, when the value is 0 (eager's compile time); else fixed().
std::string measured(double v, int decimals, bool run_ok, bool zero_is_none = false);
// The same for errors, in scientific notation ("4.3e-08"; 0 prints as "0").
std::string measured_error(double v, bool run_ok);

}  // namespace kiln::report
