#include "viewers/common/code_highlighter.h"

#include <QStringList>

namespace kiln::viewers {

CodeLanguage code_language(const std::string& name) {
  if (name == "cpp" || name == "c++") return CodeLanguage::Cpp;
  if (name == "cuda") return CodeLanguage::Cuda;
  if (name == "triton" || name == "python") return CodeLanguage::Python;
  return CodeLanguage::Plain;
}

namespace {

QTextCharFormat char_format(const QColor& colour, bool bold = false, bool italic = false) {
  QTextCharFormat f;
  f.setForeground(colour);
  if (bold) f.setFontWeight(QFont::Bold);
  f.setFontItalic(italic);
  return f;
}

QString word_pattern(const QStringList& words) { return "\\b(" + words.join('|') + ")\\b"; }

}  // namespace

CodeHighlighter::CodeHighlighter(QTextDocument* doc, CodeLanguage language)
    : QSyntaxHighlighter(doc), language_(language) {
  comment_ = char_format(QColor(0x6a, 0x73, 0x7d), false, true);
  string_ = char_format(QColor(0x0a, 0x7d, 0x32));
  const auto keyword = char_format(QColor(0x1f, 0x4f, 0xb0), true);
  const auto type = char_format(QColor(0x8a, 0x2b, 0xa8));
  const auto number = char_format(QColor(0xb3, 0x5c, 0x00));
  const auto special = char_format(QColor(0xb0, 0x1f, 0x4f), true);
  if (language_ == CodeLanguage::Plain) return;
  if (language_ == CodeLanguage::Python) {
    rules_.push_back({QRegularExpression(word_pattern({"def", "return", "if", "elif", "else", "for", "while", "in",
                                                       "import", "from", "as", "class", "with", "not", "and", "or",
                                                       "is", "None", "True", "False", "lambda", "pass", "yield",
                                                       "try", "except", "raise", "assert", "del", "self"})),
                      keyword});
    rules_.push_back({QRegularExpression(R"(^\s*@[\w.]+)"), special});
    rules_.push_back({QRegularExpression(R"(\btl\.\w+)"), type});
  } else {
    rules_.push_back({QRegularExpression(word_pattern(
                          {"for", "if", "else", "while", "return", "const", "static", "extern", "auto", "static_cast",
                           "reinterpret_cast", "struct", "namespace", "inline", "template", "typename", "do",
                           "break", "continue", "sizeof", "constexpr", "__restrict__"})),
                      keyword});
    rules_.push_back({QRegularExpression(word_pattern({"void", "float", "double", "int", "int64_t", "int32_t",
                                                       "uint64_t", "bool", "char", "half", "size_t", "unsigned"})),
                      type});
    if (language_ == CodeLanguage::Cuda)
      rules_.push_back({QRegularExpression(word_pattern({"__global__", "__device__", "__shared__", "__syncthreads",
                                                         "__shfl_down_sync", "threadIdx", "blockIdx", "blockDim",
                                                         "gridDim", "warpSize", "__launch_bounds__"})),
                        special});
    rules_.push_back({QRegularExpression(R"(^\s*#\s*\w+)"), special});
  }
  rules_.push_back({QRegularExpression(R"(\b\d+(\.\d+)?([eE][+-]?\d+)?(f|LL|L|u)?\b)"), number});
}

void CodeHighlighter::highlightBlock(const QString& text) {
  if (language_ == CodeLanguage::Plain) return;
  for (const auto& r : rules_) {
    auto it = r.pattern.globalMatch(text);
    while (it.hasNext()) {
      auto m = it.next();
      setFormat(int(m.capturedStart()), int(m.capturedLength()), r.format);
    }
  }
  // Strings and comments last, scanning left to right so that "//" inside a string stays a string.
  const bool python = language_ == CodeLanguage::Python;
  int i = 0;
  const int n = int(text.size());
  if (!python && previousBlockState() == 1) {
    int end = int(text.indexOf("*/"));
    if (end < 0) {
      setFormat(0, n, comment_);
      setCurrentBlockState(1);
      return;
    }
    setFormat(0, end + 2, comment_);
    i = end + 2;
  }
  setCurrentBlockState(0);
  while (i < n) {
    QChar c = text[i];
    if (c == '"' || c == '\'') {
      int j = i + 1;
      while (j < n && text[j] != c) j += text[j] == '\\' ? 2 : 1;
      setFormat(i, std::min(j + 1, n) - i, string_);
      i = j + 1;
      continue;
    }
    if (python && c == '#') {
      setFormat(i, n - i, comment_);
      return;
    }
    if (!python && c == '/' && i + 1 < n && text[i + 1] == '/') {
      setFormat(i, n - i, comment_);
      return;
    }
    if (!python && c == '/' && i + 1 < n && text[i + 1] == '*') {
      int end = int(text.indexOf("*/", i + 2));
      if (end < 0) {
        setFormat(i, n - i, comment_);
        setCurrentBlockState(1);
        return;
      }
      setFormat(i, end + 2 - i, comment_);
      i = end + 2;
      continue;
    }
    ++i;
  }
}

}  // namespace kiln::viewers
