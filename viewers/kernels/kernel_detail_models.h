// Small tables beside a kernel's source: the autotune candidates it was picked from
// (Kernel::autotune) and the fusion decisions of its region (session.fusion).
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "engine/api/session.h"

namespace kiln::viewers {

class AutotuneTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Config, Ms, Chosen, ColumnCount };
  explicit AutotuneTableModel(QObject* parent = nullptr);
  void setCandidates(std::vector<session::AutotuneCandidate> c);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  std::vector<session::AutotuneCandidate> rows_;
};

class FusionTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { First, Second, Fused, Reason, ColumnCount };
  explicit FusionTableModel(QObject* parent = nullptr);
  // The decisions of one compiled region (all when compile_id is empty).
  void setDecisions(const std::vector<session::FusionDecision>& all, const std::string& compile_id);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  std::vector<session::FusionDecision> rows_;
};

}  // namespace kiln::viewers
