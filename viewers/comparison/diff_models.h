// The comparison of two sessions (report::SessionDiff, File > Compare with...) as tables; thin
// adapters over one immutable diff, with the cells `kiln diff` prints (report::diff_text).
//
// RunPairModel: the runs of both sides paired by mode and backend: run, median A and B, B against
//   A, compile cold / warm, kernels per iteration, peak memory, status of each side.
// StructureModel: device time by model structure, one row per module (inclusive, in tree order,
//   indented by depth) or per source line (largest first): what, source text (lines), A and B ms
//   per iteration, B − A, B / A. A side without the row reads "-".
#pragma once

#include <memory>

#include "engine/api/report.h"
#include "viewers/common/table_model.h"
#include "viewers/common/time_change.h"

namespace kiln::viewers {

class RunPairModel : public RowTableModel<report::RunPair> {
  Q_OBJECT
 public:
  enum Column {
    Run, MedianA, MedianB, Ratio, CompileA, CompileB, KernelsA, KernelsB, PeakA, PeakB, StatusA, StatusB, ColumnCount
  };
  explicit RunPairModel(QObject* parent = nullptr);
  void setDiff(std::shared_ptr<const report::SessionDiff> d);

 private:
  QVariant cell(const report::RunPair& p, int column, int role) const override;
  std::shared_ptr<const report::SessionDiff> diff_;
};

class StructureModel : public RowTableModel<report::StructureLine> {
  Q_OBJECT
 public:
  enum class Kind { Modules, Lines };
  enum Column { Key, Code, A, B, Delta, Ratio, ColumnCount };
  explicit StructureModel(Kind kind, QObject* parent = nullptr);
  void setDiff(std::shared_ptr<const report::SessionDiff> d);
  Kind kind() const { return kind_; }

 private:
  QVariant cell(const report::StructureLine& l, int column, int role) const override;
  Kind kind_;
  std::shared_ptr<const report::SessionDiff> diff_;
};

}  // namespace kiln::viewers
