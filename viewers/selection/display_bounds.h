// bounded_for_display(session): the session the panels show, with every label-like text (modes,
// names, reasons, guards, lanes, paths...) cut to kMaxLabelBytes plus a note of its full size.
// Sessions come from other people: a megabyte in a run's mode must not make a table cell lay out a
// megabyte (seen: 24 GB and an OOM kill). Long texts shown in code views (kernel sources, graph
// listings) are kept whole. Returns the same pointer when nothing is too long (no copy).
#pragma once

#include <cstddef>
#include <memory>

#include "engine/api/session.h"

namespace kiln::viewers {

inline constexpr size_t kMaxLabelBytes = 2000;

std::shared_ptr<const session::Session> bounded_for_display(std::shared_ptr<const session::Session> s);

}  // namespace kiln::viewers
