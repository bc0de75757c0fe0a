#include <gtest/gtest.h>

#include "viewers/comparison/run_table_model.h"
#include "viewers/selection/display_bounds.h"

using namespace kiln;
using namespace kiln::viewers;

TEST(DisplayBounds, AMegabyteLabelIsCutBeforeAnyPanelSeesIt) {
  auto s = std::make_shared<session::Session>();
  session::Run r;
  r.id = 0;
  r.mode = std::string(1 << 20, 'm');
  s->runs.push_back(r);
  session::Kernel k;
  k.name = "k0";
  k.source = std::string(1 << 20, 's');  // sources are shown whole, in a code view
  s->kernels.push_back(k);
  auto shown = bounded_for_display(s);
  ASSERT_NE(shown.get(), s.get());
  EXPECT_LT(shown->runs[0].mode.size(), kMaxLabelBytes + 40);
  EXPECT_NE(shown->runs[0].mode.find("(1048576 bytes)"), std::string::npos);
  EXPECT_EQ(shown->kernels[0].source.size(), 1u << 20);
  EXPECT_EQ(s->runs[0].mode.size(), 1u << 20) << "the session itself is not changed";
  RunTableModel model;
  model.setSession(shown);
  EXPECT_LT(model.data(model.index(0, RunTableModel::Mode)).toString().size(), 2100);
}

TEST(DisplayBounds, AnOrdinarySessionIsNotCopied) {
  auto s = std::make_shared<session::Session>();
  s->model.path = "m.pt";
  EXPECT_EQ(bounded_for_display(s).get(), s.get());
  EXPECT_EQ(bounded_for_display(nullptr), nullptr);
}

TEST(DisplayBounds, CutsBetweenUtf8Characters) {
  auto s = std::make_shared<session::Session>();
  s->origin = std::string(kMaxLabelBytes - 1, 'a') + "\xE2\x86\x92\xE2\x86\x92";  // a 3-byte character at the cut
  auto shown = bounded_for_display(s);
  EXPECT_EQ(shown->origin.substr(0, kMaxLabelBytes - 1), std::string(kMaxLabelBytes - 1, 'a'));
  EXPECT_EQ(shown->origin[kMaxLabelBytes - 1], ' ');
}
