// The artifact reads, in torch 2.6+:
//   Graph break in user code at /path/model.py:42
//   Graph Break Reason: Encountered graph break when attempting to trace CALL: ...
//   <blank>
//   Failed to trace builtin operator            <- title
//     Explanation: ...
//     Hint: ...                                 (repeated)
//   <blank>
//     Developer debug context: ...
//   <blank>
//    For more details about this graph break, please visit: https://.../gb0059.html
//   <blank>
//   User code traceback:
//     File "/path/model.py", line 42, in forward
//       print("mid")
//   <blank>
//   Traceback (most recent call last): ...      (Dynamo's own frames; ignored)
// Older versions have only the first two lines and the traceback.
#include "engine/importers/torch_trace/dynamo_text.h"

#include <cctype>
#include <cstdlib>

namespace kiln::importers {

namespace {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    out.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

// Title, Explanation, Hint and URL from the structured reason block (lines [begin, end)).
void read_reason_block(const std::vector<std::string_view>& lines, size_t begin, size_t end, DynamoBreak& b) {
  std::string* continuing = nullptr;  // a multi-line explanation or hint keeps growing
  for (size_t i = begin; i < end; ++i) {
    std::string_view t = trim(lines[i]);
    if (t.empty()) {
      continuing = nullptr;
      continue;
    }
    if (starts_with(t, "Explanation:")) {
      b.explanation = std::string(trim(t.substr(12)));
      continuing = &b.explanation;
    } else if (starts_with(t, "Hint:")) {
      b.hints.emplace_back(trim(t.substr(5)));
      continuing = &b.hints.back();
    } else if (starts_with(t, "Developer debug context:")) {
      continuing = nullptr;
    } else if (contains(t, "please visit:")) {
      b.url = std::string(trim(t.substr(t.find("please visit:") + 13)));
      continuing = nullptr;
    } else if (b.title.empty()) {
      b.title = std::string(t);
    } else if (continuing) {
      *continuing += " ";
      *continuing += std::string(t);
    }
  }
}

}  // namespace

std::string DynamoBreak::reason() const { return explanation.empty() ? title : title + ": " + explanation; }

std::string DynamoBreak::hint() const {
  std::string out;
  for (const auto& h : hints) out += (out.empty() ? "" : "\n") + h;
  if (!url.empty()) out += (out.empty() ? "See " : "\nSee ") + url;
  return out;
}

std::vector<std::string> frames_from_traceback(std::string_view text, std::string* innermost_code) {
  std::vector<std::string> frames;
  std::string code;
  for (std::string_view line : split_lines(text)) {
    std::string_view t = trim(line);
    if (starts_with(t, "File \"")) {
      size_t q = t.find('"', 6);
      if (q == std::string_view::npos) continue;
      std::string_view file = t.substr(6, q - 6);
      size_t ln = t.find("line ", q);
      if (ln == std::string_view::npos) continue;
      size_t num_end = ln + 5;
      while (num_end < t.size() && std::isdigit(static_cast<unsigned char>(t[num_end]))) ++num_end;
      std::string frame = std::string(file) + ":" + std::string(t.substr(ln + 5, num_end - ln - 5));
      size_t in = t.find(", in ", num_end);
      if (in != std::string_view::npos) frame += " in " + std::string(trim(t.substr(in + 5)));
      frames.push_back(frame);
      code.clear();
    } else if (!frames.empty() && !t.empty() && code.empty() && t.find_first_not_of("^~ ") != std::string_view::npos) {
      code = std::string(t);
    }
  }
  if (innermost_code) *innermost_code = code;
  return frames;
}

DynamoBreak parse_graph_break_artifact(std::string_view payload) {
  DynamoBreak b;
  auto lines = split_lines(payload);
  size_t reason_at = lines.size(), traceback_at = lines.size(), internal_at = lines.size();
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view t = trim(lines[i]);
    if (starts_with(t, "Graph break in user code at ")) {
      std::string_view where = trim(t.substr(28));
      size_t colon = where.rfind(':');
      if (colon != std::string_view::npos) {
        b.loc.file = std::string(where.substr(0, colon));
        b.loc.line = std::atoi(std::string(where.substr(colon + 1)).c_str());
      } else {
        b.loc.file = std::string(where);
      }
    } else if (reason_at == lines.size() && (starts_with(t, "Graph Break Reason:") || starts_with(t, "Reason:"))) {
      reason_at = i;
    } else if (starts_with(t, "User code traceback:") && traceback_at == lines.size()) {
      traceback_at = i;
    } else if (starts_with(t, "Traceback (most recent call last):") && traceback_at < i && internal_at == lines.size()) {
      internal_at = i;
    }
  }
  if (reason_at < lines.size()) {
    // A block after the "Graph Break Reason:" line holds the structure; without one, the rest of
    // that line is the whole reason.
    read_reason_block(lines, reason_at + 1, traceback_at, b);
    if (b.title.empty()) {
      std::string_view t = trim(lines[reason_at]);
      b.title = std::string(trim(t.substr(t.find(':') + 1)));
    }
  }
  if (traceback_at < lines.size()) {
    std::string text;
    for (size_t i = traceback_at + 1; i < internal_at; ++i) text += std::string(lines[i]) + "\n";
    std::string code;
    b.user_stack = frames_from_traceback(text, &code);
    b.loc.text = code;
    if (!b.loc.known() && !b.user_stack.empty()) {  // take the location from the innermost frame
      const std::string& f = b.user_stack.back();
      size_t in = f.find(" in ");
      std::string where = f.substr(0, in);
      size_t colon = where.rfind(':');
      b.loc.file = where.substr(0, colon);
      b.loc.line = std::atoi(where.substr(colon + 1).c_str());
    }
  }
  if (b.title.empty()) {
    for (auto l : lines)
      if (!trim(l).empty()) {
        b.title = std::string(trim(l));
        break;
      }
  }
  return b;
}

DynamoBreak parse_restart_reason(std::string_view text) {
  DynamoBreak b;
  auto lines = split_lines(text);
  read_reason_block(lines, 0, lines.size(), b);
  // Older one-line reasons are often quoted: "'skip function graph_break in file ...'".
  if (b.explanation.empty() && b.hints.empty() && b.title.size() >= 2 && b.title.front() == '\'' &&
      b.title.back() == '\'')
    b.title = b.title.substr(1, b.title.size() - 2);
  return b;
}

capture::BreakCategory classify_break(const DynamoBreak& b) {
  std::string text = b.title + "\n" + b.explanation;
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto has = [&](std::string_view w) { return lower.find(w) != std::string::npos; };
  if (has("data-dependent branching") || has("data dependent branching") || has("generic_jump") ||
      has("dynamic control flow"))
    return capture::BreakCategory::DataDependentBranch;
  if (has(".item()") || has("tolist") || has("capture_scalar_outputs") || has("_local_scalar_dense") ||
      has("data-dependent output") || has("unbacked"))
    return capture::BreakCategory::ScalarExtraction;
  if (has("`print`") || has("builtin print") || has("print(") || has("(print)") || has("logging") ||
      has("side effect") || has("warnings.warn"))
    return capture::BreakCategory::SideEffect;
  return capture::BreakCategory::OpaqueCall;
}

std::vector<std::string> guards_from_cpp_tree(std::string_view tree) {
  std::vector<std::string> guards;
  for (std::string_view line : split_lines(tree)) {
    size_t at = line.find("+- ");
    if (at == std::string_view::npos) continue;
    std::string_view g = line.substr(at + 3);
    size_t colon = g.find(':');
    if (colon == std::string_view::npos || colon == 0) continue;
    bool leaf = true;  // leaf guards are named in capitals: TENSOR_MATCH, LAMBDA_GUARD, ...
    for (char c : g.substr(0, colon))
      if (!(std::isupper(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_'))
        leaf = false;
    if (!leaf) continue;
    size_t comment = g.find("  # ");
    if (comment != std::string_view::npos) g = g.substr(0, comment);
    guards.emplace_back(trim(g));
  }
  return guards;
}

}  // namespace kiln::importers
