// The crash report every test process prints (crash_stack.cpp): a child that calls through a null
// function pointer dies of SIGSEGV as before, and its standard error names the signal, the
// instruction at 0, and the caller's return address in this binary (the top stack word).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <string>

#if !defined(__SANITIZE_ADDRESS__) && !defined(KILN_SANITIZED)
namespace {
using Fn = void (*)();
Fn volatile null_function = nullptr;
}  // namespace
#endif

TEST(CrashStack, ANullCallSaysWhereItCameFromAndStillDiesOfTheSignal) {
#if defined(__SANITIZE_ADDRESS__) || defined(KILN_SANITIZED)
  GTEST_SKIP() << "the sanitizers' own handlers report crashes in sanitized builds";
#else
  if (std::getenv("KILN_TEST_NO_CRASH_STACK")) GTEST_SKIP() << "crash reports turned off";
  int err[2];
  ASSERT_EQ(pipe(err), 0);
  const pid_t child = fork();
  if (child == 0) {
    dup2(err[1], 2);
    close(err[0]);
    null_function();
    _exit(0);
  }
  close(err[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(err[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  close(err[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << text;
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
  EXPECT_NE(text.find("*** fatal signal SEGV in process " + std::to_string(child)), std::string::npos) << text;
  EXPECT_NE(text.find("instruction at 0x0;"), std::string::npos) << text;
  const size_t word = text.find("stack word 0: ");
  ASSERT_NE(word, std::string::npos) << text;
  const size_t mapped = text.find("mapped there: ", word);
  ASSERT_NE(mapped, std::string::npos) << text;
  EXPECT_NE(text.find("kiln_ir_tests", mapped), std::string::npos) << "the caller is in this binary:\n" << text;
#endif
}
