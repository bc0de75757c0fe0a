// Finding and reading the user's Python source that a session points at. Sessions record the path
// the model was exported from ("/home/user/project/models.py"), which rarely exists on the machine
// that opens the session; the file is then looked for next to the model and the session file.
//
// find_source_file(recorded, search_dirs)
//   post: `recorded` when it names an existing regular file; else the first existing of
//         dir/<basename> and dir/src/<basename> for each dir in order; else "".
// parse_stack_frame("path/to/file.py:42 in forward") → {"path/to/file.py", 42}; line 0 when the
//   text is not of that form.
// read_source_excerpt(path, line, context)
//   post: the lines [line - context, line + context] of the file (clamped), and the number of the
//         first one; empty text when the file cannot be read.
#pragma once

#include <string>
#include <vector>

namespace kiln::viewers {

std::string find_source_file(const std::string& recorded, const std::vector<std::string>& search_dirs);

struct StackFrame {
  std::string file;
  int line = 0;
};
StackFrame parse_stack_frame(const std::string& frame);

struct SourceExcerpt {
  std::string text;   // lines joined by '\n'
  int first_line = 1;
};
SourceExcerpt read_source_excerpt(const std::string& path, int line, int context);

}  // namespace kiln::viewers
