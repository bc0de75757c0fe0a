// CodeView: read-only source text with line numbers, syntax colours, a set of marked lines and a
// signal when the user clicks a line. Used for generated kernels and for the user's Python source.
#pragma once

#include <QPlainTextEdit>
#include <set>

#include "viewers/common/code_highlighter.h"

namespace kiln::viewers {

class CodeView : public QPlainTextEdit {
  Q_OBJECT
 public:
  explicit CodeView(QWidget* parent = nullptr);

  // Replaces the text; `first_line` is the number shown for the first line (an excerpt of a file).
  void setCode(const QString& text, CodeLanguage language, int first_line = 1);
  // Marks these lines (numbers as shown, i.e. counting from first_line) and scrolls to the first.
  void markLines(const std::set<int>& lines);
  const std::set<int>& markedLines() const { return marked_; }
  int firstLine() const { return firstLine_; }
  // The text of a line by its shown number ("" when out of range).
  QString lineText(int line) const;

  int gutterWidth() const;
  void paintGutter(QPaintEvent* event);

 Q_SIGNALS:
  // The user clicked a line (its shown number).
  void lineClicked(int line);

 protected:
  void resizeEvent(QResizeEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;

 private:
  void updateGutter(const QRect& rect, int dy);
  void applyMarks();

  QWidget* gutter_ = nullptr;
  CodeHighlighter* highlighter_ = nullptr;
  std::set<int> marked_;
  int firstLine_ = 1;
};

}  // namespace kiln::viewers
