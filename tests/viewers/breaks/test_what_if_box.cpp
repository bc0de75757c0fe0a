// The breaks panel's "What if…" button: when it can run (a model Kiln can load), and what it shows for
// a break of breaky (the rewrite, the check against eager and the measured time) or why not.
#include <QPushButton>
#include <gtest/gtest.h>

#include "engine/api/kiln.h"
#include "tests/support/paths.h"
#include "viewers/breaks/what_if_box.h"

using namespace kiln;
using kiln::viewers::WhatIfBox;

namespace {

session::Session breaky_session(std::vector<session::GraphBreakRecord>& records) {
  session::Session s;
  s.model.path = test::example("breaky.pt");
  s.model.inputs = {"4x64"};
  auto e = api::explain(s.model.path, {{parse_input_spec("4x64")}});
  for (const auto& b : e.breaks) {
    session::GraphBreakRecord r;
    r.info = b;
    records.push_back(r);
  }
  return s;
}

}  // namespace

TEST(WhatIfBox, UnavailableWithoutALoadableModel) {
  session::Session s;
  session::GraphBreakRecord b;
  EXPECT_EQ(viewers::what_if_request(nullptr, nullptr).unavailable, "Select a graph break.");
  EXPECT_NE(viewers::what_if_request(&s, &b).unavailable.find("imported torch.compile run"), std::string::npos);
  s.model.path = "/nonexistent/model.pt";
  EXPECT_NE(viewers::what_if_request(&s, &b).unavailable.find("is not on this machine"), std::string::npos);
  WhatIfBox box;
  box.setBreak(&s, &b);
  EXPECT_FALSE(box.button()->isEnabled());
  EXPECT_TRUE(box.resultText().contains("is not on this machine"));
}

TEST(WhatIfBox, ShowsTheMeasuredRewriteOfTheSelectedBreak) {
  std::vector<session::GraphBreakRecord> records;
  auto s = breaky_session(records);
  ASSERT_EQ(records.size(), 3u);
  auto req = viewers::what_if_request(&s, &records[0]);
  EXPECT_TRUE(req.unavailable.empty());
  ASSERT_EQ(req.calls.size(), 1u);
  WhatIfBox box;
  box.setBreak(&s, &records[0]);
  ASSERT_TRUE(box.button()->isEnabled());
  box.button()->click();
  box.waitForResult();
  QString text = box.resultText();
  EXPECT_TRUE(text.contains("What if KB001 prim::Print")) << text.toStdString();
  EXPECT_TRUE(text.contains("Rewrite: drop the print")) << text.toStdString();
  EXPECT_TRUE(text.contains("outputs match eager (bit for bit")) << text.toStdString();
  EXPECT_TRUE(text.contains("ms per call")) << text.toStdString();
  EXPECT_TRUE(box.button()->isEnabled());
}
