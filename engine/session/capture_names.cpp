// Reverse lookups over the capture enums; see capture_names.h.
#include "engine/session/capture_names.h"

namespace kiln::session {

std::optional<capture::BreakCategory> break_category_from_name(const std::string& name) {
  for (int i = 0; i <= static_cast<int>(capture::BreakCategory::UnrollLimit); ++i) {
    auto c = static_cast<capture::BreakCategory>(i);
    if (name == capture::break_category_info(c).name) return c;
  }
  return std::nullopt;
}

std::optional<capture::Event::Kind> event_kind_from_name(const std::string& name) {
  for (int i = 0; i <= static_cast<int>(capture::Event::Kind::CudaGraph); ++i) {
    auto k = static_cast<capture::Event::Kind>(i);
    if (name == capture::event_kind_name(k)) return k;
  }
  return std::nullopt;
}

}  // namespace kiln::session
