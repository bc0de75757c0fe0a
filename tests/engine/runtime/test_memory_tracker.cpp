// The memory tracker books every allocation of a traced window to its owner and keeps what was live
// at the window's peak; reused blocks move to their new owner.
#include "engine/runtime/memory_tracker.h"

#include <gtest/gtest.h>

#include <torch/torch.h>

using namespace kiln;

namespace {

int64_t owned(const runtime::PeakView& v, const std::string& owner) {
  for (const auto& l : v.live)
    if (l.owner == owner) return l.bytes;
  return 0;
}

}  // namespace

TEST(MemoryTracker, ThePeakIsBookedToTheOutermostOwnerAndSumsToThePeak) {
  runtime::MemoryTracker tracker;
  at::Tensor kept = torch::empty({1024}, torch::kFloat);  // live when the window opens: 4 KiB
  tracker.keep_samples(true);
  const std::string a = "x_1", b = "x_2";
  at::Tensor first, second;
  {
    runtime::MemoryOwner owner("buffer", &a);
    runtime::MemoryOwner inner("aten::empty");  // inner owners do not take the booking
    first = torch::empty({2048}, torch::kFloat);  // 8 KiB
  }
  {
    runtime::MemoryOwner owner("extern", &b);
    second = torch::empty({4096}, torch::kFloat);  // 16 KiB
  }
  second = at::Tensor();  // freed: the peak stays where it was
  at::Tensor third = torch::empty({256}, torch::kFloat);
  tracker.keep_samples(false);

  auto peak = tracker.peak_live("cpu");
  EXPECT_EQ(peak.bytes, tracker.peak_bytes("cpu"));
  EXPECT_EQ(peak.bytes, (1024 + 2048 + 4096) * 4);
  EXPECT_EQ(owned(peak, "buffer x_1"), 2048 * 4);
  EXPECT_EQ(owned(peak, "extern x_2"), 4096 * 4);
  // Allocated before the window but after the tracker started: still booked, to "outside any op".
  EXPECT_EQ(owned(peak, "outside any op (inputs, the model's outputs kept between calls)"), 1024 * 4);
  int64_t sum = 0;
  for (const auto& l : peak.live) sum += l.bytes;
  EXPECT_EQ(sum, peak.bytes);
  ASSERT_FALSE(peak.live.empty());
  EXPECT_EQ(peak.live.front().owner, "extern x_2") << "largest first";
  EXPECT_FALSE(tracker.take_samples().empty());
}

TEST(MemoryTracker, AReusedBlockBelongsToItsNewOwner) {
  runtime::MemoryTracker tracker;
  tracker.keep_samples(true);
  const std::string a = "relu", b = "add";
  at::Tensor t;
  {
    runtime::MemoryOwner owner("buffer", &a);
    t = torch::empty({512}, torch::kFloat);
  }
  runtime::relabel_memory(t.storage().data(), "buffer", &b);  // the slot handed on to `add`
  at::Tensor grow = torch::empty({16}, torch::kFloat);         // a new peak after the hand-over
  tracker.keep_samples(false);
  auto peak = tracker.peak_live("cpu");
  EXPECT_EQ(owned(peak, "buffer add"), 512 * 4);
  EXPECT_EQ(owned(peak, "buffer relu"), 0);
}

TEST(MemoryTracker, MemoryFromBeforeTheTrackerIsNotCounted) {
  at::Tensor weights = torch::empty({2048}, torch::kFloat);  // the model's, made before the run
  runtime::MemoryTracker tracker;
  tracker.keep_samples(true);
  weights = at::Tensor();  // freed during the run: a negative entry, the live bytes below zero
  const std::string a = "relu";
  at::Tensor t;
  {
    runtime::MemoryOwner owner("buffer", &a);
    t = torch::empty({4096}, torch::kFloat);
  }
  tracker.keep_samples(false);
  auto peak = tracker.peak_live("cpu");
  EXPECT_EQ(owned(peak, "buffer relu"), 4096 * 4);
  // LibTorch's CPU allocator reports no size for a block it allocated before the tracker, so its free
  // is not seen here; the CUDA caching allocator reports it, and it shows as one negative entry.
  EXPECT_LE(owned(peak, runtime::kFreedFromBefore), 0);
  int64_t sum = 0;
  for (const auto& l : peak.live) sum += l.bytes;
  EXPECT_EQ(sum, peak.bytes);
}

TEST(MemoryTracker, NoWindowNoOwners) {
  runtime::MemoryTracker tracker;
  at::Tensor t = torch::empty({100}, torch::kFloat);
  EXPECT_EQ(tracker.peak_live("cpu").bytes, 0);
  EXPECT_TRUE(tracker.peak_live("cpu").live.empty());
  EXPECT_EQ(tracker.peak_bytes("cpu"), 400);
  runtime::relabel_memory(t.storage().data(), "buffer", nullptr);  // no window: nothing happens
}

TEST(MemoryTracker, SamplesThinPerDeviceKeepingThePeakAndOwnersAreCapped) {
  runtime::MemoryTracker tracker;
  tracker.keep_samples(true);
  std::vector<std::string> names;
  for (int i = 0; i < 60; ++i) names.push_back("n" + std::to_string(i));
  std::vector<at::Tensor> held;
  for (int i = 0; i < 60; ++i) {
    runtime::MemoryOwner owner("buffer", &names[static_cast<size_t>(i)]);
    held.push_back(torch::empty({16 * (i + 1)}, torch::kFloat));  // owners of different sizes
  }
  for (int i = 0; i < 200; ++i) at::Tensor t = torch::empty({8}, torch::kFloat);  // up and down
  tracker.keep_samples(false);
  auto peak = tracker.peak_live("cpu", 10);
  ASSERT_EQ(peak.live.size(), 10u);
  // 60 buffers and the temporaries' owner were live at the peak: 9 kept, 52 summed.
  EXPECT_EQ(peak.live.back().owner, "52 other owners");
  int64_t sum = 0;
  for (const auto& l : peak.live) sum += l.bytes;
  EXPECT_EQ(sum, peak.bytes) << "the capped entries still sum to the peak";

  auto samples = tracker.take_samples(40);
  EXPECT_LE(samples.size(), 42u);
  EXPECT_GE(samples.size(), 20u);
  int64_t highest = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    highest = std::max(highest, samples[i].live);
    if (i) EXPECT_LE(samples[i - 1].at, samples[i].at) << "time order";
  }
  EXPECT_EQ(highest, tracker.peak_bytes("cpu")) << "thinning keeps the highest sample";
  EXPECT_TRUE(tracker.take_samples().empty()) << "taken";
}

// A region has an owner per computation (hundreds on a real model): each keeps its own booking, and an owner
// whose name changed behind the same pointer (a name reused after its region went) is booked under its new name.
TEST(MemoryTracker, ManyOwnersEachKeepTheirBytesAndAChangedNameIsNotMistaken) {
  runtime::MemoryTracker tracker;
  tracker.keep_samples(true);
  std::vector<std::string> names;
  for (int i = 0; i < 300; ++i) names.push_back("comp_" + std::to_string(i));
  std::vector<at::Tensor> held;
  for (int round = 0; round < 2; ++round)
    for (size_t i = 0; i < names.size(); ++i) {
      runtime::MemoryOwner owner("buffer", &names[i]);
      held.push_back(torch::empty({static_cast<int64_t>(16 * (i + 1))}, torch::kFloat));
    }
  std::string reused = "old_name";
  {
    runtime::MemoryOwner owner("buffer", &reused);
    held.push_back(torch::empty({64}, torch::kFloat));
  }
  reused = "new_name";
  {
    runtime::MemoryOwner owner("buffer", &reused);
    held.push_back(torch::empty({32}, torch::kFloat));
  }
  tracker.keep_samples(false);
  auto peak = tracker.peak_live("cpu");
  EXPECT_EQ(owned(peak, "buffer comp_0"), 2 * 16 * 4);
  EXPECT_EQ(owned(peak, "buffer comp_299"), 2 * 16 * 300 * 4);
  EXPECT_EQ(owned(peak, "buffer old_name"), 64 * 4);
  EXPECT_EQ(owned(peak, "buffer new_name"), 32 * 4);
  int64_t sum = 0;
  for (const auto& l : peak.live) sum += l.bytes;
  EXPECT_EQ(sum, peak.bytes);
}
