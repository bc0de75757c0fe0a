// The backend interface for plugins loaded at run time (kiln --plugin FILE.so): a plugin defines
// `extern "C" void kiln_register_backends()` and registers its Backend factories there.
// plugins/examples/sample_backend_plugin.cpp is a complete one.
#pragma once

#include "engine/runtime/backend.h"
