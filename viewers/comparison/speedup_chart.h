// SpeedupChart: a Qt Charts bar chart of each finished run's speedup vs eager (eager = 1.0), one
// bar per run, its value written on the bar.
#pragma once

#include <QtCharts/QChartView>

#include "engine/api/session.h"

namespace kiln::viewers {

class SpeedupChart : public QChartView {
  Q_OBJECT
 public:
  explicit SpeedupChart(QWidget* parent = nullptr);
  void setSession(const session::Session* s);
  int barCount() const { return bars_; }

 private:
  int bars_ = 0;
};

}  // namespace kiln::viewers
