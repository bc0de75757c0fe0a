// KernelsPanel: the generated kernels with their launches, time per iteration and share in the
// selected run, then the run's other device kernels (cuBLAS, cuDNN, ATen) and what launched them;
// the selected kernel's source (C++, CUDA C++ or Triton, highlighted) beside the graph nodes it came
// from, its launch config and registers, its autotune candidates and the fusion decisions of its
// region.
// Linked both ways: clicking a node (in the list or on a source line whose comment names it)
// selects that node; a node selected elsewhere shows its kernel with the lines naming it marked.
#pragma once

#include <string>

#include "engine/api/report.h"
#include "viewers/common/table_panel.h"

class QLabel;
class QListWidget;
class QTabWidget;

namespace kiln::viewers {

class AutotuneTableModel;
class CodeView;
class FusionTableModel;
class KernelTableModel;

class KernelsPanel : public TablePanel<KernelTableModel> {
  Q_OBJECT
 public:
  explicit KernelsPanel(SelectionContext* ctx, QWidget* parent = nullptr);

  CodeView* source() const { return source_; }
  QListWidget* nodes() const { return nodes_; }
  QTableView* autotune() const { return autotune_; }
  QTableView* fusion() const { return fusion_; }
  // The kernel whose source is shown ("" when none) and its region.
  std::string shownKernel() const;
  std::string shownRegion() const;

 private:
  void onSelectionChanged(const Selection& sel, unsigned parts) override;
  // Shows the kernel `name` of region `compile_id` (kernel names repeat across regions: k0_mul in
  // [2/0] and in [5/0]); the first kernel of that name when the region has none.
  void showKernel(const std::string& name, const std::string& compile_id);
  // A device kernel none of the session's kernels launched (cuBLAS, cuDNN, ATen): what launched
  // it and its times, in place of the source Kiln does not have; the selection stays as it was.
  void showDeviceKernel(const report::KernelStat& d);
  const session::Kernel* shown() const;
  void markNode(const std::string& node);
  void clickedLine(int line);
  void updateTimes(int run);

  AutotuneTableModel* autotuneModel_;
  FusionTableModel* fusionModel_;
  QLabel* title_;
  QLabel* timesFrom_;
  CodeView* source_;
  QListWidget* nodes_;
  QLabel* launch_;
  QTableView* autotune_;
  QTableView* fusion_;
  QTabWidget* tabs_;
  int shownRow_ = -1;  // index into session.kernels
  bool deviceShown_ = false;  // a library kernel's row is shown, not a session kernel
};

}  // namespace kiln::viewers
