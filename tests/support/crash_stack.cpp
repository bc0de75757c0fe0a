// A test process (or a child it forked) that dies of a fatal signal prints its stack to standard
// error first, so that a crash on a machine without a debugger still says where it happened. The
// signal is then raised again with its default action: the exit status is the same as without this.
// Sanitized builds keep the sanitizers' own handlers.
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace {

#if !defined(__SANITIZE_ADDRESS__) && !defined(KILN_SANITIZED)

void write_text(const char* s) {
  const ssize_t ignored = ::write(2, s, std::strlen(s));
  (void)ignored;
}

// Appends the decimal or hexadecimal digits of v to line (no allocation: this runs in a signal handler).
void append_number(char* line, unsigned long v, unsigned base) {
  char rev[24];
  int n = 0;
  do rev[n++] = "0123456789abcdef"[v % base]; while ((v /= base) > 0 && n < 23);
  char* end = line + std::strlen(line);
  if (base == 16) *end++ = '0', *end++ = 'x';
  for (int i = 0; i < n; ++i) *end++ = rev[n - 1 - i];
  *end = '\0';
}

// The line of /proc/self/maps holding address a (what was mapped there: a library, the heap, nothing).
void write_mapping_of(unsigned long a) {
  const int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  static char buf[1 << 16];
  char line[512];
  size_t used = 0;
  bool found = false;
  for (ssize_t got; !found && (got = ::read(fd, buf, sizeof buf)) > 0;) {
    for (ssize_t i = 0; i < got && !found; ++i) {
      if (buf[i] != '\n') {
        if (used + 1 < sizeof line) line[used++] = buf[i];
        continue;
      }
      line[used] = '\0';
      used = 0;
      char* dash = std::strchr(line, '-');
      if (!dash) continue;
      const unsigned long lo = std::strtoul(line, nullptr, 16), hi = std::strtoul(dash + 1, nullptr, 16);
      if (a >= lo && a < hi) {
        write_text("  mapped there: ");
        write_text(line);
        write_text("\n");
        found = true;
      }
    }
  }
  if (!found) write_text("  nothing is mapped there\n");
  ::close(fd);
}

void on_fatal_signal(int sig, siginfo_t* info, void* context) {
  char line[256];
  std::strcpy(line, "\n*** fatal signal ");
  const char* name = sigabbrev_np(sig);
  std::strcat(line, name ? name : "?");
  std::strcat(line, " in process ");
  append_number(line, static_cast<unsigned long>(::getpid()), 10);
  std::strcat(line, ", thread ");
  append_number(line, static_cast<unsigned long>(::gettid()), 10);
  std::strcat(line, ", address ");
  append_number(line, reinterpret_cast<unsigned long>(info ? info->si_addr : nullptr), 16);
  unsigned long pc = 0;
#if defined(__x86_64__)
  if (context) pc = static_cast<unsigned long>(static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RIP]);
  std::strcat(line, ", instruction at ");
  append_number(line, pc, 16);
#else
  (void)context;
#endif
  std::strcat(line, "; its stack:\n");
  write_text(line);
  if (pc) write_mapping_of(pc);
#if defined(__x86_64__)
  // A call through a null or stale pointer leaves nothing to unwind from: the words on top of the
  // stack then hold the caller's return address.
  // (Not when the fault is at the stack itself, an overflow: reading there would fault again.)
  const auto* sp = context ? reinterpret_cast<const unsigned long*>(static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RSP])
                           : nullptr;
  const auto fault = reinterpret_cast<unsigned long>(info ? info->si_addr : nullptr),
             top = reinterpret_cast<unsigned long>(sp);
  if (sp && (fault + (64ul << 10) < top || fault > top + (64ul << 10))) {
    for (int i = 0; i < 4; ++i) {
      char word[64];
      std::strcpy(word, "  stack word ");
      append_number(word, static_cast<unsigned long>(i), 10);
      std::strcat(word, ": ");
      append_number(word, sp[i], 16);
      std::strcat(word, "\n");
      write_text(word);
      write_mapping_of(sp[i]);
    }
  }
#endif
  // Signals other code handles (a handler that runs when a child ends, say).
  for (int other = 1; other < 32; ++other) {
    struct sigaction now {};
    if (other == sig || sigaction(other, nullptr, &now) != 0) continue;
    const auto handler = (now.sa_flags & SA_SIGINFO) ? reinterpret_cast<unsigned long>(now.sa_sigaction)
                                                     : reinterpret_cast<unsigned long>(now.sa_handler);
    if (handler == reinterpret_cast<unsigned long>(SIG_DFL) || handler == reinterpret_cast<unsigned long>(SIG_IGN) ||
        handler == reinterpret_cast<unsigned long>(&on_fatal_signal))
      continue;
    char word[96];
    std::strcpy(word, "  signal ");
    const char* other_name = sigabbrev_np(other);
    std::strcat(word, other_name ? other_name : "?");
    std::strcat(word, " is handled at ");
    append_number(word, handler, 16);
    std::strcat(word, "\n");
    write_text(word);
    write_mapping_of(handler);
  }
  void* frames[64];
  backtrace_symbols_fd(frames, backtrace(frames, 64), 2);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

struct CrashStack {
  CrashStack() {
    if (std::getenv("KILN_TEST_NO_CRASH_STACK")) return;
    void* warm[1];
    backtrace(warm, 1);  // loads libgcc's unwinder now, not inside the handler
    static char alternate[1 << 16];  // a stack overflow still gets its stack printed
    stack_t ss{};
    ss.ss_sp = alternate;
    ss.ss_size = sizeof alternate;
    sigaltstack(&ss, nullptr);
    struct sigaction sa {};
    sa.sa_sigaction = on_fatal_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE}) sigaction(sig, &sa, nullptr);
  }
} crash_stack;

#endif

}  // namespace
