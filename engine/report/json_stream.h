// JsonStream: one JSON document written piece by piece to an OutputSink, laid out byte for byte as
// nlohmann's dump(indent, ' ', false, error_handler_t::replace) lays out the whole document (empty
// lists and objects as [] and {}, invalid UTF-8 replaced), so that a report streamed from a session
// file reads the same as one built in memory.
//
// pre:  calls nest: begin_object/end_object and begin_array/end_array pair up; inside an object
//       every member starts with key(); value() writes a whole member or list item.
// post: finish() ends the text with a newline; the sink saw every byte written so far.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/base/output_file.h"

namespace kiln::report {

class JsonStream {
 public:
  JsonStream(OutputSink& out, int indent) : out_(out), indent_(indent) {}
  void begin_object() { open('{'); }
  void end_object() { close('}'); }
  void begin_array() { open('['); }
  void end_array() { close(']'); }
  void key(const std::string& name);
  void value(const nlohmann::ordered_json& v);
  void finish() { out_.write("\n"); }

 private:
  void item();  // before a list item or an object's key: the separator and the indentation
  void open(char bracket);
  void close(char bracket);
  std::string indentation(size_t depth) const { return std::string(depth * static_cast<size_t>(indent_), ' '); }

  struct Level {
    char bracket;
    size_t items = 0;
  };
  OutputSink& out_;
  int indent_;
  std::vector<Level> levels_;
  bool after_key_ = false;
  std::string scratch_;
};

}  // namespace kiln::report
