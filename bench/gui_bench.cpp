// GUI benchmark (offscreen): the timeline's frame time over 1,000,000 events while panning and
// zooming, and a 2,000-node graph's time to first paint with its modules collapsed (and expanded).
// Prints a table; targets: frame <= 16 ms, first paint <= 1 s.
#include <QApplication>
#include <QElapsedTimer>
#include <QGraphicsView>
#include <QImage>
#include <QPainter>
#include <algorithm>
#include <cstdio>
#include <random>

#include "viewers/graph/graph_panel.h"
#include "viewers/timeline/timeline_panel.h"

using namespace kiln;
using namespace kiln::viewers;

namespace {

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5))];
}

// One row of frame times: median, p90 and max against the 16 ms target.
void print_frames_row(const char* what, const std::vector<double>& ms) {
  std::printf("| %s | %.2f ms | %.2f ms | %.2f ms | <= 16 ms |\n", what, percentile(ms, 0.5), percentile(ms, 0.9),
              *std::max_element(ms.begin(), ms.end()));
}

// 1M events over 4 runs x (2 host lanes + 2 streams + api): short kernels, some long spans.
std::shared_ptr<session::Session> big_timeline(size_t n) {
  auto s = std::make_shared<session::Session>();
  for (int r = 0; r < 4; ++r) {
    session::Run run;
    run.id = r;
    run.mode = r == 0 ? "eager" : r == 1 ? "default" : r == 2 ? "reduce-overhead" : "max-autotune";
    run.backend = r == 0 ? "eager" : "kiln";
    s->runs.push_back(run);
  }
  const char* lanes[] = {"host:1", "host:2", "cuda:0/stream 7", "cuda:0/stream 13", "cuda api"};
  std::mt19937_64 rng(42);
  std::exponential_distribution<double> gap(1 / 400.0), dur(1 / 2000.0);
  s->timeline.reserve(n);
  std::vector<int64_t> t(20, 0);
  for (size_t i = 0; i < n; ++i) {
    int run = static_cast<int>(i % 4), lane = static_cast<int>((i / 4) % 5);
    int64_t& clock = t[run * 5 + lane];
    session::TimelineEvent e;
    e.run = run;
    e.lane = lanes[lane];
    e.category = lane >= 2 && lane < 4 ? "kernel" : lane == 4 ? "cuda_runtime" : "region";
    e.name = "k" + std::to_string(i % 37) + "_fused";
    e.kernel = e.category == "kernel" ? e.name : "";
    clock += static_cast<int64_t>(gap(rng));
    e.start_ns = clock;
    e.dur_ns = static_cast<int64_t>(i % 1000 == 0 ? 200000 : dur(rng));
    clock += e.dur_ns;
    s->timeline.push_back(std::move(e));
  }
  return s;
}

GraphModel big_graph(int n) {
  GraphModel g;
  for (int i = 0; i < n; ++i) {
    GraphNode node;
    node.name = "n" + std::to_string(i);
    node.op = "call_function";
    node.target = i % 3 ? "aten::add" : "aten::linear";
    node.shape = "f32[32, 512]";
    node.module = "layers." + std::to_string(i / 100) + ".block" + std::to_string((i / 20) % 5);
    if (i) node.inputs.push_back(i - 1);
    if (i > 7 && i % 7 == 0) node.inputs.push_back(i - 7);
    g.index[node.name] = i;
    g.nodes.push_back(node);
  }
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  std::printf("| benchmark | median | p90 | max | target |\n|---|---|---|---|---|\n");

  {
    SelectionContext ctx;
    TimelinePanel panel(&ctx);
    panel.resize(1600, 900);
    QElapsedTimer load;
    load.start();
    ctx.setSession(big_timeline(1000000));
    double load_ms = static_cast<double>(load.nsecsElapsed()) / 1e6;
    auto* canvas = panel.canvas();
    canvas->resize(1600, 900);
    canvas->fitAll();
    QImage image(1600, 900, QImage::Format_ARGB32_Premultiplied);
    auto frame_ms = [&] {
      QElapsedTimer t;
      t.start();
      QPainter p(&image);
      canvas->renderTo(p, 1600, 900);
      p.end();
      return static_cast<double>(t.nsecsElapsed()) / 1e6;
    };
    // Zoom in 60 frames, pan 60, zoom out 60, pan back 60.
    auto pan_and_zoom_ms = [&] {
      std::vector<double> frames;
      for (int f = 0; f < 240; ++f) {
        int phase = f / 60;
        if (phase == 0) canvas->geometry().zoom_at(800, 1.08);
        else if (phase == 1) canvas->geometry().pan_px(-25);
        else if (phase == 2) canvas->geometry().zoom_at(800, 1 / 1.08);
        else canvas->geometry().pan_px(25);
        frames.push_back(frame_ms());
      }
      return frames;
    };
    std::vector<double> whole;  // the worst case: everything in view, nearly all of it folded
    for (int f = 0; f < 20; ++f) whole.push_back(frame_ms());
    print_frames_row("timeline, 1,000,000 events, whole session in view (20 frames)", whole);
    print_frames_row("timeline, 1,000,000 events, 240 frames 1600x900 (pan + zoom)", pan_and_zoom_ms());
    std::printf("| timeline, packing 1,000,000 events (once per session) | %.0f ms | | | |\n", load_ms);
    // The same sequence with a kernel selected (its events outlined, inside folds too).
    ctx.setRun(1);
    ctx.selectKernel("k5_fused");
    canvas->fitAll();
    print_frames_row("timeline, same 240 frames with a kernel selected", pan_and_zoom_ms());
  }

  for (bool collapsed : {true, false}) {
    SelectionContext ctx;
    GraphPanel panel(&ctx);
    panel.resize(1200, 900);
    panel.show();
    auto g = big_graph(2000);
    QElapsedTimer t;
    t.start();
    panel.showModel(g, collapsed ? default_collapsed(g) : std::set<std::string>{});
    panel.waitForLayout();
    auto* view = panel.findChild<QGraphicsView*>();
    QImage image(1200, 900, QImage::Format_ARGB32_Premultiplied);
    QPainter p(&image);
    view->render(&p);
    p.end();
    double ms = static_cast<double>(t.nsecsElapsed()) / 1e6;
    std::printf("| graph, 2,000 nodes, %s: layout + scene + first paint | %.0f ms | | | %s |\n",
                collapsed ? "modules collapsed" : "all expanded", ms, collapsed ? "<= 1000 ms" : "");
  }
  return 0;
}
