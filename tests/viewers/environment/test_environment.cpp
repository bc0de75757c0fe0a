#include <QTableView>
#include <gtest/gtest.h>

#include "engine/api/kiln.h"
#include "tests/viewers/app/view_fixtures.h"
#include "viewers/environment/environment_model.h"
#include "viewers/environment/environment_panel.h"

using namespace kiln;
using namespace kiln::viewers;

TEST(EnvironmentModel, ShowsWhatRecordedTheSessionAndWhatShowsIt) {
  test::CheckedModel<EnvironmentModel> model;
  EXPECT_EQ(model.rowCount(), 1);
  EXPECT_EQ(model.value("Shown by Kiln").toStdString(), api::version_description());
  auto s = std::make_shared<session::Session>();
  s->env.kiln_version = "0.1.0 (git 0123456789ab)";
  s->env.libtorch_version = "2.11.0";
  s->env.gpu = "NVIDIA H100 (sm_90)";
  s->env.os = std::string(1 << 20, 'x');  // a megabyte from a hostile session is cut, not shown whole
  model.setSession(s);
  EXPECT_EQ(model.value("Recorded by Kiln"), "0.1.0 (git 0123456789ab)");
  EXPECT_EQ(model.value("GPU"), "NVIDIA H100 (sm_90)");
  EXPECT_EQ(model.value("Driver"), "-");
  EXPECT_LT(model.value("OS").size(), 500);
  EXPECT_TRUE(model.value("OS").endsWith("(1048576 bytes)"));
}

TEST(EnvironmentPanel, FollowsTheSessionInTheSelection) {
  SelectionContext ctx;
  EnvironmentPanel panel(&ctx);
  auto s = std::make_shared<session::Session>();
  s->env.kiln_version = "9.9.9 (git feedface)";
  ctx.setSession(s, "x.kiln");
  EXPECT_EQ(panel.model()->value("Recorded by Kiln"), "9.9.9 (git feedface)");
  EXPECT_EQ(panel.table()->model()->rowCount(), panel.model()->rowCount());
}
