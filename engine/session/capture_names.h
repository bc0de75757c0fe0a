// Names ↔ values for the capture enums the store keeps as text (so that reordering an enum never
// changes what an old file means).
//
// break_category_from_name(capture::break_category_info(c).name) == c for every category;
// event_kind_from_name(capture::event_kind_name(k)) == k for every kind; unknown names give nullopt.
#pragma once

#include <optional>
#include <string>

#include "engine/capture/capture_types.h"

namespace kiln::session {

std::optional<capture::BreakCategory> break_category_from_name(const std::string& name);
std::optional<capture::Event::Kind> event_kind_from_name(const std::string& name);

}  // namespace kiln::session
