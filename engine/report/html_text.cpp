// HTML escaping; see html_text.h.
#include "engine/report/html_text.h"

#include "engine/base/escape.h"

namespace kiln::report {

const char* html_entity(unsigned char c) {
  switch (c) {
    case '&': return "&amp;";
    case '<': return "&lt;";
    case '>': return "&gt;";
    case '"': return "&quot;";
    case '\'': return "&#39;";
    default: return nullptr;
  }
}

std::string html_escape(const std::string& text) { return replace_chars(text, html_entity); }

}  // namespace kiln::report
