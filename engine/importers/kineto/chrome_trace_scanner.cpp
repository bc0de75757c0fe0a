// A byte-level state machine: string/escape tracking, container depth, the current top-level key.
// Inside the events array, bytes go to the element buffer only while an element is open; outside
// it they go to the header. Strings are skipped in bulk (to the next quote or backslash).
#include "engine/importers/kineto/chrome_trace_scanner.h"

#include <new>

#include <algorithm>

namespace kiln::importers {

ChromeTraceScanner::ChromeTraceScanner(std::function<void(std::string_view)> on_event, size_t header_limit,
                                       size_t event_limit)
    : on_event_(std::move(on_event)), header_limit_(header_limit), event_limit_(event_limit) {}

void ChromeTraceScanner::element_append(const char* p, size_t n) {
  if (dropping_) return;
  if (element_.size() + n > event_limit_) {
    dropping_ = true;
  } else {
    try {
      element_.append(p, n);
      return;
    } catch (const std::bad_alloc&) {
      dropping_ = true;
    }
  }
  std::string().swap(element_);
}

void ChromeTraceScanner::header_append(std::string_view s) {
  if (header_truncated_) return;
  if (header_.size() + s.size() > header_limit_) {
    header_truncated_ = true;
    return;
  }
  header_.append(s.data(), s.size());
}

void ChromeTraceScanner::feed(std::string_view bytes) {
  const char* p = bytes.data();
  const size_t n = bytes.size();
  size_t cap_from = 0;  // where the open element's bytes start in this chunk
  size_t hdr_from = 0;  // where header bytes start in this chunk (outside the events array)
  bool in_events = events_depth_ >= 0;
  size_t i = 0;
  while (i < n) {
    char c = p[i];
    if (in_string_) {
      if (escape_) {
        escape_ = false;
        if (reading_key_) key_ += c;
        ++i;
        continue;
      }
      // Skip to the next quote or backslash.
      size_t j = i;
      while (j < n && p[j] != '"' && p[j] != '\\') ++j;
      if (reading_key_ && key_.size() < 64) key_.append(p + i, std::min<size_t>(j - i, 64));
      if (j == n) {
        i = n;
        break;
      }
      if (p[j] == '\\') escape_ = true;
      else {
        in_string_ = false;
        reading_key_ = false;
      }
      i = j + 1;
      continue;
    }
    switch (c) {
      case '"':
        in_string_ = true;
        if (depth_ == 1 && expect_key_) {
          reading_key_ = true;
          key_.clear();
        }
        break;
      case ':':
        if (depth_ == 1 && expect_key_) expect_key_ = false;
        break;
      case ',':
        if (depth_ == 1 && events_depth_ < 0) expect_key_ = true;
        break;
      case '{':
      case '[':
        if (!started_) {
          started_ = true;
          if (c == '[') {  // a bare array of events
            events_depth_ = 1;
            in_events = true;
            header_append("{\"traceEvents\": [");
            hdr_from = i + 1;
          } else {
            expect_key_ = true;
            hdr_from = i;  // the header starts with the document, whatever came before it in the chunk
          }
        } else if (in_events && depth_ == events_depth_ && c == '{' && !capturing_) {
          if (take_) {  // offered no more than event_limit bytes: a longer event is the scanner's to skip
            const size_t len = take_(std::string_view(p + i, std::min(n - i, event_limit_)));
            if (len > 0) {
              ++events_;
              i += len;
              continue;
            }
          }
          capturing_ = true;
          dropping_ = false;
          cap_from = i;
          element_.clear();
        } else if (!in_events && depth_ == 1 && c == '[' && !expect_key_ && key_ == "traceEvents") {
          header_append(std::string_view(p + hdr_from, i + 1 - hdr_from));
          events_depth_ = depth_ + 1;
          in_events = true;
        }
        ++depth_;
        break;
      case '}':
      case ']':
        --depth_;
        if (capturing_ && depth_ == events_depth_) {
          capturing_ = false;
          std::string_view text(p + cap_from, i + 1 - cap_from);
          if (!element_.empty() || dropping_) {
            element_append(text.data(), text.size());
            text = element_;
          } else if (text.size() > event_limit_) {
            dropping_ = true;  // the whole event was in this chunk, and is too long all the same
          }
          ++events_;
          if (dropping_) {
            ++oversized_;
            dropping_ = false;
            if (element_.capacity() > (size_t(64) << 20)) std::string().swap(element_);
          } else {
            on_event_(text);
          }
        } else if (in_events && c == ']' && depth_ == events_depth_ - 1) {
          in_events = false;
          events_depth_ = -1;
          hdr_from = i;
          if (depth_ == 0) {  // the bare array ends the document
            header_append("]}");
            hdr_from = i + 1;
          }
        }
        break;
      default:
        break;
    }
    ++i;
  }
  if (capturing_) element_append(p + cap_from, n - cap_from);
  if (!in_events && started_ && hdr_from < n) header_append(std::string_view(p + hdr_from, n - hdr_from));
}

void ChromeTraceScanner::continue_events_of(const ChromeTraceScanner& first) {
  started_ = true;
  depth_ = first.events_depth_;
  events_depth_ = first.events_depth_;
  key_ = first.key_;
  expect_key_ = false;
  reading_key_ = in_string_ = escape_ = capturing_ = dropping_ = false;
  header_.clear();
  header_truncated_ = false;
}

void ChromeTraceScanner::finish() {
  element_.clear();
  element_.shrink_to_fit();
}

}  // namespace kiln::importers
