// Importing real torch.compile runs (TORCH_TRACE logs, profiler traces) into sessions.
#pragma once

#include "engine/importers/import_files.h"
