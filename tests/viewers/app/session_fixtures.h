// Sessions the viewer tests run on: one crafted in code (every field the panels show, with known
// values), one imported from tests/data/traces/breaky_dynamic.log, one profiled from
// resources/examples/block.pt (eager and default on the CPU; made once per test run).
#pragma once

#include <memory>
#include <string>

#include "engine/session/session.h"
#include "viewers/selection/selection_context.h"

namespace kiln::test {

std::shared_ptr<const session::Session> crafted_session();
std::shared_ptr<const session::Session> imported_breaky_trace();
std::shared_ptr<const session::Session> profiled_block();
// The .kiln file profiled_block() was read from.
std::string profiled_block_path();
// The same model profiled at batch 4 (4x16x64), the other side of a comparison, and its file.
std::shared_ptr<const session::Session> profiled_block_batch4();
std::string profiled_block_batch4_path();
// profiled_block() compared with profiled_block_batch4() as the workbench compares them.
std::shared_ptr<const viewers::Comparison> block_comparison();

}  // namespace kiln::test
