// libFuzzer target: a timeline block's text (engine/session/timeline_blocks.h) made of arbitrary
// bytes. BlockError is an answer; a text that reads must read the same after writing it again.
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "engine/session/timeline_blocks.h"

namespace {

std::vector<kiln::session::TimelineEvent> decode(std::string_view text) {
  std::vector<kiln::session::TimelineEvent> out;
  kiln::session::decode_block(
      text, 3, [](int64_t id) { return "<part " + std::to_string(id) + ">"; },
      [&](kiln::session::TimelineEvent&& e) { out.push_back(std::move(e)); });
  return out;
}

bool same(const kiln::session::TimelineEvent& a, const kiln::session::TimelineEvent& b) {
  return a.run == b.run && a.lane == b.lane && a.name == b.name && a.category == b.category &&
         a.start_ns == b.start_ns && a.dur_ns == b.dur_ns && a.compile_id == b.compile_id && a.kernel == b.kernel &&
         a.correlation == b.correlation && a.args_json == b.args_json;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<kiln::session::TimelineEvent> events;
  try {
    events = decode(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const kiln::session::BlockError&) {
    return 0;
  }
  kiln::session::BlockText text;
  kiln::session::append_block_text(text, events.data(), events.data() + events.size(), {});
  auto again = decode(text.view());
  if (again.size() != events.size()) std::abort();
  for (size_t i = 0; i < events.size(); ++i)
    if (!same(events[i], again[i])) std::abort();
  return 0;
}
