// CodeHighlighter: syntax colours for the code Kiln shows — generated C++ and CUDA C++ kernels,
// imported Triton/Python kernels and the user's Python source. Keywords, types, numbers, strings,
// comments and preprocessor lines; nothing language-server-like.
#pragma once

#include <QRegularExpression>
#include <string>
#include <QSyntaxHighlighter>
#include <QTextCharFormat>
#include <vector>

namespace kiln::viewers {

enum class CodeLanguage { Cpp, Cuda, Python, Plain };

// "cpp" → Cpp, "cuda" → Cuda, "triton"/"python" → Python, anything else → Plain.
CodeLanguage code_language(const std::string& name);

class CodeHighlighter : public QSyntaxHighlighter {
  Q_OBJECT
 public:
  CodeHighlighter(QTextDocument* doc, CodeLanguage language);
  CodeLanguage language() const { return language_; }

 protected:
  void highlightBlock(const QString& text) override;

 private:
  struct Rule {
    QRegularExpression pattern;
    QTextCharFormat format;
  };
  CodeLanguage language_;
  std::vector<Rule> rules_;
  QTextCharFormat comment_;
  QTextCharFormat string_;
};

}  // namespace kiln::viewers
