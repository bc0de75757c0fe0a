// Every engine test executable starts with the built-in backends registered, as the commands
// register them before looking a backend up by name (engine/backends/builtin.h): tests build
// captured runtimes directly, below the commands.
#include "engine/backends/builtin.h"

namespace {

const bool registered = [] {
  kiln::backends::register_builtin_backends();
  return true;
}();

}  // namespace
