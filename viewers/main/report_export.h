// export_report(session, format, path): File > Export report — the same generators as
// `kiln report` (engine/report render_html / render_markdown / render_json), written atomically
// (a temporary file in the same folder, then a rename: never a half-written report in place).
// error: kiln::Error naming the path when it cannot be written, or the format when unknown.
#pragma once

#include <string>

#include "engine/api/session.h"

namespace kiln::viewers {

enum class ReportFormat { Html, Markdown, Json };

std::string render_report(const session::Session& s, ReportFormat format);
void export_report(const session::Session& s, ReportFormat format, const std::string& path);
// "html", "md"/"markdown", "json" → the format; kiln::Error naming the text otherwise.
ReportFormat parse_report_format(const std::string& name);

}  // namespace kiln::viewers
