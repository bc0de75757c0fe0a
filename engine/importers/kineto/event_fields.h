// Internal to the Kineto importer (kineto.cpp): what a profiler category says of its event, and the
// members of an event the reader looks at, found in one pass (EventFields over JsonValue or EventValue).
#pragma once

#include <string_view>

#include "engine/importers/common/json_doc.h"
#include "engine/importers/kineto/chrome_event.h"

namespace kiln::importers {
namespace kineto_detail {

// What a profiler category says of its event, told once per event (a million of them: the names
// are told apart by length first).
struct CategoryFacts {
  std::string_view category;  // the timeline's name for it ("" → the profiler's own)
  bool device = false;        // GPU work or a GPU annotation
  bool runtime = false;       // a CUDA runtime or driver call
  bool annotation = false;    // gpu_user_annotation
};

inline CategoryFacts category_facts(std::string_view cat) {
  switch (cat.size()) {
    case 0: return {"other"};
    case 6:
      if (cat == "kernel" || cat == "Kernel") return {"kernel", true};
      if (cat == "Memcpy") return {"memcpy", true};
      if (cat == "Memset") return {"memset", true};
      break;
    case 7:
      if (cat == "Runtime") return {"cuda_runtime", false, true};
      break;
    case 8:
      if (cat == "Operator") return {"cpu_op"};
      break;
    case 10:
      if (cat == "gpu_memcpy") return {"memcpy", true};
      if (cat == "gpu_memset") return {"memset", true};
      break;
    case 11:
      if (cat == "cuda_driver") return {"", false, true};
      break;
    case 12:
      if (cat == "cuda_runtime") return {"", false, true};
      break;
    case 15:
      if (cat == "python_function") return {"python"};
      break;
    case 19:
      if (cat == "gpu_user_annotation") return {"gpu_annotation", true, false, true};
      break;
    default: break;
  }
  return {};
}


template <typename F>
void for_each_member(const EventValue& v, F&& f) {
  v.each_member(f);
}
template <typename F>
void for_each_member(const JsonValue& v, F&& f) {
  v.each_field(f);
}

// The members of an event the reader looks at, found in one pass over the event and one over its
// args (each name compared once, not looked up member by member); the first of a repeated name, as
// operator[] gives it. Value: JsonValue, or EventValue for the events ChromeEvent reads.
template <typename Value>
struct EventFields {
  Value ph, cat, name, pid, tid, ts, dur, id, args;
  // args members
  Value device, stream, correlation, external_id, grid, block, registers, shared, allocated;

  explicit EventFields(const Value& e) {
    for_each_member(e, [this](std::string_view key, const Value& v) { take(member(key), v); });
    if (args.is_object())
      for_each_member(args, [this](std::string_view key, const Value& v) { take(arg(key), v); });
  }

 private:
  static void take(Value* slot, const Value& v) {
    if (slot && !slot->exists()) *slot = v;
  }
  Value* member(std::string_view k) {
    auto is = [&k](std::string_view name, Value& slot) { return k == name ? &slot : nullptr; };
    switch (k.size()) {
      case 2: return k[0] == 'p' ? is("ph", ph) : k[0] == 't' ? is("ts", ts) : is("id", id);
      case 3: return k[0] == 'c' ? is("cat", cat) : k[0] == 'p' ? is("pid", pid) : k[0] == 't' ? is("tid", tid) : is("dur", dur);
      case 4: return k[0] == 'n' ? is("name", name) : is("args", args);
      default: return nullptr;
    }
  }
  Value* arg(std::string_view k) {
    auto is = [&k](std::string_view name, Value& slot) { return k == name ? &slot : nullptr; };
    switch (k.size()) {
      case 4: return is("grid", grid);
      case 5: return is("block", block);
      case 6: return k[0] == 'd' ? is("device", device) : is("stream", stream);
      case 11: return k[0] == 'c' ? is("correlation", correlation) : is("External id", external_id);
      case 13: return is("shared memory", shared);
      case 15: return is("Total Allocated", allocated);
      case 20: return is("registers per thread", registers);
      default: return nullptr;
    }
  }
};

}  // namespace kineto_detail
}  // namespace kiln::importers
