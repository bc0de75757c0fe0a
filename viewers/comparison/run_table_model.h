// RunTableModel: the mode/backend comparison of a session, one row per run: mode, backend, device,
// status, compile cold/warm, first call, steady-state median/p10/p90, kernels per iteration, GPU
// busy, host overhead, peak memory, speedup vs eager and max error vs eager.
#pragma once

#include <memory>

#include "engine/api/session.h"
#include "viewers/common/table_model.h"

namespace kiln::viewers {

class RunTableModel : public ColumnTableModel {
  Q_OBJECT
 public:
  enum Column {
    Mode, Backend, Device, Status, CompileCold, CompileWarm, FirstCall, Median, P10, P90, KernelsPerIter,
    GpuBusy, HostOverhead, PeakMemory, Speedup, MaxError, ColumnCount
  };
  explicit RunTableModel(QObject* parent = nullptr);
  void setSession(std::shared_ptr<const session::Session> s);
  const session::Run* run(int row) const;
  int rowOfRun(int run_id) const;  // -1 when absent

  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const session::Session> session_;
};

}  // namespace kiln::viewers
