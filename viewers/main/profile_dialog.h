// ProfileDialog: what `kiln profile` asks on its command line, asked before a model is profiled:
// one example input shape per forward argument ("2x16x64", optionally ":float16"), the default
// dtype, the modes to run (eager and default preselected; reduce-overhead and max-autotune need a
// GPU), extra peer backends, the device and the timed iterations. The last answers per model are
// remembered (QSettings).
#pragma once

#include <QDialog>
#include <QStringList>
#include <vector>

#include "viewers/main/session_job.h"

class QCheckBox;
class QComboBox;
class QLineEdit;
class QSpinBox;

namespace kiln::viewers {

class ProfileDialog : public QDialog {
  Q_OBJECT
 public:
  // `arg_names`: forward's arguments without self (one shape field each).
  ProfileDialog(const QString& model_path, const QStringList& arg_names, QWidget* parent = nullptr);
  // The request as filled in (out_path left empty). Valid only after accept().
  ProfileRequest request() const;

 protected:
  void accept() override;

 private:
  QString modelPath_;
  std::vector<QLineEdit*> shapes_;
  QComboBox* dtype_;
  std::vector<QCheckBox*> modes_;
  QLineEdit* backends_;
  QComboBox* device_;
  QSpinBox* iters_;
};

}  // namespace kiln::viewers
