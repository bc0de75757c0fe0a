#include "viewers/main/session_job.h"

#include <QMetaObject>
#include <QPointer>
#include <QtConcurrent/QtConcurrent>
#include <cstdio>
#include <filesystem>

#include "engine/api/import.h"
#include "engine/api/options.h"

namespace kiln::viewers {

struct SessionJob::Outcome {
  enum class Status { Ok, Failed, Cancelled } status = Status::Failed;
  std::shared_ptr<const session::Session> session;
  std::shared_ptr<const report::SessionDiff> diff;  // a compare job's
  QString source, session_path, note, error;
};

SessionJob::SessionJob(QObject* parent) : QObject(parent) {}

SessionJob::~SessionJob() {
  cancel();
  futures_.waitForFinished();
}

void SessionJob::cancel() {
  if (cancel_) cancel_->store(true);
}

quint64 SessionJob::start(const QString& source,
                          std::function<void(Outcome&, const std::atomic<bool>&,
                                             const std::function<void(const std::string&, int, int)>&)>
                              work) {
  cancel();
  const quint64 gen = ++generation_;
  auto flag = std::make_shared<std::atomic<bool>>(false);
  cancel_ = flag;
  ++running_;
  QPointer<SessionJob> self(this);
  auto report = [this, gen, flag](const std::string& what, int done, int total) {
    if (flag->load()) throw Error("cancelled");
    QMetaObject::invokeMethod(
        this, [this, gen, w = QString::fromStdString(what), done, total] {
          if (gen == generation_) Q_EMIT progress(gen, w, done, total);
        },
        Qt::QueuedConnection);
  };
  futures_.addFuture(QtConcurrent::run([this, gen, flag, source, work, report] {
    auto o = std::make_shared<Outcome>();
    o->source = source;
    try {
      work(*o, *flag, report);
      o->status = flag->load() ? Outcome::Status::Cancelled : Outcome::Status::Ok;
    } catch (const std::exception& e) {
      o->status = flag->load() ? Outcome::Status::Cancelled : Outcome::Status::Failed;
      o->error = QString::fromStdString(e.what());
    } catch (...) {
      o->status = Outcome::Status::Failed;
      o->error = source + ": unexpected error";
    }
    // The destructor waits for this future, so `this` outlives the call below.
    QMetaObject::invokeMethod(this, [this, gen, o] { deliver(gen, o); }, Qt::QueuedConnection);
  }));
  return gen;
}

void SessionJob::deliver(quint64 gen, const std::shared_ptr<Outcome>& o) {
  --running_;
  if (gen != generation_) return;  // a later job replaced this one: drop the stale result
  switch (o->status) {
    case Outcome::Status::Ok:
      if (o->diff)
        Q_EMIT compared(gen, o->session, o->diff, o->source);
      else
        Q_EMIT finished(gen, o->session, o->source, o->session_path, o->note);
      break;
    case Outcome::Status::Cancelled:
      Q_EMIT cancelled(gen, o->source);
      break;
    case Outcome::Status::Failed:
      Q_EMIT failed(gen, o->source, o->error);
      break;
  }
}

quint64 SessionJob::openSession(const QString& path) {
  return start(path, [path](Outcome& o, const std::atomic<bool>&, const auto&) {
    o.session = std::make_shared<const session::Session>(api::open_session(path.toStdString()));
    o.session_path = path;
  });
}

quint64 SessionJob::importTrace(const QString& path) {
  return start(path, [path](Outcome& o, const std::atomic<bool>&, const auto&) {
    importers::ImportRequest req;
    req.paths = {path.toStdString()};
    auto result = importers::import_files(req);
    if (result.sessions.empty()) throw Error(path.toStdString() + ": nothing to import");
    auto& first = result.sessions.front();
    o.session = std::make_shared<const session::Session>(std::move(first.session));
    QStringList notes;
    if (result.sessions.size() > 1)
      notes << QString("%1 sessions (one per process or rank); showing %2")
                   .arg(result.sessions.size())
                   .arg(QString::fromStdString(first.label));
    if (result.skipped_in_dirs > 0) notes << QString("%1 older file(s) left in the folder").arg(result.skipped_in_dirs);
    o.note = notes.join("; ");
  });
}

quint64 SessionJob::compare(const QString& path, std::shared_ptr<const session::Session> shown,
                            const QString& shown_label) {
  return start(path, [path, shown, shown_label](Outcome& o, const std::atomic<bool>&, const auto&) {
    if (!shown) throw Error("nothing is open to compare with " + path.toStdString());
    auto other = std::make_shared<const session::Session>(api::open_diff_side(path.toStdString()));
    api::DiffOptions options;
    options.label_a = shown_label.toStdString();
    options.label_b = path.toStdString();
    o.diff = std::make_shared<const report::SessionDiff>(api::diff(*shown, *other, options));
    o.session = std::move(other);
  });
}

quint64 SessionJob::profile(const ProfileRequest& r) {
  return start(QString::fromStdString(r.model_path), [r](Outcome& o, const std::atomic<bool>& cancelled,
                                                         const std::function<void(const std::string&, int, int)>& report) {
    try {
      const auto specs = api::parse_inputs(r.inputs, r.dtype);
      std::error_code dir_ec;
      if (auto dir = std::filesystem::path(r.out_path).parent_path(); !dir.empty())
        std::filesystem::create_directories(dir, dir_ec);
      auto s = api::profile(r.model_path, specs, r.options, r.out_path, report);
      if (cancelled.load()) throw Error("cancelled");
      o.session = std::make_shared<const session::Session>(std::move(s));
      o.session_path = QString::fromStdString(r.out_path);
    } catch (...) {
      std::error_code ec;
      std::filesystem::remove(r.out_path, ec);  // a partial session is discarded
      throw;
    }
  });
}

}  // namespace kiln::viewers
