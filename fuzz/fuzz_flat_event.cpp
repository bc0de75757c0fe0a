// libFuzzer target: FlatEventReader against ChromeEvent on arbitrary bytes. Whatever the flat reader
// reads, ChromeEvent must read too, to the same length, and every member the importer looks at must
// answer alike (kinds, strings, numbers, sizes and dumps byte for byte).
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>

#include "engine/importers/kineto/chrome_event.h"
#include "engine/importers/kineto/flat_event.h"

namespace {

using kiln::importers::EventValue;
using kiln::importers::FlatValue;

void same(const FlatValue& a, const EventValue& b) {
  if (a.exists() != b.exists() || a.is_null() != b.is_null() || a.is_object() != b.is_object() ||
      a.is_array() != b.is_array() || a.is_string() != b.is_string() || a.is_number() != b.is_number() ||
      a.is_bool() != b.is_bool() || a.str("fb") != b.str("fb") || a.i64(-7) != b.i64(-7) || a.size() != b.size() ||
      a.dump() != b.dump() || a.dumped() != b.dumped())
    std::abort();
  const double x = a.f64(-7), y = b.f64(-7);
  if (!(x == y || (std::isnan(x) && std::isnan(y))) || (x == y && std::signbit(x) != std::signbit(y))) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  kiln::importers::FlatEventReader flat;
  kiln::importers::FlatEvent e;
  const size_t length = flat.read(text, &e);
  if (length == 0) return 0;
  kiln::importers::ChromeEvent doc;
  size_t doc_length = 0;
  const int32_t root = doc.read_prefix(text, &doc_length);
  if (root < 0 || doc_length != length) std::abort();
  const EventValue r = doc.value(root);
  const EventValue args = r["args"].is_object() ? r["args"] : EventValue();
  for (const auto& m : kiln::importers::kFlatMembers) same(e.*m.value, (m.in_args ? args : r)[m.name]);
  return 0;
}
