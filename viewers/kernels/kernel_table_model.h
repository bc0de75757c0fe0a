// KernelTableModel: the session's generated kernels (name, language, region, launch config,
// registers, shared memory) with their launches and time per iteration and share of kernel time in
// one run (report::kernel_stats: device records only, host spans never count). After them, one
// row per device kernel of the run that none of the session's kernels launched (cuBLAS, cuDNN and
// ATen kernels of extern calls and ops), longest first, so that the shares of all rows add up to 1.
// Rows 0..kernels.size()-1 are the session's kernels in session order: row == kernel index.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/api/session.h"
#include "engine/api/report.h"
#include "viewers/common/table_model.h"

namespace kiln::viewers {

class KernelTableModel : public ColumnTableModel {
  Q_OBJECT
 public:
  enum Column { Name, Language, Region, Launches, TimeMs, Share, Registers, Shared, Launch, ColumnCount };
  explicit KernelTableModel(QObject* parent = nullptr);
  void setSession(std::shared_ptr<const session::Session> s, int run);
  // Recomputes the time columns and the rows of other device kernels; the session's kernel rows
  // stay (with their selection), the other rows are removed and inserted again.
  void setRun(int run);
  int run() const { return run_; }
  const report::KernelStats& stats() const { return stats_; }
  // The session's kernel of a row; nullptr for the rows of other device kernels.
  const session::Kernel* kernel(int row) const;
  // The stats row of a device kernel no session kernel launched; nullptr for the session's kernels.
  const report::KernelStat* deviceKernel(int row) const;
  // The row of a session kernel by name and region (any region when compile_id is empty); -1 when absent.
  int rowOf(const std::string& kernel_name, const std::string& compile_id = "") const;

  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  // The time column is named by where the times come from (GPU or CPU).
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  // Computes stats_ and launcherTimes_ for run_; answers the stats rows that get rows of their own.
  std::vector<size_t> computeStats();
  int sessionRows() const { return session_ ? int(session_->kernels.size()) : 0; }

  std::shared_ptr<const session::Session> session_;
  report::KernelStats stats_;
  std::vector<report::LauncherTime> launcherTimes_;  // per session kernel
  std::vector<size_t> others_;                       // stats_.kernels rows launched by none of them
  int run_ = -1;
};

// Whether any row of `stats` was launched by one of the session's kernels (a run of the generated
// code, not eager's or a peer backend's library kernels alone).
bool ran_session_kernels(const report::KernelStats& stats, const session::Session& s);

// cuBLAS and cuDNN kernels are C++ template instantiations hundreds of characters long: the
// template's name for a table cell or title, the whole name going to tooltips.
QString short_kernel_name(const std::string& name);

// How a device kernel was launched, for the Launch column: "launched by aten::linear", "CUDA graph
// replay", or "launcher unknown".
std::string launched_by_text(const report::KernelStat& k);

}  // namespace kiln::viewers
