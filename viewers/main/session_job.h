// SessionJob: the long work behind File > Open, off the UI thread — opening a session file,
// importing TORCH_TRACE logs / profiler traces, profiling a model in every requested mode.
//
// One job at a time: starting a job cancels the one before it. Each job gets a generation id;
// results come back queued to the UI thread and a result whose generation is no longer current is
// dropped, so a slow stale job never replaces what the user opened later. Cancel sets a flag the
// profiler's progress callback reads; it then throws kiln::Error("cancelled"), and the partial
// session file is deleted. The destructor cancels and waits for a running job.
#pragma once

#include <QFutureSynchronizer>
#include <QObject>
#include <QString>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "engine/api/kiln.h"

namespace kiln::viewers {

struct ProfileRequest {
  std::string model_path;
  std::vector<std::string> inputs;  // "2x16x64", one per forward argument
  std::string dtype = "float32";
  api::ProfileOptions options;
  std::string out_path;  // where the session is written
};

class SessionJob : public QObject {
  Q_OBJECT
 public:
  explicit SessionJob(QObject* parent = nullptr);
  ~SessionJob() override;

  quint64 openSession(const QString& path);
  quint64 importTrace(const QString& path);
  quint64 profile(const ProfileRequest& request);
  // Reads `path` as `kiln diff` reads a side (a session, a TORCH_TRACE log or folder, a profiler
  // trace) and compares `shown` (side A, labelled `shown_label`) with it; answers with compared.
  quint64 compare(const QString& path, std::shared_ptr<const session::Session> shown, const QString& shown_label);
  void cancel();
  bool busy() const { return running_ > 0; }
  quint64 generation() const { return generation_; }

 Q_SIGNALS:
  void progress(quint64 generation, const QString& what, int done, int total);
  // `source`: what the user opened; `session_path`: the .kiln file ("" for an import not saved).
  // `note`: a line for the status bar (e.g. other ranks left out of an import).
  void finished(quint64 generation, std::shared_ptr<const kiln::session::Session> session, const QString& source,
                const QString& session_path, const QString& note);
  void failed(quint64 generation, const QString& source, const QString& message);
  // A compare job's result: the other session (side B) and the comparison.
  void compared(quint64 generation, std::shared_ptr<const kiln::session::Session> other,
                std::shared_ptr<const kiln::report::SessionDiff> diff, const QString& source);
  void cancelled(quint64 generation, const QString& source);

 private:
  struct Outcome;
  quint64 start(const QString& source, std::function<void(Outcome&, const std::atomic<bool>&,
                                                          const std::function<void(const std::string&, int, int)>&)>
                                           work);
  void deliver(quint64 gen, const std::shared_ptr<Outcome>& o);

  quint64 generation_ = 0;
  int running_ = 0;
  std::shared_ptr<std::atomic<bool>> cancel_;
  QFutureSynchronizer<void> futures_;
};

}  // namespace kiln::viewers
