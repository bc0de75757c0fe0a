// Block texts of the timeline: any bytes round-trip, the planned blocks keep their bounds, and text
// the writer cannot have written is refused with a reason.
#include "engine/session/timeline_blocks.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

using namespace kiln;  // NOLINT

namespace {

session::TimelineEvent random_event(std::mt19937_64& rng) {
  auto text = [&](size_t max) {
    std::string s(rng() % (max + 1), '\0');
    for (auto& c : s) c = static_cast<char>(rng() % 4 ? 0x20 + rng() % 95 : rng() % 256);  // every byte now and then
    return s;
  };
  session::TimelineEvent e;
  e.lane = text(12);
  e.name = text(80);
  e.category = text(8);
  e.start_ns = static_cast<int64_t>(rng());
  e.dur_ns = static_cast<int64_t>(rng() % 1000000);
  e.compile_id = text(6);
  e.kernel = text(20);
  e.correlation = rng() % 3 ? static_cast<int64_t>(rng() % 100000) : -1;
  e.args_json = text(200);
  return e;
}

std::vector<session::TimelineEvent> decode(const std::string& text, int run,
                                           const std::function<std::string(int64_t)>& parts = nullptr) {
  std::vector<session::TimelineEvent> out;
  session::decode_block(text, run, parts ? parts : [](int64_t) -> std::string { return ""; },
                        [&](session::TimelineEvent&& e) { out.push_back(std::move(e)); });
  return out;
}

}  // namespace

TEST(TimelineBlocks, AnyBytesRoundTrip) {
  std::mt19937_64 rng(std::random_device{}());
  for (int round = 0; round < 200; ++round) {
    std::vector<session::TimelineEvent> events(rng() % 40);
    for (auto& e : events) e = random_event(rng);
    if (!events.empty()) events[0].start_ns = INT64_MIN;  // the extremes of every integer
    if (events.size() > 1) events[1].dur_ns = INT64_MAX;
    session::BlockText text;
    session::append_block_text(text, events.data(), events.data() + events.size(), {});
    auto back = decode(std::string(text.view()), 7);
    ASSERT_EQ(back.size(), events.size());
    for (size_t i = 0; i < events.size(); ++i) {
      const auto &a = events[i], &b = back[i];
      ASSERT_TRUE(b.run == 7 && a.lane == b.lane && a.name == b.name && a.category == b.category &&
                  a.start_ns == b.start_ns && a.dur_ns == b.dur_ns && a.compile_id == b.compile_id &&
                  a.kernel == b.kernel && a.correlation == b.correlation && a.args_json == b.args_json)
          << "round " << round << " event " << i;
    }
  }
}

TEST(TimelineBlocks, SplitArgsAreJoinedWithTheirPart) {
  session::TimelineEvent e;
  e.args_json = "{\"k\":LONGVALUE,\"t\":1}";
  session::ArgsSplits splits{{&e, {5, 14, 42}}};
  session::BlockText block;
  session::append_block_text(block, &e, &e + 1, splits);
  const std::string text(block.view());
  EXPECT_EQ(text.find("LONGVALUE"), std::string::npos) << text;
  auto back = decode(text, 0, [](int64_t id) { return id == 42 ? std::string("LONGVALUE") : std::string("?"); });
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].args_json, e.args_json);
}

TEST(TimelineBlocks, EscapesOtherWritersUseAreRead) {
  // White space between elements, \/ and \u escapes beyond \u00XX (a surrogate pair too).
  auto back = decode(" [ [ \"a\\/b\" , \"\\u00e9\\u20ac\\ud83d\\ude00\" ,\"c\", -5 , 0,\"\",\"\",-1,\"{}\" ] ] ", 1);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].lane, "a/b");
  EXPECT_EQ(back[0].name, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
  EXPECT_EQ(back[0].start_ns, -5);
  EXPECT_TRUE(decode("[]", 0).empty());
}

TEST(TimelineBlocks, TextTheWriterCannotHaveWrittenIsRefused) {
  for (const char* bad : {"", "[", "[[", "{}", "[[]]", "[[\"a\",\"b\",\"c\",1,2,\"\",\"\",-1]]",
                          "[[\"a\",\"b\",\"c\",1.5,2,\"\",\"\",-1,\"\"]]", "[[\"a\",\"b\",\"c\",1,2,\"\",\"\",-1,\"\"]] x",
                          "[[\"a\",\"b\",\"c\",1,2,\"\",\"\",-1,\"\",5]]", "[[\"a\\q\",\"b\",\"c\",1,2,\"\",\"\",-1,\"\"]]",
                          "[[\"a\\u12\",\"b\",\"c\",1,2,\"\",\"\",-1,\"\"]]", "[[\"\\udc00\",\"b\",\"c\",1,2,\"\",\"\",-1,\"\"]]",
                          "[[\"a\nb\",\"b\",\"c\",1,2,\"\",\"\",-1,\"\"]]", "[[\"a\",\"b\",\"c\",9223372036854775808,2,\"\",\"\",-1,\"\"]]",
                          "[[\"a\",\"b\",\"c\",-9223372036854775809,2,\"\",\"\",-1,\"\"]]", "[[\"a\",\"b\",\"c\",-,2,\"\",\"\",-1,\"\"]]",
                          "[[\"a\",\"b\",\"c\",1,2,\"\",\"\",-1,\"\"],]"}) {
    EXPECT_THROW(decode(bad, 0), session::BlockError) << bad;
  }
  auto edge = decode("[[\"a\",\"b\",\"c\",-9223372036854775808,9223372036854775807,\"\",\"\",-1,\"\"]]", 0);
  EXPECT_EQ(edge[0].start_ns, INT64_MIN);
  EXPECT_EQ(edge[0].dur_ns, INT64_MAX);
}

TEST(TimelineBlocks, PlannedBlocksHoldOneRunAndStayWithinTheirBounds) {
  std::vector<session::TimelineEvent> events(3000);
  for (size_t i = 0; i < events.size(); ++i) {
    events[i].run = i < 1200 ? 0 : i < 1201 ? 1 : 2;
    events[i].category = i % 10 ? "cpu_op" : i % 20 ? "memory" : "memory peak";
    if (i >= 2000) events[i].args_json.assign(100000, 'x');  // about two per block
  }
  auto blocks = session::plan_blocks(events.data(), events.data() + events.size(), -1);
  size_t next = 0;
  int64_t memory = 0;
  for (const auto& b : blocks) {
    ASSERT_EQ(b.begin, next);
    ASSERT_GT(b.end, b.begin);
    EXPECT_LE(b.end - b.begin, session::kBlockEvents);
    size_t bytes = 0;
    for (size_t i = b.begin; i < b.end; ++i) {
      EXPECT_EQ(events[i].run, b.run) << i;
      if (i > b.begin) bytes += events[i].args_json.size();
    }
    EXPECT_LE(bytes, session::kBlockBytes);
    memory += b.memory;
    next = b.end;
  }
  EXPECT_EQ(next, events.size());
  EXPECT_EQ(memory, 300);
  // 0..1199 in blocks of 512, the single event of run 1, 1201..1999, then about two per block.
  EXPECT_EQ(blocks[0].end, 512u);
  EXPECT_EQ(blocks[3].begin, 1200u);
  EXPECT_EQ(blocks[3].end, 1201u);
  auto one_run = session::plan_blocks(events.data(), events.data() + 1300, 9);
  EXPECT_EQ(one_run.size(), 3u);  // 512 + 512 + 276, all of run 9
  for (const auto& b : one_run) EXPECT_EQ(b.run, 9);
  EXPECT_TRUE(session::plan_blocks(events.data(), events.data(), -1).empty());
}

// An event of more than a MiB of text is sized exactly, not by the six-fold bound: it round-trips
// however many of its bytes need escapes.
TEST(TimelineBlocks, LargeEventsRoundTrip) {
  for (char fill : {'x', '"', '\n'}) {
    session::TimelineEvent e;
    e.name = "big";
    e.args_json = "{\"a\":\"" + std::string(3 << 20, fill) + "\"}";
    session::BlockText text;
    session::append_block_text(text, &e, &e + 1, {});
    auto back = decode(std::string(text.view()), 0);
    ASSERT_EQ(back.size(), 1u);
    EXPECT_EQ(back[0].args_json, e.args_json) << int(fill);
  }
}
