#include "app/cli/terminal_output.h"

#include <iostream>
#include <memory>
#include <streambuf>
#include <string>

#include "engine/api/files.h"

namespace kiln::cli {

namespace {

// Unbuffered: every piece goes straight to the wrapped buffer, so raw writes keep their order.
class EscapingBuf : public std::streambuf {
 public:
  explicit EscapingBuf(std::streambuf* target) : target_(target) {}
  std::streambuf* target() const { return target_; }

 protected:
  int_type overflow(int_type ch) override {
    if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
    char c = traits_type::to_char_type(ch);
    return xsputn(&c, 1) == 1 ? ch : traits_type::eof();
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    scratch_.clear();
    escaper_.feed(s, static_cast<size_t>(n), scratch_);
    auto size = static_cast<std::streamsize>(scratch_.size());
    return target_->sputn(scratch_.data(), size) == size ? n : 0;
  }
  int sync() override { return target_->pubsync(); }

 private:
  std::streambuf* target_;
  ControlCharEscaper escaper_;
  std::string scratch_;
};

std::unique_ptr<EscapingBuf> g_out, g_err;

}  // namespace

TerminalOutput::TerminalOutput() {
  g_out = std::make_unique<EscapingBuf>(std::cout.rdbuf());
  g_err = std::make_unique<EscapingBuf>(std::cerr.rdbuf());
  std::cout.rdbuf(g_out.get());
  std::cerr.rdbuf(g_err.get());
}

TerminalOutput::~TerminalOutput() {
  std::cout.flush();
  std::cerr.flush();
  std::cout.rdbuf(g_out->target());
  std::cerr.rdbuf(g_err->target());
  g_out.reset();
  g_err.reset();
}

void carriage_return(std::ostream& stream) {
  stream.flush();
  auto* buf = dynamic_cast<EscapingBuf*>(stream.rdbuf());
  (buf ? buf->target() : stream.rdbuf())->sputc('\r');
}

}  // namespace kiln::cli
