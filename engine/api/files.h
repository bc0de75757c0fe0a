// Errors and output files as the apps handle them: kiln::Error, writes that never lose the
// previous file (output_file.h), text made safe for a terminal (control_chars.h) and the
// NonCopyable base of guards (non_copyable.h).
#pragma once

#include "engine/base/control_chars.h"
#include "engine/base/error.h"
#include "engine/base/non_copyable.h"
#include "engine/base/output_file.h"
