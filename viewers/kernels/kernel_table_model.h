// KernelTableModel: the session's generated kernels (name, language, region, launch config,
// registers, shared memory) with their launches, time and share of kernel time in one run.
#pragma once

#include <QAbstractTableModel>
#include <map>
#include <memory>
#include <string>

#include "engine/api/session.h"
#include "engine/api/report.h"

namespace kiln::viewers {

class KernelTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Name, Language, Region, Launches, TimeMs, Share, Registers, Shared, Launch, ColumnCount };
  explicit KernelTableModel(QObject* parent = nullptr);
  void setSession(std::shared_ptr<const session::Session> s, int run);
  void setRun(int run);  // recomputes the time columns
  int run() const { return run_; }
  const session::Kernel* kernel(int row) const;
  // The row of a kernel by name and region (any region when compile_id is empty); -1 when absent.
  int rowOf(const std::string& kernel_name, const std::string& compile_id = "") const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const session::Session> session_;
  report::KernelTimes times_;
  int run_ = -1;
};

}  // namespace kiln::viewers
