// Reports are built from other people's sessions: whatever a session holds, a report stays inert.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>

#include "engine/report/graphviz_svg.h"
#include "engine/report/render_html.h"
#include "engine/report/render_markdown.h"
#include "engine/report/svg_sanitize.h"
#include "engine/session/session.h"

using namespace kiln;

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// The graph DOT a hostile session carried: Graphviz 2.42 copies the table cell's HREF into its SVG raw.
const char* kHrefInHtmlLabel =
    "digraph{a[label=<<TABLE><TR><TD HREF=\"q&#34;&gt;&lt;/svg&gt;&lt;script&gt;alert(1)&lt;/script&gt;\">x</TD>"
    "</TR></TABLE>>]}";

session::Session session_with_graph(const std::string& dot) {
  session::Session s;
  s.model.path = "m.pt";
  session::CompiledRegion r;
  r.compile_id = "[0/0]";
  session::StageGraph g;
  g.stage = "captured";
  g.text = "graph";
  g.dot = dot;
  r.graphs.push_back(g);
  s.regions.push_back(r);
  return s;
}

}  // namespace

TEST(SvgSanitize, KeepsDrawingDropsEverythingActive) {
  std::string in =
      "<?xml version=\"1.0\"?><!DOCTYPE svg><!-- c --><svg width=\"10pt\" onload=\"x()\" viewBox=\"0 0 1 1\">"
      "<g id=\"n\" class=\"node\" style=\"background:url(http://e)\"><title>a&#45;&gt;b</title>"
      "<a xlink:href=\"javascript:alert(1)\" href=\"http://e\"><text x=\"1\" onclick=\"y()\">T &amp; U</text></a>"
      "<polygon fill=\"url(http://evil/x)\" stroke=\"black\" points=\"0,0 1,1\"/>"
      "<ellipse fill=\"url(#grad)\" cx=\"1\"/>"
      "<script>alert(2)</script><style>*{}</style><foreignObject><div>html</div></foreignObject>"
      "<image href=\"file:///etc/passwd\"/></g></svg>";
  std::string out = report::sanitize_svg(in);
  EXPECT_EQ(out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10pt\" viewBox=\"0 0 1 1\">"
            "<g id=\"n\" class=\"node\"><title>a-&gt;b</title><text x=\"1\">T &amp; U</text>"
            "<polygon stroke=\"black\" points=\"0,0 1,1\"/><ellipse fill=\"url(#grad)\" cx=\"1\"/></g></svg>");
}

TEST(SvgSanitize, RebalancesBrokenMarkup) {
  // What Graphviz 2.42 writes for an unescaped HREF: an attribute value that closes the svg early.
  std::string in = "<svg><g><a xlink:href=\"q\"></svg><script>alert(1)</script>\"><text>x</text></a></g></svg>";
  std::string out = report::sanitize_svg(in);
  EXPECT_EQ(lower(out).find("<script"), std::string::npos) << out;
  EXPECT_EQ(lower(out).find("href"), std::string::npos) << out;
  EXPECT_EQ(out.rfind("</svg>"), out.size() - 6) << out;
  EXPECT_EQ(report::sanitize_svg("<svg><g><text>open"), "<svg xmlns=\"http://www.w3.org/2000/svg\"><g><text>open</text></g></svg>");
  EXPECT_EQ(report::sanitize_svg("text <script>x</script>"), "");
  EXPECT_EQ(report::sanitize_svg("<svg><text a=\"1\" b='2\" c=\"<x'>&bogus; &#0; &#x41;</text></svg>"),
            "<svg xmlns=\"http://www.w3.org/2000/svg\"><text>&amp;bogus; \xEF\xBF\xBD A</text></svg>");
}

TEST(SvgSanitize, HtmlLabelHrefNeverReachesTheReport) {
  if (!report::graphviz_available()) GTEST_SKIP() << "Graphviz is not built in";
  auto svg = report::dot_to_svg(kHrefInHtmlLabel);
  ASSERT_TRUE(svg.error.empty()) << svg.error;
  EXPECT_EQ(lower(svg.svg).find("<script"), std::string::npos) << svg.svg;
  EXPECT_EQ(lower(svg.svg).find("href"), std::string::npos) << svg.svg;
  EXPECT_NE(svg.svg.find(">x<"), std::string::npos) << "the label's text is still drawn: " << svg.svg;

  // IMG in a label would make Graphviz read a file; it is dropped with the markup.
  auto img = report::dot_to_svg("digraph{a[label=<<TABLE><TR><TD><IMG SRC=\"/etc/passwd\"/></TD></TR></TABLE>>]}");
  EXPECT_EQ(lower(img.svg).find("passwd"), std::string::npos) << img.svg;

  auto html = report::render_html(session_with_graph(kHrefInHtmlLabel));
  EXPECT_EQ(lower(html).find("<script"), std::string::npos);
}

TEST(ReportSecurity, HtmlForbidsScriptsWithAContentSecurityPolicy) {
  auto html = report::render_html(session_with_graph("digraph{a->b}"));
  auto head = html.substr(0, html.find("</head>"));
  EXPECT_NE(head.find("http-equiv=\"Content-Security-Policy\""), std::string::npos);
  EXPECT_NE(head.find("default-src 'none'"), std::string::npos);
  EXPECT_NE(head.find("script-src 'none'"), std::string::npos);
}

TEST(ReportSecurity, MarkdownCodeSpansCannotBeClosedFromInside) {
  session::Session s;
  s.model.path = "/m/a``<img src=x onerror=alert(1)>``b.pt";
  auto md = report::render_markdown(s);
  // The model row's code span is fenced with one backtick more than the longest run inside it.
  EXPECT_NE(md.find("| Model | ``` /m/a``<img src=x onerror=alert(1)>``b.pt ``` |"), std::string::npos) << md;
  // The heading escapes it as text.
  EXPECT_NE(md.find("&lt;img src=x onerror=alert(1)&gt;"), std::string::npos) << md;
}

TEST(ReportSecurity, MarkdownShowsControlCharactersInsteadOfSendingThem) {
  session::Session s;
  s.model.path = "evil\x1b]0;owned\x07\xc2\x9b" "31m.pt";
  auto md = report::render_markdown(s);
  EXPECT_EQ(md.find('\x1b'), std::string::npos);
  EXPECT_EQ(md.find('\x07'), std::string::npos);
  EXPECT_EQ(md.find("\xc2\x9b"), std::string::npos);
  EXPECT_NE(md.find("\\x1b"), std::string::npos) << md;
  EXPECT_NE(md.find("\\u009b"), std::string::npos) << md;
}
