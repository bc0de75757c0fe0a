// html_escape(text): text made safe to place in HTML or SVG element content and in quoted
// attribute values: & < > " ' become entities; other bytes pass unchanged.
#pragma once

#include <string>

namespace kiln::report {

std::string html_escape(const std::string& text);

// The entity standing for c in HTML text (& < > " '), or null when c stays as it is.
const char* html_entity(unsigned char c);

}  // namespace kiln::report
