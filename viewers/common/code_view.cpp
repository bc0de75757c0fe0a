#include "viewers/common/code_view.h"

#include <QFontDatabase>
#include <QMouseEvent>
#include <QPainter>
#include <QTextBlock>

namespace kiln::viewers {

namespace {

class Gutter : public QWidget {
 public:
  explicit Gutter(CodeView* view) : QWidget(view), view_(view) {}
  QSize sizeHint() const override { return {view_->gutterWidth(), 0}; }

 protected:
  void paintEvent(QPaintEvent* e) override { view_->paintGutter(e); }

 private:
  CodeView* view_;
};

}  // namespace

CodeView::CodeView(QWidget* parent) : QPlainTextEdit(parent) {
  setReadOnly(true);
  setLineWrapMode(QPlainTextEdit::NoWrap);
  setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
  gutter_ = new Gutter(this);
  connect(this, &QPlainTextEdit::blockCountChanged, this, [this] { setViewportMargins(gutterWidth(), 0, 0, 0); });
  connect(this, &QPlainTextEdit::updateRequest, this, &CodeView::updateGutter);
  setViewportMargins(gutterWidth(), 0, 0, 0);
}

void CodeView::setCode(const QString& text, CodeLanguage language, int first_line) {
  if (highlighter_ && highlighter_->language() != language) {
    delete highlighter_;
    highlighter_ = nullptr;
  }
  firstLine_ = first_line;
  marked_.clear();
  setPlainText(text);
  if (!highlighter_) highlighter_ = new CodeHighlighter(document(), language);
  setViewportMargins(gutterWidth(), 0, 0, 0);
  applyMarks();
}

void CodeView::markLines(const std::set<int>& lines) {
  marked_ = lines;
  applyMarks();
  if (!marked_.empty()) {
    QTextBlock b = document()->findBlockByNumber(*marked_.begin() - firstLine_);
    if (b.isValid()) {
      QTextCursor c(b);
      setTextCursor(c);
      centerCursor();
    }
  }
}

QString CodeView::lineText(int line) const {
  QTextBlock b = document()->findBlockByNumber(line - firstLine_);
  return b.isValid() ? b.text() : QString();
}

void CodeView::applyMarks() {
  QList<QTextEdit::ExtraSelection> sels;
  const QColor mark(255, 236, 150);
  for (int line : marked_) {
    QTextBlock b = document()->findBlockByNumber(line - firstLine_);
    if (!b.isValid()) continue;
    QTextEdit::ExtraSelection s;
    s.format.setBackground(mark);
    s.format.setProperty(QTextFormat::FullWidthSelection, true);
    s.cursor = QTextCursor(b);
    sels.push_back(s);
  }
  setExtraSelections(sels);
  gutter_->update();
}

int CodeView::gutterWidth() const {
  int digits = 1;
  for (int n = std::max(1, firstLine_ + blockCount()); n >= 10; n /= 10) ++digits;
  return 12 + fontMetrics().horizontalAdvance(QLatin1Char('9')) * std::max(3, digits);
}

void CodeView::updateGutter(const QRect& rect, int dy) {
  if (dy)
    gutter_->scroll(0, dy);
  else
    gutter_->update(0, rect.y(), gutter_->width(), rect.height());
}

void CodeView::resizeEvent(QResizeEvent* e) {
  QPlainTextEdit::resizeEvent(e);
  QRect cr = contentsRect();
  gutter_->setGeometry(QRect(cr.left(), cr.top(), gutterWidth(), cr.height()));
}

void CodeView::paintGutter(QPaintEvent* event) {
  QPainter p(gutter_);
  p.fillRect(event->rect(), palette().color(QPalette::AlternateBase));
  QTextBlock block = firstVisibleBlock();
  int top = qRound(blockBoundingGeometry(block).translated(contentOffset()).top());
  int bottom = top + qRound(blockBoundingRect(block).height());
  while (block.isValid() && top <= event->rect().bottom()) {
    if (block.isVisible() && bottom >= event->rect().top()) {
      const int line = block.blockNumber() + firstLine_;
      p.setPen(marked_.count(line) ? QColor(0xb0, 0x50, 0x00) : palette().color(QPalette::PlaceholderText));
      p.drawText(0, top, gutter_->width() - 6, fontMetrics().height(), Qt::AlignRight, QString::number(line));
    }
    block = block.next();
    top = bottom;
    bottom = top + qRound(blockBoundingRect(block).height());
  }
}

void CodeView::mouseReleaseEvent(QMouseEvent* e) {
  QPlainTextEdit::mouseReleaseEvent(e);
  if (e->button() != Qt::LeftButton || textCursor().hasSelection()) return;
  QTextCursor c = cursorForPosition(e->position().toPoint());
  Q_EMIT lineClicked(c.blockNumber() + firstLine_);
}

}  // namespace kiln::viewers
