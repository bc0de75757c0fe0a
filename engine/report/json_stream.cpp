// JsonStream; see json_stream.h.
#include "engine/report/json_stream.h"

namespace kiln::report {

namespace {

std::string dump(const nlohmann::ordered_json& v, int indent) {
  return v.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

void JsonStream::item() {
  if (after_key_) {  // the value of a member whose key is written
    after_key_ = false;
    return;
  }
  if (levels_.empty()) return;  // the document itself
  Level& level = levels_.back();
  out_.write(level.items == 0 ? std::string(1, level.bracket) + "\n" : std::string(",\n"));
  ++level.items;
  out_.write(indentation(levels_.size()));
}

void JsonStream::key(const std::string& name) {
  item();
  out_.write(dump(nlohmann::ordered_json(name), -1));
  out_.write(": ");
  after_key_ = true;
}

void JsonStream::value(const nlohmann::ordered_json& v) {
  item();
  // Strings in JSON text hold no raw newline: each one is the layout's, and a nested value's lines
  // take the indentation of the depth it stands at.
  std::string text = dump(v, indent_);
  const std::string pad = indentation(levels_.size());
  if (pad.empty() || text.find('\n') == std::string::npos) {
    out_.write(text);
    return;
  }
  scratch_.clear();
  scratch_.reserve(text.size() + text.size() / 8);
  size_t at = 0;
  for (size_t nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1) {
    scratch_.append(text, at, nl + 1 - at);
    scratch_ += pad;
  }
  scratch_.append(text, at, std::string::npos);
  out_.write(scratch_);
}

void JsonStream::open(char bracket) {
  item();
  levels_.push_back(Level{bracket});
}

void JsonStream::close(char bracket) {
  Level level = levels_.back();
  levels_.pop_back();
  if (level.items == 0) {
    out_.write(std::string(1, level.bracket) + bracket);
    return;
  }
  out_.write("\n" + indentation(levels_.size()) + bracket);
}

}  // namespace kiln::report
