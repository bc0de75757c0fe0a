// Small tables beside a kernel's source: the autotune candidates it was picked from
// (Kernel::autotune) and the fusion decisions of its region (session.fusion).
#pragma once

#include <string>
#include <vector>

#include "engine/api/session.h"
#include "viewers/common/table_model.h"

namespace kiln::viewers {

class AutotuneTableModel : public RowTableModel<session::AutotuneCandidate> {
  Q_OBJECT
 public:
  enum Column { Config, Ms, Chosen, ColumnCount };
  explicit AutotuneTableModel(QObject* parent = nullptr);
  void setCandidates(std::vector<session::AutotuneCandidate> c) { setRows(std::move(c)); }

 private:
  QVariant cell(const session::AutotuneCandidate& c, int column, int role) const override;
};

class FusionTableModel : public RowTableModel<session::FusionDecision> {
  Q_OBJECT
 public:
  enum Column { First, Second, Fused, Reason, ColumnCount };
  explicit FusionTableModel(QObject* parent = nullptr);
  // The decisions of one compiled region (all when compile_id is empty).
  void setDecisions(const std::vector<session::FusionDecision>& all, const std::string& compile_id);

 private:
  QVariant cell(const session::FusionDecision& d, int column, int role) const override;
};

}  // namespace kiln::viewers
