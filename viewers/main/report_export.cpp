#include "viewers/main/report_export.h"

#include <QSaveFile>
#include <QString>

#include "engine/api/files.h"
#include "engine/api/report.h"

namespace kiln::viewers {

std::string render_report(const session::Session& s, ReportFormat format) {
  switch (format) {
    case ReportFormat::Html: return report::render_html(s);
    case ReportFormat::Markdown: return report::render_markdown(s);
    case ReportFormat::Json: return report::render_json(s);
  }
  return "";
}

ReportFormat parse_report_format(const std::string& name) {
  if (name == "html") return ReportFormat::Html;
  if (name == "md" || name == "markdown") return ReportFormat::Markdown;
  if (name == "json") return ReportFormat::Json;
  throw Error("report format '" + name + "': use html, md or json");
}

void export_report(const session::Session& s, ReportFormat format, const std::string& path) {
  const std::string text = render_report(s, format);
  QSaveFile file(QString::fromStdString(path));
  if (!file.open(QIODevice::WriteOnly))
    throw Error(path + ": cannot write (" + file.errorString().toStdString() + ")");
  if (file.write(text.data(), qint64(text.size())) != qint64(text.size())) {
    file.cancelWriting();
    throw Error(path + ": writing failed (" + file.errorString().toStdString() + ")");
  }
  if (!file.commit()) throw Error(path + ": cannot write (" + file.errorString().toStdString() + ")");
}

}  // namespace kiln::viewers
