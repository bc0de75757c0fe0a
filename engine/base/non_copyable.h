// A base for types that own something that must not be duplicated or moved out from under its
// users (a guard, a parser's buffers, a tracker's hooks): copying and moving are deleted.
#pragma once

namespace kiln {

class NonCopyable {
 public:
  NonCopyable(const NonCopyable&) = delete;
  NonCopyable& operator=(const NonCopyable&) = delete;
  NonCopyable(NonCopyable&&) = delete;
  NonCopyable& operator=(NonCopyable&&) = delete;

 protected:
  NonCopyable() = default;
  ~NonCopyable() = default;
};

}  // namespace kiln
