#include <QTableView>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>

#include "tests/support/paths.h"
#include "tests/viewers/app/session_fixtures.h"
#include "tests/viewers/app/view_fixtures.h"
#include "viewers/breaks/break_source.h"
#include "viewers/breaks/break_table_model.h"
#include "viewers/breaks/breaks_panel.h"
#include "viewers/common/code_view.h"
#include "viewers/common/source_file.h"

using namespace kiln;
using namespace kiln::viewers;

TEST(BreakTableModel, GroupsRepeatedSitesAndPassesTheModelTester) {
  test::CheckedModel<BreakTableModel> model(test::crafted_session());
  ASSERT_EQ(model.rowCount(), 2);  // two print records at one site, one item()
  EXPECT_EQ(model.data(model.index(0, BreakTableModel::Id)).toString(), "KB001");
  EXPECT_EQ(model.data(model.index(0, BreakTableModel::Hits)).toInt(), 5);
  EXPECT_EQ(model.data(model.index(0, BreakTableModel::Sites)).toInt(), 2);
  EXPECT_EQ(model.data(model.index(0, BreakTableModel::Location)).toString(), "sample_models.py:42");
  EXPECT_EQ(model.data(model.index(1, BreakTableModel::Hint)).toString(), "keep the value as a 0-d tensor");
  model.setSession(nullptr);
  EXPECT_EQ(model.rowCount(), 0);
}

TEST(BreakTableModel, ImportedTraceHasThreeDistinctBreaks) {
  test::CheckedModel<BreakTableModel> model(test::imported_breaky_trace());
  ASSERT_EQ(model.rowCount(), 3);
  // Ranked by cost: with no profiler trace joined, by the compile time of the resume functions each
  // break made Dynamo compile (line 47's cost the most in this log).
  EXPECT_EQ(model.data(model.index(0, BreakTableModel::Location)).toString(), "sample_models.py:47");
  // Each group lists the compile ids whose restart it caused ([0/0] and [0/1] for the print).
  int print_row = -1;
  for (int r = 0; r < model.rowCount(); ++r)
    if (model.data(model.index(r, BreakTableModel::Location)).toString() == "sample_models.py:42") print_row = r;
  ASSERT_GE(print_row, 0);
  EXPECT_EQ(model.data(model.index(print_row, BreakTableModel::CompileIds)).toString(), "[0/0] [0/1]");
}

TEST(BreakCompileId, RecordIdThenEndedRegionThenResumedRegion) {
  auto s = test::crafted_session();
  EXPECT_EQ(break_compile_id(*s, s->breaks[0]), "[0/0]");
  session::GraphBreakRecord b = s->breaks[0];
  b.info.ends_region = -1;
  EXPECT_EQ(break_compile_id(*s, b), "[1/0]");
  b.compile_id = "[7/0]";
  EXPECT_EQ(break_compile_id(*s, b), "[7/0]");
  b.compile_id.clear();
  b.info.resumes_region = 9;
  EXPECT_EQ(break_compile_id(*s, b), "");
}

TEST(SourceFile, FindsTheFileNextToTheModelOrInItsSrcFolder) {
  const std::string examples = test::example("");
  EXPECT_EQ(find_source_file("/nowhere/sample_models.py", {"/also/nowhere", examples}),
            std::filesystem::path(examples) / "src" / "sample_models.py");
  EXPECT_EQ(find_source_file("/nowhere/missing.py", {examples}), "");
  EXPECT_EQ(find_source_file("", {examples}), "");
}

TEST(SourceFile, ParsesStackFramesAndReadsExcerpts) {
  auto f = parse_stack_frame("/home/u/sample_models.py:42 in forward");
  EXPECT_EQ(f.file, "/home/u/sample_models.py");
  EXPECT_EQ(f.line, 42);
  EXPECT_EQ(parse_stack_frame("<frozen runpy>:x in run").line, 0);
  EXPECT_EQ(parse_stack_frame("no line here").line, 0);

  std::string dir = test::temp_dir();
  std::ofstream(dir + "/m.py") << "a\nb\nc\nd\ne\n";
  auto ex = read_source_excerpt(dir + "/m.py", 2, 1);
  EXPECT_EQ(ex.first_line, 1);
  EXPECT_EQ(ex.text, "a\nb\nc");
  ex = read_source_excerpt(dir + "/m.py", 5, 2);
  EXPECT_EQ(ex.first_line, 3);
  EXPECT_EQ(ex.text, "c\nd\ne");
  EXPECT_TRUE(read_source_excerpt(dir + "/m.py", 40, 2).text.empty());
  EXPECT_TRUE(read_source_excerpt(dir + "/none.py", 1, 2).text.empty());
}

TEST(BreakSource, ReadsTheUsersLinesFromTheModelsSrcFolder) {
  auto s = test::crafted_session();  // model path: resources/examples/breaky.pt
  auto src = locate_break_source(*s, s->breaks[0], "", {}, 3);
  ASSERT_FALSE(src.found_file.empty()) << src.note;
  EXPECT_EQ(src.line, 42);
  EXPECT_EQ(src.excerpt.first_line, 39);
  EXPECT_NE(src.excerpt.text.find("print(\"mid\")"), std::string::npos);
  EXPECT_TRUE(src.note.empty());
}

TEST(BreakSource, FallsBackToTheRecordedLineAndSaysWhy) {
  auto s = std::make_shared<session::Session>(*test::crafted_session());
  s->model.path = "/nowhere/breaky.pt";
  auto src = locate_break_source(*s, s->breaks[2], "/nowhere/x.kiln");
  EXPECT_TRUE(src.found_file.empty());
  EXPECT_EQ(src.excerpt.text, "scale = float(y.mean().item())");
  EXPECT_EQ(src.excerpt.first_line, 47);
  EXPECT_NE(src.note.find("sample_models.py was not found"), std::string::npos);
  // An extra folder finds it.
  src = locate_break_source(*s, s->breaks[2], "", {test::example("src")});
  EXPECT_FALSE(src.found_file.empty());
}

TEST(BreakSource, UsesTheInnermostUserStackFrameWithoutALocation) {
  session::Session s;
  session::GraphBreakRecord b;
  b.user_stack = {"<string>:1 in <module>", test::example("src/sample_models.py") + ":47 in forward"};
  auto src = locate_break_source(s, b, "");
  EXPECT_EQ(src.line, 47);
  EXPECT_NE(src.excerpt.text.find("item()"), std::string::npos);
}

TEST(BreaksPanel, SelectingABreakSelectsItsRegionAndShowsItsSource) {
  SelectionContext ctx;
  BreaksPanel panel(&ctx);
  ctx.setSession(test::crafted_session(), "");
  ASSERT_EQ(panel.table()->model()->rowCount(), 2);
  panel.table()->selectRow(1);  // item(): ends region 1
  EXPECT_EQ(ctx.current().compile_id, "[1/0]");
  EXPECT_EQ(panel.source()->markedLines(), std::set<int>{47});
  EXPECT_TRUE(panel.source()->lineText(47).contains("item()"));
  panel.table()->selectRow(0);
  EXPECT_EQ(ctx.current().compile_id, "[0/0]");
  EXPECT_TRUE(panel.source()->lineText(42).contains("print"));
}
