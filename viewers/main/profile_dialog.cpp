#include "viewers/main/profile_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QPushButton>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QSettings>
#include <QSpinBox>
#include <QVBoxLayout>

#include "engine/api/options.h"

namespace kiln::viewers {

namespace {
// What profile can run: its eager baseline, then each compile mode.
QStringList profile_modes() {
  QStringList modes{"eager"};
  for (const auto& m : api::compile_modes()) modes << QString::fromStdString(m);
  return modes;
}
QString settings_key(const QString& model, const char* what) {
  return "profile/" + QFileInfo(model).absoluteFilePath().replace('/', '|') + "/" + what;
}
}  // namespace

ProfileDialog::ProfileDialog(const QString& model_path, const QStringList& arg_names, QWidget* parent)
    : QDialog(parent), modelPath_(model_path) {
  setWindowTitle("Profile " + QFileInfo(model_path).fileName());
  QSettings settings;
  const QStringList lastShapes = settings.value(settings_key(model_path, "inputs")).toStringList();
  auto* form = new QFormLayout;
  form->addRow(new QLabel("Example input shape for each argument of forward, e.g. 2x16x64 or 8x64:float16."));
  for (int i = 0; i < arg_names.size(); ++i) {
    auto* e = new QLineEdit(this);
    e->setPlaceholderText("e.g. 2x16x64");
    if (i < lastShapes.size()) e->setText(lastShapes[i]);
    shapes_.push_back(e);
    form->addRow(arg_names[i] + ":", e);
  }
  dtype_ = new QComboBox(this);
  dtype_->addItems({"float32", "float64", "float16", "bfloat16", "int64", "int32"});
  dtype_->setCurrentText(settings.value(settings_key(model_path, "dtype"), "float32").toString());
  form->addRow("Default dtype:", dtype_);
  auto* modes = new QHBoxLayout;
  const QStringList lastModes =
      settings.value(settings_key(model_path, "modes"), QStringList{"eager", "default"}).toStringList();
  for (const QString& m : profile_modes()) {
    auto* c = new QCheckBox(m, this);
    c->setChecked(lastModes.contains(m));
    modes_.push_back(c);
    modes->addWidget(c);
  }
  form->addRow("Modes:", modes);
  backends_ = new QLineEdit(this);
  backends_->setPlaceholderText("optional peers: torchscript, aot_eager, cudagraphs");
  backends_->setText(settings.value(settings_key(model_path, "backends")).toString());
  form->addRow("Extra backends:", backends_);
  device_ = new QComboBox(this);
  device_->addItems({"auto", "cpu", "cuda"});
  form->addRow("Device:", device_);
  iters_ = new QSpinBox(this);
  iters_->setRange(1, 100000);
  iters_->setValue(50);
  form->addRow("Timed iterations:", iters_);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  buttons->button(QDialogButtonBox::Ok)->setText("Profile");
  connect(buttons, &QDialogButtonBox::accepted, this, &ProfileDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &ProfileDialog::reject);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(buttons);
}

void ProfileDialog::accept() {
  for (auto* e : shapes_)
    if (e->text().trimmed().isEmpty()) {
      QMessageBox::warning(this, "Kiln", "Give an example input shape for every argument of forward.");
      e->setFocus();
      return;
    }
  bool any = false;
  for (auto* c : modes_) any |= c->isChecked();
  if (!any) {
    QMessageBox::warning(this, "Kiln", "Pick at least one mode to run.");
    return;
  }
  auto r = request();
  QSettings settings;
  QStringList shapes, modes;
  for (const auto& s : r.inputs) shapes << QString::fromStdString(s);
  for (const auto& m : r.options.modes) modes << QString::fromStdString(m);
  settings.setValue(settings_key(modelPath_, "inputs"), shapes);
  settings.setValue(settings_key(modelPath_, "modes"), modes);
  settings.setValue(settings_key(modelPath_, "dtype"), dtype_->currentText());
  settings.setValue(settings_key(modelPath_, "backends"), backends_->text());
  QDialog::accept();
}

ProfileRequest ProfileDialog::request() const {
  ProfileRequest r;
  r.model_path = modelPath_.toStdString();
  for (auto* e : shapes_) r.inputs.push_back(e->text().trimmed().toStdString());
  r.dtype = dtype_->currentText().toStdString();
  r.options.modes.clear();
  for (auto* c : modes_)
    if (c->isChecked()) r.options.modes.push_back(c->text().toStdString());
  r.options.backends.clear();
  for (const auto& b : backends_->text().split(',', Qt::SkipEmptyParts)) r.options.backends.push_back(b.trimmed().toStdString());
  r.options.device = device_->currentText().toStdString();
  r.options.iters = iters_->value();
  return r;
}

}  // namespace kiln::viewers
