#include "engine/importers/torch_trace/fx_readable.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <vector>

#include "engine/base/error.h"
#include "engine/ir/to_json.h"

namespace kiln::importers {

namespace {

// One statement of the source: code joined across lines while brackets are open, its trailing
// comments, and its indentation.
struct LogicalLine {
  int indent = 0;
  std::string code;                   // without comments
  std::vector<std::string> pieces;    // code of each physical line (signatures: one parameter each)
  std::vector<std::string> comments;  // comment of each physical line ("" when none)
  bool blank_before = false;          // a blank line came before it
  std::string comment_only;           // a line that is only a comment
};

// A whole number that fits in 64 bits; nullopt when it does not (a log may say "f32[99999999999999999999]").
std::optional<int64_t> whole_number(const std::string& s) {
  try {
    return std::stoll(s);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool is_identifier(const std::string& s) {
  if (s.empty() || !is_ident_start(s[0])) return false;
  for (char c : s)
    if (!is_ident_char(c)) return false;
  return true;
}

// Splits a physical line into code and comment, updating the bracket depth (strings respected).
void split_comment(std::string_view line, std::string& code, std::string& comment, int& depth) {
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
      continue;
    }
    if (c == '"' || c == '\'') quote = c;
    else if (c == '#') {
      code = std::string(line.substr(0, i));
      comment = trim(line.substr(i + 1));
      return;
    } else if (c == '(' || c == '[' || c == '{') ++depth;
    else if (c == ')' || c == ']' || c == '}') depth = std::max(0, depth - 1);
  }
  code = std::string(line);
  comment.clear();
}

std::vector<LogicalLine> logical_lines(std::string_view text) {
  std::vector<LogicalLine> out;
  LogicalLine cur;
  bool open = false, blank = false;
  int depth = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::string code, comment;
    int indent = 0;
    while (indent < static_cast<int>(line.size()) && (line[indent] == ' ' || line[indent] == '\t')) ++indent;
    split_comment(line, code, comment, depth);
    std::string t = trim(code);
    if (!open) {
      if (t.empty()) {
        if (comment.empty()) blank = true;
        else {
          LogicalLine c;
          c.indent = indent;
          c.comment_only = comment;
          c.blank_before = blank;
          out.push_back(std::move(c));
          blank = false;
        }
        continue;
      }
      cur = LogicalLine{};
      cur.indent = indent;
      cur.blank_before = blank;
      blank = false;
    }
    cur.code += (cur.code.empty() ? "" : " ") + t;
    cur.pieces.push_back(t);
    cur.comments.push_back(comment);
    open = depth > 0;
    if (!open) out.push_back(std::move(cur));
  }
  if (open) out.push_back(std::move(cur));  // unbalanced at the end: keep what there is
  return out;
}

// Walks s from `from`, outside string literals, calling visit(i, c, depth) for each character with
// the bracket depth after it; returns the first position where visit says stop, or npos.
template <class Visit>
size_t scan_code(std::string_view s, size_t from, Visit visit) {
  int depth = 0;
  char quote = 0;
  for (size_t i = from; i < s.size(); ++i) {
    char c = s[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
      continue;
    }
    if (c == '"' || c == '\'') quote = c;
    else if (c == '(' || c == '[' || c == '{') ++depth;
    else if (c == ')' || c == ']' || c == '}') --depth;
    if (visit(i, c, depth)) return i;
  }
  return std::string_view::npos;
}

// Top-level split on `sep` (outside brackets and strings).
std::vector<std::string> split_top(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  scan_code(s, 0, [&](size_t i, char c, int depth) {
    if (c == sep && depth == 0) {
      out.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
    return false;
  });
  out.push_back(trim(s.substr(start)));
  return out;
}

// The position of the bracket closing the one at `open`, or npos.
size_t matching(std::string_view s, size_t open) {
  return scan_code(s, open, [](size_t, char c, int depth) {
    return (c == ')' || c == ']' || c == '}') && depth == 0;
  });
}

// The position of a top-level assignment '=' (not ==, <=, >=, !=), or npos.
size_t assignment(std::string_view s) {
  return scan_code(s, 0, [s](size_t i, char c, int depth) {
    if (c != '=' || depth != 0) return false;
    char before = i ? s[i - 1] : ' ', after = i + 1 < s.size() ? s[i + 1] : ' ';
    return !(after == '=' || before == '=' || before == '<' || before == '>' || before == '!');
  });
}

// -?(\d+(\.\d*)?([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?|inf|nan), matched by hand: a std::regex
// here, tried on every argument of every graph line, was a twentieth of a large log's import.
bool number_text(std::string_view s) {
  const size_t n = s.size();
  size_t j = s.empty() || s[0] != '-' ? 0 : 1;
  if (s.substr(j) == "inf" || s.substr(j) == "nan") return true;
  auto digits = [&] {
    const size_t from = j;
    while (j < n && s[j] >= '0' && s[j] <= '9') ++j;
    return j - from;
  };
  if (digits() > 0) {
    if (j < n && s[j] == '.') {
      ++j;
      digits();
    }
  } else {
    if (j >= n || s[j] != '.') return false;
    ++j;
    if (digits() == 0) return false;
  }
  if (j < n && (s[j] == 'e' || s[j] == 'E')) {
    ++j;
    if (j < n && (s[j] == '+' || s[j] == '-')) ++j;
    if (digits() == 0) return false;
  }
  return j == n;
}

bool is_number(const std::string& s, bool* real) {
  if (s.empty() || s.size() > 64 || !number_text(s)) return false;
  *real = s.find_first_of(".eEn") != std::string::npos;
  return true;
}

// "f32[2, 16, 64][1024, 64, 1]cuda:0", "Sym(s0)", "i64[]" → meta.
ir::ValueMeta meta_of_annotation(const std::string& ann) {
  ir::ValueMeta m;
  if (ann.empty()) return m;
  if (ann.rfind("Sym(", 0) == 0) {
    m.kind = ir::ValueMeta::Kind::Int;
    m.type_name = "SymInt";
    return m;
  }
  size_t open = ann.find('[');
  std::string dtype = ann.substr(0, open);
  auto dt = dtype == "b8" ? std::optional<ir::DType>(ir::DType::Bool) : ir::parse_dtype(dtype);
  size_t close = open == std::string::npos ? std::string::npos : ann.find(']', open);
  if (!dt || close == std::string::npos) {
    m.kind = ir::ValueMeta::Kind::Other;
    m.type_name = ann;
    return m;
  }
  m.kind = ir::ValueMeta::Kind::Tensor;
  m.type_name = "Tensor";
  m.dtype = *dt;
  std::string dims = ann.substr(open + 1, close - open - 1);
  if (!trim(dims).empty())
    for (const auto& d : split_top(dims, ',')) {
      bool real = false;
      auto n = is_number(d, &real) && !real ? whole_number(d) : std::nullopt;
      if (n) m.shape.push_back(ir::Dim::concrete(*n));
      else m.shape.push_back(ir::Dim::symbolic(d));
    }
  std::string rest = ann.substr(close + 1);
  if (!rest.empty() && rest[0] == '[') {
    size_t end = rest.find(']');
    if (end != std::string::npos) {
      bool concrete = true;
      std::vector<int64_t> stride;
      std::string strides = rest.substr(1, end - 1);
      if (!trim(strides).empty())
        for (const auto& d : split_top(strides, ',')) {
          bool real = false;
          auto n = is_number(d, &real) && !real ? whole_number(d) : std::nullopt;
          if (n) stride.push_back(*n);
          else concrete = false;
        }
      if (concrete) m.stride = stride;
      rest = rest.substr(end + 1);
    }
  }
  m.device = trim(rest);
  return m;
}

// Dynamo's names for lifted parameters and buffers:
// L_self_modules_layer1_modules_0_modules_conv1_parameters_weight_ → "layer1.0.conv1.weight".
bool lifted_parameter(const std::string& name, std::string& target, std::string& module) {
  for (const char* prefix : {"L_self_", "l_self_"}) {
    if (name.rfind(prefix, 0) != 0) continue;
    std::string s = name.substr(7);
    if (!s.empty() && s.back() == '_') s.pop_back();
    size_t kind = std::string::npos, len = 0;
    for (const char* marker : {"parameters_", "buffers_"}) {
      size_t at = s.rfind(marker);
      if (at != std::string::npos && (at == 0 || s[at - 1] == '_') && (kind == std::string::npos || at > kind)) {
        kind = at;
        len = std::string(marker).size();
      }
    }
    if (kind == std::string::npos) return false;
    std::string owner = kind ? s.substr(0, kind - 1) : "", attr = s.substr(kind + len);
    if (attr.empty()) return false;
    module.clear();
    if (!owner.empty()) {
      if (owner.rfind("modules_", 0) != 0) return false;
      owner = owner.substr(8);
      for (size_t at; (at = owner.find("_modules_")) != std::string::npos;) owner.replace(at, 9, ".");
      module = owner;
    }
    target = module.empty() ? attr : module + "." + attr;
    return true;
  }
  return false;
}

// "torch.ops.aten.add.Tensor" → "aten::add.Tensor"; other callees as written.
std::string call_target(const std::string& callee) {
  if (callee.rfind("torch.ops.", 0) == 0) {
    std::string rest = callee.substr(10);
    size_t dot = rest.find('.');
    if (dot != std::string::npos) return rest.substr(0, dot) + "::" + rest.substr(dot + 1);
  }
  return callee;
}

const std::map<std::string, std::string>& binary_ops() {
  static const std::map<std::string, std::string> ops = {
      {"+", "add"}, {"-", "sub"}, {"*", "mul"}, {"/", "truediv"}, {"//", "floordiv"}, {"%", "mod"},
      {"**", "pow"}, {"@", "matmul"}, {"==", "eq"}, {"!=", "ne"}, {"<", "lt"}, {"<=", "le"},
      {">", "gt"}, {">=", "ge"}, {"&", "and_"}, {"|", "or_"}, {"^", "xor"}, {"<<", "lshift"}, {">>", "rshift"}};
  return ops;
}

class FxReader {
 public:
  FxReadableGraph result;

  void read(std::string_view text) {
    auto lines = logical_lines(text);
    int def = -1;
    for (size_t i = 0; i < lines.size(); ++i)
      if (lines[i].code.rfind("def forward(", 0) == 0 && (def < 0 || lines[i].indent < lines[def].indent))
        def = static_cast<int>(i);
    if (def < 0) throw Error("FX graph text has no 'def forward(' signature");
    signature(lines[def]);
    for (size_t i = def + 1; i < lines.size(); ++i) {
      const auto& l = lines[i];
      if (l.blank_before) loc_ = {};
      if (!l.comment_only.empty()) {
        if (l.indent > lines[def].indent) comment(l.comment_only);
        continue;
      }
      if (l.indent <= lines[def].indent) break;  // the end of forward's body
      for (const auto& st : split_top(l.code, ';')) statement(st);
    }
    finish();
  }

 private:
  ir::SourceLoc loc_;
  std::map<std::string, std::string> values_;  // name in the text → node value name
  std::set<std::string> names_;
  std::vector<ir::Node> inputs_, body_;
  bool has_output_ = false;
  ir::Node output_;

  void skip(const std::string& what) {
    if (!result.skipped_lines++) result.first_skipped = what;
  }

  std::string fresh(const std::string& name) {
    std::string n = name;
    for (int k = 2; names_.count(n); ++k) n = name + "_" + std::to_string(k);
    names_.insert(n);
    values_[name] = n;
    return n;
  }

  void add_input(const std::string& name, const std::string& ann, const std::string& comment) {
    ir::Node n;
    std::string target, module;
    static const std::regex aot_param(R"((Param|Buffer)AOTInput\(target='([^']+)'\))");
    std::smatch m;
    if (lifted_parameter(name, target, module)) {
      n.op = ir::NodeOp::GetAttr;
      n.target = target;
      n.module_path = module;
      n.note = "lifted to a graph input by Dynamo";
    } else if (comment.size() < 1000 && std::regex_search(comment, m, aot_param)) {
      n.op = ir::NodeOp::GetAttr;
      n.target = m[2].str();
      size_t dot = n.target.rfind('.');
      n.module_path = dot == std::string::npos ? "" : n.target.substr(0, dot);
      n.note = "a graph input (AOT " + m[1].str() + ")";
    } else {
      n.op = ir::NodeOp::Placeholder;
      n.target = name;
    }
    n.outputs.push_back({fresh(name), meta_of_annotation(ann)});
    inputs_.push_back(std::move(n));
  }

  // `name: "ann" = default` → name and annotation.
  static bool parameter(const std::string& p, std::string& name, std::string& ann) {
    std::string s = trim(split_top(p, '=').front());
    size_t colon = s.find(':');
    name = trim(s.substr(0, colon));
    ann.clear();
    if (colon != std::string::npos) {
      ann = trim(s.substr(colon + 1));
      if (ann.size() >= 2 && (ann.front() == '"' || ann.front() == '\'')) ann = ann.substr(1, ann.size() - 2);
    }
    return is_identifier(name) && name != "self";
  }

  void signature(const LogicalLine& l) {
    if (l.pieces.size() > 1) {  // one parameter per line, each with its own comment
      for (size_t i = 0; i < l.pieces.size(); ++i) {
        std::string piece = l.pieces[i];
        if (i == 0) piece = piece.substr(std::min(piece.size(), piece.find('(') + 1));
        for (const auto& p : split_top(piece, ',')) {
          std::string name, ann;
          if (parameter(p, name, ann)) add_input(name, ann, l.comments[i]);
        }
      }
      return;
    }
    size_t open = l.code.find('(');
    size_t close = matching(l.code, open);
    std::string params = l.code.substr(open + 1, close == std::string::npos ? std::string::npos : close - open - 1);
    for (const auto& p : split_top(params, ',')) {
      std::string name, ann;
      if (parameter(p, name, ann)) add_input(name, ann, "");
    }
  }

  void comment(const std::string& c) {
    // "File: /path/model.py:66 in forward, code: q, k, v = ..."
    static const std::regex file_re(R"(^File: (.+):(\d+) in ([^,]+)(, code: (.*))?$)");
    std::smatch m;
    if (c.size() < 4000 && c.rfind("File: ", 0) == 0 && std::regex_match(c, m, file_re)) {
      loc_ = {};
      loc_.file = m[1].str();
      auto line = whole_number(m[2].str());
      loc_.line = line && *line <= std::numeric_limits<int>::max() ? static_cast<int>(*line) : 0;
      loc_.text = m[5].str();
    }
  }

  ir::Arg arg(const std::string& raw) {
    std::string s = trim(raw);
    bool real = false;
    if (s.empty() || s == "None") return ir::Arg::none();
    if (s == "True" || s == "False") return ir::Arg::boolean(s == "True");
    if (auto it = values_.find(s); it != values_.end()) return ir::Arg::value(it->second);
    if (is_number(s, &real)) {
      try {
        return real ? ir::Arg::real(std::stod(s)) : ir::Arg::integer(std::stoll(s));
      } catch (const std::exception&) {
        return ir::Arg::other(s);
      }
    }
    if (s.size() >= 2 && (s[0] == '"' || s[0] == '\'') && s.back() == s[0]) return ir::Arg::string(s.substr(1, s.size() - 2));
    if ((s[0] == '[' || s[0] == '(') && matching(s, 0) == s.size() - 1) {
      std::vector<ir::Arg> items;
      std::string inner = s.substr(1, s.size() - 2);
      if (s[0] == '(' && split_top(inner, ',').size() == 1 && !trim(inner).empty()) return arg(inner);  // (a + b)
      if (!trim(inner).empty())
        for (const auto& item : split_top(inner, ','))
          if (!item.empty()) items.push_back(arg(item));
      return ir::Arg::list(std::move(items));
    }
    return ir::Arg::other(s);
  }

  void call_args(ir::Node& n, const std::string& inside) {
    if (trim(inside).empty()) return;
    for (const auto& a : split_top(inside, ',')) {
      if (a.empty()) continue;
      size_t eq = assignment(a);
      std::string key = eq == std::string::npos ? "" : trim(a.substr(0, eq));
      if (is_identifier(key)) n.kwargs.emplace_back(key, arg(a.substr(eq + 1)));
      else n.args.push_back(arg(a));
    }
  }

  // Reads the right-hand side into a call node; false when it is not a form this reader knows.
  bool expression(const std::string& rhs, ir::Node& n) {
    size_t head_end = 0;
    while (head_end < rhs.size() && (is_ident_char(rhs[head_end]) || rhs[head_end] == '.')) ++head_end;
    const std::string head = rhs.substr(0, head_end);
    if (is_ident_start(rhs[0]) && head_end < rhs.size() && rhs[head_end] == '(' &&
        matching(rhs, head_end) == rhs.size() - 1) {
      std::string inside = rhs.substr(head_end + 1, rhs.size() - head_end - 2);
      size_t dot = head.find('.');
      std::string value = head.substr(0, dot);
      if (dot != std::string::npos && values_.count(value) && head.find('.', dot + 1) == std::string::npos) {
        n.target = "Tensor." + head.substr(dot + 1);  // a method of a value: x.chunk(3)
        n.args.push_back(ir::Arg::value(values_[value]));
      } else {
        n.target = call_target(head);
      }
      call_args(n, inside);
      return true;
    }
    if (is_identifier(head) && values_.count(head) && head_end < rhs.size() && rhs[head_end] == '[' &&
        matching(rhs, head_end) == rhs.size() - 1) {  // chunk[0]
      n.target = "getitem";
      n.args = {ir::Arg::value(values_[head]), arg(rhs.substr(head_end + 1, rhs.size() - head_end - 2))};
      return true;
    }
    auto words = split_top(rhs, ' ');
    if (words.size() == 3 && binary_ops().count(words[1])) {  // a + b, of names and literals
      ir::Arg a = arg(words[0]), b = arg(words[2]);
      if (a.kind == ir::Arg::Kind::Other || b.kind == ir::Arg::Kind::Other) return false;
      n.target = binary_ops().at(words[1]);
      n.args = {a, b};
      return true;
    }
    std::string operand = rhs.rfind("not ", 0) == 0 ? rhs.substr(4) : rhs.substr(1);
    if ((rhs[0] == '-' || rhs[0] == '~' || rhs.rfind("not ", 0) == 0) && values_.count(operand)) {
      n.target = rhs[0] == '-' ? "neg" : rhs[0] == '~' ? "invert" : "not_";
      n.args = {ir::Arg::value(values_[operand])};
      return true;
    }
    return false;
  }

  // Refs to every known name in an expression this reader could not read.
  void refs_in(const std::string& rhs, ir::Node& n) {
    static const std::regex ident(R"([A-Za-z_]\w*)");
    std::set<std::string> seen;
    for (std::sregex_iterator it(rhs.begin(), rhs.end(), ident), end; it != end; ++it) {
      auto v = values_.find(it->str());
      if (v != values_.end() && seen.insert(v->second).second) n.args.push_back(ir::Arg::value(v->second));
    }
  }

  void statement(const std::string& st) {
    if (st.empty()) return;
    if (st.rfind("return", 0) == 0 && (st.size() == 6 || st[6] == ' ' || st[6] == '(')) {
      output_ = {};
      output_.op = ir::NodeOp::Output;
      output_.target = "output";
      output_.args.push_back(arg(st.substr(6)));
      if (output_.args[0].kind == ir::Arg::Kind::Other) {  // pytree.tree_unflatten([...], spec) and the like
        output_.args.clear();
        refs_in(st.substr(6), output_);
      }
      output_.loc = loc_;
      has_output_ = true;
      return;
    }
    size_t eq = assignment(st);
    if (eq == std::string::npos) return skip(st);
    std::string lhs = trim(st.substr(0, eq)), rhs = trim(st.substr(eq + 1));
    if (rhs.empty()) return skip(st);
    if (rhs == "None" || (assignment(rhs) != std::string::npos && rhs.size() > 7 &&
                          rhs.compare(rhs.size() - 7, 7, " = None") == 0))
      return;  // x = y = None: FX freeing values
    if (split_top(lhs, ',').size() > 1) {
      if (rhs.find("tree_flatten_spec") != std::string::npos) {  // primals_1, tangents_1, = fx_pytree...
        for (const auto& name : split_top(lhs, ','))
          if (is_identifier(name)) add_input(name, "", "");
      } else {
        skip(st);
      }
      return;
    }
    std::string name, ann;
    if (!parameter(lhs, name, ann)) return skip(st);
    if (auto it = values_.find(rhs); it != values_.end() && ann.empty()) {  // l_x_ = L_x_
      values_[name] = it->second;
      return;
    }
    ir::Node n;
    n.loc = loc_;
    std::string attr = rhs.rfind("self.", 0) == 0 ? rhs.substr(5) : "";
    if (!attr.empty() && std::all_of(attr.begin(), attr.end(), [](char c) { return is_ident_char(c) || c == '.'; })) {
      n.op = ir::NodeOp::GetAttr;
      if (!lifted_parameter(attr, n.target, n.module_path))
        n.target = attr.rfind("L__self___", 0) == 0 ? attr.substr(10) : attr;
      n.outputs.push_back({fresh(name), meta_of_annotation(ann)});
      inputs_.push_back(std::move(n));
      return;
    }
    n.op = ir::NodeOp::CallFunction;
    if (!expression(rhs, n)) {
      skip(st);
      n.args.clear();
      n.kwargs.clear();
      n.target = rhs.size() > 48 ? rhs.substr(0, 45) + "..." : rhs;
      n.note = "not read: " + rhs;
      refs_in(rhs, n);
    }
    n.outputs.push_back({fresh(name), meta_of_annotation(ann)});
    body_.push_back(std::move(n));
  }

  void finish() {
    // Placeholders that only fed fx_pytree.tree_flatten_spec (primals, tangents) are gone.
    std::set<std::string> used;
    std::function<void(const ir::Arg&)> use = [&](const ir::Arg& a) {
      if (a.kind == ir::Arg::Kind::Ref) used.insert(a.ref);
      for (const auto& i : a.items) use(i);
    };
    for (const auto& n : body_) {
      for (const auto& a : n.args) use(a);
      for (const auto& kw : n.kwargs) use(kw.second);
    }
    for (const auto& a : output_.args) use(a);
    auto& g = result.graph;
    g.name = "forward";
    for (auto& n : inputs_) {
      bool flattened = n.outputs[0].meta.kind == ir::ValueMeta::Kind::Unknown && !used.count(n.outputs[0].name) &&
                       (n.outputs[0].name == "primals" || n.outputs[0].name == "tangents");
      if (!flattened) g.nodes.push_back(std::move(n));
    }
    for (auto& n : body_) g.nodes.push_back(std::move(n));
    if (!has_output_) {
      output_.op = ir::NodeOp::Output;
      output_.target = "output";
      output_.note = "no return statement was found";
    }
    output_.outputs.push_back({fresh("output"), {}});
    g.nodes.push_back(std::move(output_));
  }
};

}  // namespace

bool looks_like_fx_readable(std::string_view text) { return text.find("def forward(") != std::string_view::npos; }

FxReadableGraph parse_fx_readable(std::string_view text) {
  FxReader r;
  r.read(text);
  return std::move(r.result);
}

std::string fx_readable_json(std::string_view text, std::string* error) {
  if (!looks_like_fx_readable(text)) {
    if (error) *error = "not FX graph code (no 'def forward(')";
    return "";
  }
  try {
    auto g = parse_fx_readable(text);
    bool calls = false;
    for (const auto& n : g.graph.nodes) calls |= n.op == ir::NodeOp::CallFunction;
    if (!calls) {
      if (error) *error = "FX graph text has no call the reader understood";
      return "";
    }
    return ir::to_json(g.graph, -1);
  } catch (const Error& e) {
    if (error) *error = e.what();
    return "";
  }
}

}  // namespace kiln::importers
