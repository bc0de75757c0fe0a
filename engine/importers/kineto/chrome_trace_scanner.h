// ChromeTraceScanner: finds the events of a Chrome trace (PyTorch profiler / Kineto JSON) in a
// stream of bytes without building the document: each element of the top-level "traceEvents"
// array (or of a top-level array) is handed over as its own JSON text; everything else of the
// document is kept as a small header text with "traceEvents": [] for the caller to parse.
//
// feed(bytes) any number of times, then finish().
//   post: on_event(text) ran once per object element, in order; text is valid during the call.
//         header() is the document minus the events (capped at header_limit bytes; past the cap
//         header_truncated() is true). complete() is false when the input ended inside the
//         document (a cut file): events before the cut were still delivered. An event longer than
//         event_limit bytes, or than the memory left can hold, is skipped and counted
//         (oversized_events()): memory stays bounded by one chunk plus event_limit.
//
// set_whole_event_reader(take): each event that starts in a chunk is first offered to take(rest),
// rest running from its '{' to the chunk's end (event_limit bytes at most); take returns the
// event's length when it read the whole event itself (then on_event does not run for it and the
// scanner skips its bytes unread), or 0 to leave it to the scanner and on_event. Events read so
// are counted as events too.
//
// Two scanners may read one file in two parts (kineto.cpp): continue_events_of(first) makes a
// scanner that starts at an element of the events array `first` is inside, and its header() is
// then the text after that array. The split was right when `first`, fed every byte before the
// second one's start, is between_events() there: the second scanner saw what the first would have.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace kiln::importers {

class ChromeTraceScanner {
 public:
  explicit ChromeTraceScanner(std::function<void(std::string_view)> on_event, size_t header_limit = 64 << 20,
                              size_t event_limit = size_t(1) << 30);
  void set_whole_event_reader(std::function<size_t(std::string_view)> take) { take_ = std::move(take); }
  void feed(std::string_view bytes);
  void finish();
  const std::string& header() const { return header_; }
  bool header_truncated() const { return header_truncated_; }
  bool complete() const { return started_ && depth_ == 0 && !in_string_; }
  bool started() const { return started_; }
  int64_t events() const { return events_; }
  int64_t oversized_events() const { return oversized_; }
  bool in_events() const { return events_depth_ >= 0; }
  bool between_events() const { return events_depth_ >= 0 && depth_ == events_depth_ && !capturing_ && !in_string_; }
  // pre: first.in_events(). This scanner continues inside the same events array, before an element.
  void continue_events_of(const ChromeTraceScanner& first);

 private:
  void header_append(std::string_view s);
  void element_append(const char* p, size_t n);  // or drop the element when it cannot be kept
  std::function<void(std::string_view)> on_event_;
  std::function<size_t(std::string_view)> take_;
  size_t header_limit_;
  std::string header_;
  bool header_truncated_ = false;
  std::string element_;  // the element being captured, across chunks
  std::string key_;      // the top-level key being read
  int depth_ = 0;
  int events_depth_ = -1;  // depth inside the events array; -1 when not in it
  bool started_ = false;
  bool in_string_ = false;
  bool escape_ = false;
  bool reading_key_ = false;
  bool expect_key_ = false;
  bool capturing_ = false;
  bool dropping_ = false;  // the element being captured is too large: skipped at its end
  size_t event_limit_;
  int64_t events_ = 0;
  int64_t oversized_ = 0;
};

}  // namespace kiln::importers
