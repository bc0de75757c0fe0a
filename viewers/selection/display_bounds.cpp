#include "viewers/selection/display_bounds.h"

#include <string>

namespace kiln::viewers {

namespace {

// Visits every label-like string of a session; `f` returns true when it changed one.
template <typename Session, typename F>
bool visit_labels(Session& s, F&& f) {
  bool any = false;
  auto one = [&](auto& text) { any = f(text) || any; };
  auto all = [&](auto& texts) {
    for (auto& t : texts) one(t);
  };
  one(s.origin);
  for (auto* t : {&s.env.kiln_version, &s.env.libtorch_version, &s.env.os, &s.env.cpu, &s.env.gpu, &s.env.driver,
                  &s.env.cuda, &s.env.created_at})
    one(*t);
  one(s.model.path);
  all(s.model.inputs);
  for (auto& b : s.breaks) {
    for (auto* t : {&b.info.id, &b.info.op, &b.info.reason, &b.info.hint, &b.info.module_path, &b.info.loc.file,
                    &b.info.loc.text, &b.compile_id})
      one(*t);
    all(b.user_stack);
  }
  for (auto& r : s.regions) {
    for (auto* t : {&r.compile_id, &r.frame, &r.recompile_reason}) one(*t);
    all(r.guards);
    all(r.symbols);
    for (auto& g : r.graphs) one(g.stage);
  }
  for (auto& k : s.kernels) {
    for (auto* t : {&k.name, &k.compile_id, &k.language, &k.launch_config}) one(*t);
    all(k.nodes);
    for (auto& c : k.autotune) one(c.config);
  }
  for (auto& d : s.fusion)
    for (auto* t : {&d.compile_id, &d.first, &d.second, &d.reason}) one(*t);
  for (auto& r : s.runs)
    for (auto* t : {&r.mode, &r.backend, &r.device, &r.status}) one(*t);
  for (auto& e : s.timeline)
    for (auto* t : {&e.lane, &e.name, &e.category, &e.compile_id, &e.kernel}) one(*t);
  for (auto& n : s.import_notes)
    for (auto* t : {&n.source, &n.what, &n.example}) one(*t);
  return any;
}

}  // namespace

std::shared_ptr<const session::Session> bounded_for_display(std::shared_ptr<const session::Session> s) {
  if (!s) return s;
  bool too_long = visit_labels(*s, [](const std::string& t) { return t.size() > kMaxLabelBytes; });
  if (!too_long) return s;
  auto copy = std::make_shared<session::Session>(*s);
  visit_labels(*copy, [](std::string& t) {
    if (t.size() <= kMaxLabelBytes) return false;
    size_t cut = kMaxLabelBytes;
    while (cut > 0 && (static_cast<unsigned char>(t[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
    t = t.substr(0, cut) + " … (" + std::to_string(t.size()) + " bytes)";
    return true;
  });
  return copy;
}

}  // namespace kiln::viewers
