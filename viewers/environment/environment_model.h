// EnvironmentModel: where a session was recorded, one row per fact: the Kiln build (version and
// git commit) that wrote it, the LibTorch (or torch) it ran on, OS, CPU, GPU, driver, CUDA, when,
// the model file and its SHA-256, and the Kiln build showing it now. Empty facts show "-".
#pragma once

#include <QAbstractTableModel>
#include <memory>
#include <utility>
#include <vector>

#include "engine/api/session.h"

namespace kiln::viewers {

class EnvironmentModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Fact, Value, ColumnCount };
  explicit EnvironmentModel(QObject* parent = nullptr);
  void setSession(std::shared_ptr<const session::Session> s);
  QString value(const QString& fact) const;  // "" when there is no such row

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  std::vector<std::pair<QString, QString>> rows_;
};

}  // namespace kiln::viewers
