// Reading a Kineto trace: ChromeTraceScanner hands over each event's JSON text, this file turns it
// into a TimelineEvent (+ its link ids), the header into Environment/rank, and kineto_links.cpp
// does the rest.
#include "engine/importers/kineto/kineto.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "engine/base/cores.h"
#include "engine/base/error.h"
#include "engine/base/in_parts.h"
#include "engine/importers/common/byte_source.h"
#include "engine/importers/kineto/chrome_event.h"
#include "engine/importers/kineto/chrome_trace_scanner.h"
#include "engine/importers/kineto/event_fields.h"
#include "engine/importers/kineto/flat_event.h"
#include "engine/importers/common/json_doc.h"
#include "engine/importers/kineto/kineto_trace.h"

namespace kiln::importers {

namespace {

using kineto_detail::category_facts;
using kineto_detail::CategoryFacts;
using kineto_detail::EventFields;

template <typename Value>
std::string id_text(const Value& v) {
  if (v.is_number()) return std::to_string(v.i64());
  if (v.is_string()) return std::string(v.str());
  return "?";
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string cuda_version_text(int64_t v) {  // 13000 → "13.0"
  if (v <= 0) return "";
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string now_iso8601() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// An event's args text into `out` with `room` bytes to spare, in one allocation where the text
// lies in the event already.
template <typename Value>  // EventValue or FlatValue
void take_args(std::string& out, const Value& args, size_t room) {
  const std::string_view text = args.dumped();
  out.reserve(text.size() + room);
  out.append(text);
}
void take_args(std::string& out, const JsonValue& args, size_t room) {
  out = args.dump();
  if (room) out.reserve(out.size() + room);
}


class KinetoReader {
 public:
  explicit KinetoReader(ImportTally& tally) : tally_(tally) {}

  // One event: read by ChromeEvent already (root >= 0 in doc), or its text parsed here.
  void on_event(std::string_view text, const ChromeEvent& doc, int32_t root) {
    ++events_;
    if (root >= 0) return handle(doc.value(root));
    JsonValue e;
    if (!parser_.parse(text, e) || !e.is_object()) {
      tally_.note("corrupt JSON event", std::string(text.substr(0, 120)));
      return;
    }
    handle(e);
  }

  // One event FlatEventReader read.
  void on_flat(const FlatEvent& e) {
    ++events_;
    dispatch(e);
  }

  // Value: JsonValue, or EventValue for the events ChromeEvent reads (the same answers).
  template <typename Value>
  void handle(const Value& event) {
    dispatch(EventFields<Value>(event));
  }

  // Fields: EventFields<JsonValue or EventValue>, or FlatEvent (the same members).
  template <typename Fields>
  void dispatch(const Fields& e) {
    std::string_view ph = e.ph.str();
    if (ph == "X" || ph == "B") return add_span(e, ph == "B");
    if (ph == "E") return close_span(e);
    if (ph == "i" || ph == "I" || ph == "R") return add_instant(e);
    if (ph == "s" || ph == "f" || ph == "t") return add_flow(e, ph == "s");
    if (ph == "M") return;  // process/thread names: lanes are named from ids
    tally_.note("unsupported event phase '" + std::string(ph) + "'", std::string(e.name.str()));
  }

  void finish(const std::string& header_text, bool header_truncated) {
    JsonValue h;
    int64_t base = 0;
    if (!header_truncated && parser_.parse(header_text, h) && h.is_object()) {
      base = h["baseTimeNanoseconds"].i64(0);
      JsonValue devices = h["deviceProperties"];
      devices.each_element([&](const JsonValue& d) {
        if (t_.session.env.gpu.empty()) t_.session.env.gpu = std::string(d["name"].str());
      });
      t_.session.env.cuda = cuda_version_text(h["cuda_runtime_version"].i64(0));
      t_.session.env.driver = cuda_version_text(h["cuda_driver_version"].i64(0));
      JsonValue dist = h["distributedInfo"];
      if (dist["rank"].is_number()) t_.session.rank = static_cast<int>(dist["rank"].i64());
    } else if (header_truncated) {
      tally_.note("trace header too large; environment not read");
    } else {
      tally_.note("trace header unreadable; environment and time base not read", header_text.substr(0, 120));
    }
    for (const auto& [key, stack] : open_)
      for (size_t idx : stack) tally_.note("unfinished span", t_.session.timeline[idx].name);
    if (base != 0) {
      auto& tl = t_.session.timeline;
      in_parts(tl.size(), [&](size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) tl[i].start_ns += base;
      });
      for (auto& f : t_.flows) f.ts_ns += base;
      for (auto& m : t_.memory) m.ts_ns += base;
    }
    for (auto& [id, r] : regions_) {
      session::CompiledRegion reg;
      reg.compile_id = "[" + id + "]";
      reg.region = std::isdigit(static_cast<unsigned char>(id[0])) ? std::atoi(id.c_str()) : -1;
      reg.hits = r.calls;
      reg.metrics["runtime calls"] = std::to_string(r.calls);
      reg.metrics["from"] = "profiler trace";  // join.h replaces it by the compiled region of that id
      t_.session.regions.push_back(std::move(reg));
    }
  }

  // Room for the events of `bytes` of trace: Kineto writes 250-400 bytes per event, so the densest
  // saves moving a huge timeline (the room left over is address space only, never touched).
  void reserve_for(int64_t bytes) {
    try {
      t_.session.timeline.reserve(static_cast<size_t>(bytes / 250));
      t_.ids.reserve(static_cast<size_t>(bytes / 250));
    } catch (const std::exception&) {  // only room saved ahead: without it the vectors grow as they fill
    }
  }

  // This reader reads a part of the file after another reader's part: ends it cannot match wait
  // for append().
  void set_later_part() { later_part_ = true; }

  // Room for about `more` events after this reader's own, made while the later parts are still being
  // read (this thread would only wait for them), within the room already reserved: append() then moves
  // their events into place in parts at once, instead of one thread growing the timeline after them.
  // drop_room() gives back what is left (before anything else reads or adds events).
  void make_room(size_t more) {
    auto& tl = t_.session.timeline;
    used_ = tl.size();
    room_ = true;
    more = std::min(more, tl.capacity() - used_);
    try {
      tl.resize(used_ + more);
      t_.ids.resize(used_ + more);
    } catch (const std::exception&) {  // only time saved ahead: append() grows the timeline instead
      drop_room();
    }
  }
  void drop_room() {
    if (!room_) return;
    t_.session.timeline.resize(used_);  // the room's events are empty: nothing to free
    t_.ids.resize(used_);
    room_ = false;
  }

  // Takes what `later` read from the part of the file after this reader's, as if this reader had
  // read it (notes in the order one reader would have made them).
  void append(KinetoReader&& later) {
    auto& tl = t_.session.timeline;
    auto& theirs = later.t_.session.timeline;
    const size_t base = room_ ? used_ : tl.size();
    size_t moved = 0;
    if (room_) {  // what fits the room moves into place in parts at once
      moved = std::min(theirs.size(), tl.size() - used_);
      in_parts(moved, [&](size_t begin, size_t end) {
        std::move(theirs.begin() + static_cast<std::ptrdiff_t>(begin), theirs.begin() + static_cast<std::ptrdiff_t>(end),
                  tl.begin() + static_cast<std::ptrdiff_t>(used_ + begin));
        std::copy(later.t_.ids.begin() + static_cast<std::ptrdiff_t>(begin),
                  later.t_.ids.begin() + static_cast<std::ptrdiff_t>(end),
                  t_.ids.begin() + static_cast<std::ptrdiff_t>(used_ + begin));
      }, 50000);
      used_ += moved;
      if (moved < theirs.size()) drop_room();  // the rest is appended
    }
    if (moved < theirs.size()) {
      tl.reserve(tl.size() + theirs.size() - moved);
      std::move(theirs.begin() + static_cast<std::ptrdiff_t>(moved), theirs.end(), std::back_inserter(tl));
      t_.ids.insert(t_.ids.end(), later.t_.ids.begin() + static_cast<std::ptrdiff_t>(moved), later.t_.ids.end());
    }
    t_.flows.reserve(t_.flows.size() + later.t_.flows.size());
    std::move(later.t_.flows.begin(), later.t_.flows.end(), std::back_inserter(t_.flows));
    t_.memory.insert(t_.memory.end(), later.t_.memory.begin(), later.t_.memory.end());
    const std::vector<size_t> note_at = tally_.append(later.tally_);
    for (const auto& end : later.pending_ends_) {  // in file order, below the later part's own spans
      auto& stack = open_[end.key];
      if (stack.empty()) tally_.note_at(note_at[end.notes_before], "unmatched end event", end.name);
      else close(stack, end.ns);
    }
    for (auto& [key, stack] : later.open_) {
      auto& mine = open_[key];
      for (size_t idx : stack) mine.push_back(idx + base);
    }
    for (auto& k : later.t_.session.kernels)
      if (kernels_seen_.insert(k.name).second) t_.session.kernels.push_back(std::move(k));
    for (const auto& [id, r] : later.regions_) regions_[id].calls += r.calls;
    if (pid_ < 0) pid_ = later.pid_;
    events_ += later.events_;
  }

  KinetoTrace& trace() { return t_; }
  int64_t pid() const { return pid_; }
  int64_t events() const { return events_; }

 private:
  template <typename Fields>
  const std::string& lane_for(const Fields& e, bool device) {
    std::decay_t<decltype(e.pid)> a, b;
    if (device) {
      a = e.device;
      b = e.stream;
    }
    if (!a.exists()) a = e.pid;
    if (!b.exists()) b = e.tid;
    if (a.is_number() && b.is_number()) {  // the common case: numeric ids, looked up without building text
      auto key = std::make_tuple(device, a.i64(), b.i64());
      auto it = numeric_lanes_.find(key);
      if (it != numeric_lanes_.end()) return *it->second;
    }
    std::string text = device ? "cuda:" + id_text(a) + "/stream " + id_text(b) : "host:" + id_text(b);
    const std::string& lane = *lanes_.insert(std::move(text)).first;
    if (a.is_number() && b.is_number()) numeric_lanes_[std::make_tuple(device, a.i64(), b.i64())] = &lane;
    return lane;
  }

  template <typename Fields>
  void fill(session::TimelineEvent& ev, EventIds& ids, const Fields& e) {
    std::string_view cat = e.cat.str();
    std::string_view name = e.name.str();
    const CategoryFacts facts = category_facts(cat);
    ids.device = facts.device;
    ids.runtime = facts.runtime;
    ids.busy = ids.device && !facts.annotation;
    const auto& args = e.args;
    ev.lane = lane_for(e, ids.device);
    ev.name.assign(name);
    ev.category.assign(facts.category.empty() ? cat : facts.category);
    ev.start_ns = us_to_ns(e.ts.f64());
    // Room for what linking adds to GPU work ("launch" and "cpu_op": kineto_links.cpp), written in place.
    if (args.is_object() && args.size() > 0) take_args(ev.args_json, args, ids.device ? 64 : 0);
    ev.correlation = e.correlation.is_number() ? e.correlation.i64() : -1;
    ids.external_id = e.external_id.is_number() ? e.external_id.i64() : -1;
    if (!ids.device && pid_ < 0 && (cat == "cpu_op" || cat == "user_annotation") && e.pid.is_number())
      pid_ = e.pid.i64();

    // torch.compile markers (each begins with one of these letters).
    const char first = name.empty() ? '\0' : name[0];
    if (first != 'T' && first != '#' && first != 'P' && first != 't') return;
    if (starts_with(name, "Torch-Compiled Region: ")) {
      std::string id(name.substr(23));
      ev.category = "region";
      ev.compile_id = "[" + id + "]";
      ++regions_[id].calls;
    } else if (name == "TorchDynamo Cache Lookup") {
      ev.category = "guard";
    } else if (starts_with(name, "## Call CompiledFxGraph")) {
      ev.category = "compiled_graph";
    } else if (starts_with(name, "ProfilerStep#")) {
      ev.category = "step";
    }
    if (starts_with(name, "triton_")) {
      ev.kernel = ev.name;
      if (ids.device && !facts.annotation && kernels_seen_.insert(ev.name).second) {
        session::Kernel k;
        k.name = ev.name;
        k.language = "triton";
        if (e.grid.is_array() || e.block.is_array())
          k.launch_config = "grid " + e.grid.dump() + " block " + e.block.dump();
        k.registers = static_cast<int>(e.registers.i64(0));
        k.shared_bytes = static_cast<int>(e.shared.i64(0));
        t_.session.kernels.push_back(std::move(k));
      }
    }
  }

  template <typename Fields>
  void add_span(const Fields& e, bool begin) {
    if (begin) open_[stack_key(e)].push_back(t_.session.timeline.size());
    auto& ev = t_.session.timeline.emplace_back();  // filled where it stays
    EventIds& ids = t_.ids.emplace_back();
    fill(ev, ids, e);
    ev.dur_ns = begin ? 0 : std::max<int64_t>(0, us_to_ns(e.dur.f64()));
  }

  template <typename Fields>
  void close_span(const Fields& e) {
    std::string key = stack_key(e);
    auto& stack = open_[key];
    const int64_t end_ns = us_to_ns(e.ts.f64());
    if (stack.empty()) {
      // A later part's end may close a span an earlier part began (append() matches it).
      if (later_part_) pending_ends_.push_back({std::move(key), end_ns, std::string(e.name.str()), tally_.size()});
      else tally_.note("unmatched end event", std::string(e.name.str()));
      return;
    }
    close(stack, end_ns);
  }

  void close(std::vector<size_t>& stack, int64_t end_ns) {
    auto& ev = t_.session.timeline[stack.back()];
    ev.dur_ns = std::max<int64_t>(0, end_ns - ev.start_ns);
    stack.pop_back();
  }

  template <typename Fields>
  void add_instant(const Fields& e) {
    if (e.name.str() == "[memory]") {
      MemorySample m;
      m.ts_ns = us_to_ns(e.ts.f64());
      m.allocated = e.allocated.i64(-1);
      if (m.allocated >= 0) t_.memory.push_back(m);
      return;
    }
    auto& ev = t_.session.timeline.emplace_back();
    EventIds& ids = t_.ids.emplace_back();
    fill(ev, ids, e);
  }

  template <typename Fields>
  void add_flow(const Fields& e, bool start) {
    if (e.cat.str() != "ac2g" && e.name.str() != "ac2g") return;  // other flows carry no launch link
    FlowPoint f;
    f.id = e.id.i64(-1);
    f.ts_ns = us_to_ns(e.ts.f64());
    // The start sits on the CPU thread, the end on the GPU stream (pid = device, tid = stream).
    f.lane = start ? "host:" + id_text(e.tid) : "cuda:" + id_text(e.pid) + "/stream " + id_text(e.tid);
    f.start = start;
    t_.flows.push_back(std::move(f));
  }

  template <typename Fields>
  std::string stack_key(const Fields& e) { return id_text(e.pid) + "/" + id_text(e.tid); }

  struct RegionCalls {
    int64_t calls = 0;
  };
  struct PendingEnd {
    std::string key;
    int64_t ns = 0;
    std::string name;
    size_t notes_before = 0;  // kinds of note the part had made before this end
  };

  ImportTally& tally_;
  JsonParser parser_;
  KinetoTrace t_;
  std::unordered_map<std::string, std::vector<size_t>> open_;
  std::set<std::string> lanes_;
  std::map<std::tuple<bool, int64_t, int64_t>, const std::string*> numeric_lanes_;
  std::set<std::string> kernels_seen_;
  std::map<std::string, RegionCalls> regions_;
  int64_t pid_ = -1;
  int64_t events_ = 0;
  bool later_part_ = false;
  std::vector<PendingEnd> pending_ends_;
  bool room_ = false;  // make_room: timeline[used_, size()) is room, not events
  size_t used_ = 0;
};

}  // namespace

namespace {

constexpr size_t kChunk = 4 << 20;
constexpr size_t kFirstReads = 64 << 10;

// Feeds one scanner: each event read by FlatEventReader when it can (the members the importer
// looks at, no tree built), else by ChromeEvent, else by JsonParser, and handed to the reader. An
// event whole in the chunk is read where it lies, in one pass (the scanner skips it); one cut by a
// chunk's end, or outside ChromeEvent's subset, is gathered by the scanner first.
struct EventSink {
  explicit EventSink(KinetoReader& reader)
      : reader(reader), scanner([this](std::string_view text) {
          if (size_t length = flat.read(text, &event)) {
            size_t rest = length;
            while (rest < text.size() && (text[rest] == ' ' || text[rest] == '\n' || text[rest] == '\r' || text[rest] == '\t'))
              ++rest;
            if (rest == text.size()) return this->reader.on_flat(event);
          }
          int32_t root = doc.read(text);
          this->reader.on_event(text, doc, root);
          doc.clear();
        }) {
    scanner.set_whole_event_reader([this](std::string_view rest) -> size_t {
      if (size_t length = flat.read(rest, &event)) {
        this->reader.on_flat(event);
        return length;
      }
      size_t length = 0;
      int32_t root = doc.read_prefix(rest, &length);
      if (root < 0) return 0;
      this->reader.on_event(rest.substr(0, length), doc, root);
      doc.clear();
      return length;
    });
  }
  KinetoReader& reader;
  FlatEventReader flat;  // most events; the rest ChromeEvent reads, or JsonParser
  FlatEvent event;
  ChromeEvent doc;
  ChromeTraceScanner scanner;
};

// Where a further thread may start: the '{' of an element that follows "}" "," (white space
// around) in the 1 MiB after `from`, or -1. Only a guess: the part before checks it (see
// ChromeTraceScanner::between_events).
int64_t split_candidate(const ByteSource& source, int64_t from, int64_t size) {
  std::vector<char> buf(1 << 20);
  size_t n = source.read_at(static_cast<uint64_t>(from), buf.data(), buf.size());
  auto space = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  for (size_t i = 0; i < n; ++i) {
    if (buf[i] != '}') continue;
    size_t j = i + 1;
    while (j < n && space(buf[j])) ++j;
    if (j >= n || buf[j] != ',') continue;
    ++j;
    while (j < n && space(buf[j])) ++j;
    if (j < n && buf[j] == '{') {
      int64_t at = from + static_cast<int64_t>(j);
      return at < size ? at : -1;
    }
  }
  return -1;
}

}  // namespace

session::Session import_kineto_trace(const std::string& path, KinetoFacts* facts, int64_t split_from_bytes,
                                     int max_parts) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) throw Error(path + ": is a directory, not a trace file");
  ByteSource source(path);
  ImportTally tally;
  KinetoReader reader(tally);
  if (!source.gzipped()) reader.reserve_for(st.st_size);
  EventSink sink(reader);
  ChromeTraceScanner& scanner = sink.scanner;
  std::vector<char> chunk(kChunk);
  size_t n;
  uint64_t fed = 0;
  // What the scanners saw, whether one thread read the file or several.
  std::string header;
  bool header_truncated = false, cut = false;
  int64_t oversized = 0;  // besides the first scanner's own
  uint64_t bytes = 0;     // read by the other threads
  int parts = 1;

  // A large plain file: once the first thread is inside the events array, each further thread reads
  // a part of the rest from an element boundary guessed there, and each part checks that it ends
  // between two events exactly where the next one begins (the first thread checks the first
  // guess). Any wrong guess (or any failure of another thread) costs time only: the first thread
  // then reads on alone.
  const int64_t size = source.plain_size();
  const int cores = static_cast<int>(usable_cores());
  int want = max_parts > 0 ? max_parts : std::min(cores, kKinetoMaxParts);
  if (split_from_bytes > 0 && size >= split_from_bytes)
    want = static_cast<int>(std::min<int64_t>(want, std::max<int64_t>(2, size / std::max<int64_t>(1, split_from_bytes / 2))));
  if (split_from_bytes > 0 && size >= split_from_bytes && want >= 2) {
    // Small reads until the events begin: what is read here is parsed before any other thread starts.
    const uint64_t first_end = static_cast<uint64_t>(size / want);
    while (!scanner.in_events() && fed < first_end &&
           (n = source.read(chunk.data(), std::min<uint64_t>(kFirstReads, first_end - fed))) > 0) {
      scanner.feed(std::string_view(chunk.data(), n));
      fed += n;
    }
    std::vector<int64_t> starts;  // where the other parts begin, in file order
    if (scanner.in_events()) {
      int64_t after = static_cast<int64_t>(fed);
      for (int k = 1; k < want; ++k) {
        const int64_t at = split_candidate(source, std::max<int64_t>(size * k / want, after), size);
        if (at <= after) break;
        starts.push_back(at);
        after = at + 1;
      }
    }
    if (!starts.empty()) {
      struct Part {
        ImportTally tally;
        KinetoReader reader{tally};
        EventSink sink{reader};
        uint64_t begin = 0, end = 0, read = 0;
        bool ends_between_events = false;
        std::exception_ptr failed;
      };
      std::vector<std::unique_ptr<Part>> later;
      for (size_t i = 0; i < starts.size(); ++i) {
        auto part = std::make_unique<Part>();
        part->begin = static_cast<uint64_t>(starts[i]);
        part->end = i + 1 < starts.size() ? static_cast<uint64_t>(starts[i + 1]) : static_cast<uint64_t>(size);
        part->reader.set_later_part();
        part->reader.reserve_for(static_cast<int64_t>(part->end - part->begin));
        part->sink.scanner.continue_events_of(scanner);
        later.push_back(std::move(part));
      }
      std::atomic<bool> cancel{false};
      std::vector<std::thread> threads;
      threads.reserve(later.size());
      auto read_part = [&](size_t i) {
        Part& part = *later[i];
        const bool last = i + 1 == later.size();
        try {
          std::vector<char> buf(kChunk);
          uint64_t at = part.begin;
          size_t got;
          // The last part reads to the end of the file (which may have grown or shrunk); the others
          // to where the next one begins.
          while (!cancel.load(std::memory_order_relaxed) &&
                 (got = source.read_at(at, buf.data(),
                                       last ? buf.size() : std::min<uint64_t>(buf.size(), part.end - at))) > 0) {
            part.sink.scanner.feed(std::string_view(buf.data(), got));
            at += got;
            if (!last && at == part.end) break;
          }
          part.ends_between_events = !last && at == part.end && part.sink.scanner.between_events();
          part.sink.scanner.finish();
          part.read = at - part.begin;
        } catch (...) {
          part.failed = std::current_exception();
        }
      };
      bool started = true;
      for (size_t i = 0; i < later.size() && started; ++i) {
        try {
          threads.emplace_back(read_part, i);
        } catch (...) {  // no thread (or memory for one) to be had: the first thread reads on alone
          started = false;
          cancel = true;
        }
      }
      try {
        while (fed < later[0]->begin &&
               (n = source.read(chunk.data(), std::min<uint64_t>(chunk.size(), later[0]->begin - fed))) > 0) {
          scanner.feed(std::string_view(chunk.data(), n));
          fed += n;
        }
      } catch (...) {
        cancel = true;
        for (auto& t : threads) t.join();
        throw;
      }
      bool right = started && fed == later[0]->begin && scanner.between_events();
      if (!right) cancel = true;
      else if (fed > 0)  // the later parts' events, guessed from this part's, and a little more
        reader.make_room(static_cast<size_t>(double(reader.trace().session.timeline.size()) *
                                             double(static_cast<uint64_t>(size) - fed) / double(fed) * 1.02) + 1024);
      for (auto& t : threads) t.join();
      for (size_t i = 0; right && i < later.size(); ++i) {
        const Part& part = *later[i];
        const bool last = i + 1 == later.size();
        right = !part.failed && (last ? part.read == static_cast<uint64_t>(size) - part.begin
                                      : part.read == part.end - part.begin && part.ends_between_events);
      }
      if (right) {
        header = scanner.header();
        header_truncated = scanner.header_truncated();
        cut = !later.back()->sink.scanner.complete();
        parts = 1 + static_cast<int>(later.size());
        for (auto& part : later) {
          reader.append(std::move(part->reader));
          header += part->sink.scanner.header();
          header_truncated = header_truncated || part->sink.scanner.header_truncated();
          oversized += part->sink.scanner.oversized_events();
          bytes += part->read;
          part.reset();  // its events are moved: their storage goes now, not after the last part's
        }
      }
      reader.drop_room();  // what is left of it; all of it when this thread now reads on alone
    }
  }
  if (parts == 1) {  // one thread reads (on)
    while ((n = source.read(chunk.data(), chunk.size())) > 0) scanner.feed(std::string_view(chunk.data(), n));
    if (!scanner.started()) throw Error(path + ": not a Chrome trace (no JSON object or array found)");
    header = scanner.header();
    header_truncated = scanner.header_truncated();
    cut = !scanner.complete() || source.truncated();
  }
  scanner.finish();
  oversized += scanner.oversized_events();
  if (oversized > 0) tally.note("oversized event skipped", "an event longer than the memory left or 1 GiB", oversized);
  if (cut) tally.note("trace cut short", "the file ends inside the JSON document; events before the cut were kept");
  reader.finish(header, header_truncated);
  KinetoTrace& t = reader.trace();
  link_kineto_trace(t, tally);
  t.session.origin = "profiler trace import";
  t.session.env.created_at = now_iso8601();
  t.session.model.path = path;
  t.session.import_notes = tally.notes(path);
  if (facts) {
    facts->pid = reader.pid();
    facts->events = reader.events();
    facts->bytes = source.bytes_read() + bytes;
    facts->parts = parts;
  }
  return std::move(t.session);
}

}  // namespace kiln::importers
