#include "viewers/comparison/speedup_chart.h"

#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSet>
#include <QtCharts/QHorizontalBarSeries>
#include <QtCharts/QValueAxis>
#include <algorithm>

namespace kiln::viewers {

SpeedupChart::SpeedupChart(QWidget* parent) : QChartView(parent) {
  setRenderHint(QPainter::Antialiasing);
  setMinimumHeight(140);
  setSession(nullptr);
}

void SpeedupChart::setSession(const session::Session* s) {
  auto* chart = new QChart;
  chart->legend()->hide();
  chart->setMargins(QMargins(4, 4, 4, 4));
  chart->setBackgroundRoundness(0);
  bars_ = 0;
  QStringList names;
  auto* set = new QBarSet("speedup vs eager");
  set->setColor(QColor(0x3b, 0x7d, 0xd8));
  set->setLabelColor(Qt::black);
  double top = 1.0;
  if (s)
    for (auto it = s->runs.rbegin(); it != s->runs.rend(); ++it) {  // bottom-up, so the first run is on top
      const auto& r = *it;
      if (r.status != "ok" || r.speedup_vs_eager <= 0) continue;
      names << QString::fromStdString(r.backend.empty() || r.backend == "kiln" || r.mode == "eager"
                                          ? r.mode
                                          : r.mode + " (" + r.backend + ")");
      *set << r.speedup_vs_eager;
      top = std::max(top, r.speedup_vs_eager);
      ++bars_;
    }
  chart->setTitle(bars_ ? "Speedup vs eager (higher is faster)" : "No measured runs in this session");
  if (bars_) {
    auto* series = new QHorizontalBarSeries;
    series->append(set);
    series->setLabelsVisible(true);
    series->setLabelsFormat("@value x");
    series->setLabelsPrecision(3);
    series->setLabelsPosition(QAbstractBarSeries::LabelsInsideEnd);
    chart->addSeries(series);
    auto* y = new QBarCategoryAxis;
    y->append(names);
    chart->addAxis(y, Qt::AlignLeft);
    series->attachAxis(y);
    auto* x = new QValueAxis;
    x->setRange(0, top * 1.15);
    x->setLabelFormat("%.1fx");
    x->setTickCount(5);
    chart->addAxis(x, Qt::AlignBottom);
    series->attachAxis(x);
  } else {
    delete set;
  }
  QChart* old = this->chart();
  setChart(chart);
  delete old;
}

}  // namespace kiln::viewers
