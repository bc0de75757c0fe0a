// Written straight into one string (a graph of a large log's compile holds thousands of nodes, and
// building an nlohmann document of it first cost as much as reading the log): the text is the one
// nlohmann::ordered_json's dump(indent, ' ', false, replace) gives for the same document, which
// tests/engine/ir/test_to_json.cpp checks against it on random graphs. Strings are escaped by
// append_json_string (base/json_text.h); doubles are still formatted by nlohmann, value by value.
#include "engine/ir/to_json.h"

#include <charconv>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "engine/base/json_text.h"

namespace kiln::ir {

namespace {

class Writer {
 public:
  Writer(std::string& out, int indent) : out_(out), indent_(indent) {}

  void open(char c) {
    out_ += c;
    first_.push_back(true);
  }
  void close(char c) {
    const bool empty = first_.back();
    first_.pop_back();
    if (!empty) newline();
    out_ += c;
  }
  // Before a member of the innermost object: its separator and name.
  void key(std::string_view name) {
    element();
    string(name);
    out_ += indent_ >= 0 ? ": " : ":";
  }
  // Before an element of the innermost array.
  void element() {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
    newline();
  }

  void string(std::string_view s) { append_json_string(out_, s); }
  void integer(int64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, r.ptr);
  }
  void real(double v) { out_ += nlohmann::ordered_json(v).dump(); }
  void boolean(bool v) { out_ += v ? "true" : "false"; }
  void null() { out_ += "null"; }

 private:
  void newline() {
    if (indent_ < 0) return;
    out_ += '\n';
    out_.append(first_.size() * static_cast<size_t>(indent_), ' ');
  }

  std::string& out_;
  const int indent_;
  std::vector<bool> first_;  // per open container: nothing written in it yet
};

void write_arg(Writer& w, const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::Ref:
      w.open('{');
      w.key("ref");
      w.string(a.ref);
      return w.close('}');
    case Arg::Kind::None: return w.null();
    case Arg::Kind::Bool: return w.boolean(a.b);
    case Arg::Kind::Int: return w.integer(a.i);
    case Arg::Kind::Float: return w.real(a.f);
    case Arg::Kind::Str:
    case Arg::Kind::Other:
      w.open('{');
      w.key(a.kind == Arg::Kind::Str ? "str" : "literal");
      w.string(a.s);
      return w.close('}');
    case Arg::Kind::List:
      w.open('[');
      for (const auto& it : a.items) {
        w.element();
        write_arg(w, it);
      }
      return w.close(']');
  }
  w.null();
}

void write_args(Writer& w, const std::vector<Arg>& args) {
  w.open('[');
  for (const auto& a : args) {
    w.element();
    write_arg(w, a);
  }
  w.close(']');
}

void write_meta(Writer& w, const ValueMeta& m) {
  w.open('{');
  w.key("type");
  w.string(m.type_name);
  if (m.is_tensor()) {
    w.key("dtype");
    w.string(dtype_name(m.dtype));
    w.key("shape");
    w.open('[');
    for (const auto& d : m.shape) {
      w.element();
      if (d.is_symbolic()) w.string(d.symbol);
      else w.integer(d.value);
    }
    w.close(']');
    w.key("stride");
    w.open('[');
    for (int64_t s : m.stride) {
      w.element();
      w.integer(s);
    }
    w.close(']');
    w.key("device");
    w.string(m.device);
    w.key("requires_grad");
    w.boolean(m.requires_grad);
  } else if (!m.scalar_value.empty()) {
    w.key("value");
    w.string(m.scalar_value);
  }
  w.close('}');
}

void write_loc(Writer& w, const SourceLoc& l) {
  if (!l.known()) return w.null();
  w.open('{');
  w.key("file");
  w.string(l.file);
  w.key("line");
  w.integer(l.line);
  w.key("col");
  w.integer(l.col);
  w.key("text");
  w.string(l.text);
  w.close('}');
}

void write_values(Writer& w, const std::vector<Value>& vs) {
  w.open('[');
  for (const auto& v : vs) {
    w.element();
    w.open('{');
    w.key("name");
    w.string(v.name);
    w.key("meta");
    write_meta(w, v.meta);
    w.close('}');
  }
  w.close(']');
}

void write_nodes(Writer& w, const std::vector<Node>& ns) {
  w.open('[');
  for (const auto& n : ns) {
    w.element();
    w.open('{');
    w.key("op");
    w.string(node_op_name(n.op));
    w.key("name");
    w.string(n.outputs.empty() ? std::string_view() : std::string_view(n.name()));
    w.key("target");
    w.string(n.target);
    w.key("args");
    write_args(w, n.args);
    // A repeated keyword keeps its first place and takes its last value, as an object assigned
    // member by member does.
    w.key("kwargs");
    w.open('{');
    for (size_t i = 0; i < n.kwargs.size(); ++i) {
      bool repeated = false;
      for (size_t j = 0; j < i && !repeated; ++j) repeated = n.kwargs[j].first == n.kwargs[i].first;
      if (repeated) continue;
      size_t last = i;
      for (size_t j = i + 1; j < n.kwargs.size(); ++j)
        if (n.kwargs[j].first == n.kwargs[i].first) last = j;
      w.key(n.kwargs[i].first);
      write_arg(w, n.kwargs[last].second);
    }
    w.close('}');
    w.key("outputs");
    write_values(w, n.outputs);
    w.key("module");
    w.string(n.module_path);
    w.key("source");
    write_loc(w, n.loc);
    w.key("op_source");
    write_loc(w, n.op_loc);
    if (!n.note.empty()) {
      w.key("note");
      w.string(n.note);
    }
    if (!n.blocks.empty()) {
      w.key("blocks");
      w.open('[');
      for (const auto& b : n.blocks) {
        w.element();
        w.open('{');
        w.key("params");
        write_values(w, b.params);
        w.key("nodes");
        write_nodes(w, b.nodes);
        w.key("returns");
        write_args(w, b.returns);
        w.close('}');
      }
      w.close(']');
    }
    w.close('}');
  }
  w.close(']');
}

}  // namespace

std::string to_json(const Graph& g, int indent) {
  std::string out;
  Writer w(out, indent);
  w.open('{');
  w.key("name");
  w.string(g.name);
  w.key("nodes");
  write_nodes(w, g.nodes);
  w.close('}');
  return out;
}

}  // namespace kiln::ir
