// Paths and golden-file helpers shared by the test suites.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace kiln::test {

std::string example(const std::string& name);    // resources/examples/<name>
std::string data(const std::string& name);       // tests/data/<name>
std::string binary(const std::string& name);     // <build>/<name>
std::string read_file(const std::string& path);  // "" if missing
std::string temp_dir();                          // a fresh directory for this test, removed at exit
// Writes `text` to <a fresh temp_dir()>/<name>; returns the path.
std::string write_temp_file(const std::string& name, const std::string& text);

// Compares `actual` with tests/data/golden/<name>. With KILN_UPDATE_GOLDEN=1 in the
// environment, rewrites the file instead and passes. Returns "" on match, else a diff hint.
std::string check_golden(const std::string& name, const std::string& actual);

// The message of the kiln::Error that f throws; "" when it throws none.
std::string error_of(const std::function<void()>& f);

// Runs a shell command; returns its exit status and fills `output` with stdout+stderr.
int run_command(const std::string& command, std::string& output);

// Runs f in a forked child process; returns the child's exit status: what f returned, 2 when f threw,
// 128 + the signal when it was killed.
int in_child(const std::function<int()>& f);
// As in_child, with the child's address space (RLIMIT_AS) limited to what it has mapped at the fork
// plus room_bytes. (Not under AddressSanitizer, which maps terabytes of shadow.)
int in_child_with_address_room(size_t room_bytes, const std::function<int()>& f);

}  // namespace kiln::test
