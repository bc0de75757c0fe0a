// in_parts(n, f): f(begin, end) over [0, n) in parts that run at the same time, one per usable core
// (at most kMaxParts; the last part on this thread): the per-event passes over the timeline of a large
// import (each event's work independent of the others'), a program's CUDA kernels written apart
// (codegen::emit_cuda). Below min_n, or on one core, f(0, n) on this thread. parts > 0 asks for that many
// parts whatever the cores (tests, a count the caller was given).
//
//   pre:  f(a, b) and f(b, c) may run at the same time (they touch disjoint events, or only read
//         what both share).
//   post: f ran over all of [0, n) once; an exception from a part is rethrown here (the earliest
//         part's when several threw), after every part ended.
//
// in_parts_map(n, f): as in_parts, where f(begin, end) returns what its part found: the results in
//   part order (timeline order), one per part (one in all when [0, n) was not split).
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/base/cores.h"

namespace kiln {

template <typename F>
void in_parts(size_t n, F&& f, size_t min_n = 100000, unsigned parts = 0) {
  constexpr unsigned kMaxParts = 16;
  if (parts == 0) parts = std::min(usable_cores(), kMaxParts);
  if (n < min_n || parts < 2 || n < parts) {
    f(size_t(0), n);
    return;
  }
  std::vector<std::exception_ptr> failed(parts);
  std::vector<std::thread> threads;
  threads.reserve(parts - 1);
  auto bound = [&](unsigned k) { return n / parts * k; };
  auto run = [&](unsigned k) {
    try {
      f(bound(k), k + 1 < parts ? bound(k + 1) : n);
    } catch (...) {
      failed[k] = std::current_exception();
    }
  };
  unsigned k = 0;
  for (; k + 1 < parts; ++k) {
    try {
      threads.emplace_back(run, k);
    } catch (...) {  // no thread (or memory for one) to be had: the parts left run here
      break;
    }
  }
  for (; k < parts; ++k) run(k);
  for (auto& t : threads) t.join();
  for (const auto& e : failed)
    if (e) std::rethrow_exception(e);
}

template <typename F>
auto in_parts_map(size_t n, F&& f, size_t min_n = 100000, unsigned parts = 0) {
  using Result = std::decay_t<decltype(f(size_t(0), size_t(0)))>;
  std::mutex m;
  std::vector<std::pair<size_t, Result>> found;  // (the part's first index, its result)
  in_parts(
      n,
      [&](size_t begin, size_t end) {
        Result r = f(begin, end);
        std::lock_guard<std::mutex> lock(m);
        found.emplace_back(begin, std::move(r));
      },
      min_n, parts);
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Result> out;
  out.reserve(found.size());
  for (auto& [begin, r] : found) out.push_back(std::move(r));
  return out;
}

}  // namespace kiln
