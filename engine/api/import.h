// Importing real torch.compile runs (TORCH_TRACE logs, profiler traces) into sessions.
#pragma once

#include "engine/importers/import_files.h"
// FX graph code (TORCH_TRACE graph stages) → graph JSON, for stages imported before it was kept.
#include "engine/importers/torch_trace/fx_readable.h"
