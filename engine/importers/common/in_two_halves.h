// in_two_halves(n, f): f(begin, end) over [0, n) in two halves, the first on a second thread while
// this one does the second, for the per-event passes over the timeline of a large import (each
// event's work independent of the others'). Below min_n, or on one core, f(0, n) on this thread.
//
//   pre:  f(a, b) and f(b, c) may run at the same time (they touch disjoint events, or only read
//         what both share).
//   post: f ran over all of [0, n); an exception from either half is rethrown here (the first
//         half's when both threw), after both halves ended.
#pragma once

#include <cstddef>
#include <exception>
#include <thread>

namespace kiln::importers {

template <typename F>
void in_two_halves(size_t n, F&& f, size_t min_n = 100000) {
  if (n < min_n || std::thread::hardware_concurrency() < 2) {
    f(size_t(0), n);
    return;
  }
  const size_t half = n / 2;
  std::exception_ptr first_failed;
  std::thread first([&] {
    try {
      f(size_t(0), half);
    } catch (...) {
      first_failed = std::current_exception();
    }
  });
  std::exception_ptr second_failed;
  try {
    f(half, n);
  } catch (...) {
    second_failed = std::current_exception();
  }
  first.join();
  if (first_failed) std::rethrow_exception(first_failed);
  if (second_failed) std::rethrow_exception(second_failed);
}

}  // namespace kiln::importers
