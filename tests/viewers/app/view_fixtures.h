// The panels and models of the viewer tests, set up as every test sets them up.
//
// PanelOn<Panel>: a panel on a SelectionContext of its own, resized, shown and opened on a session:
//   test::PanelOn<GraphPanel> shown(800, 600, session);
//   auto& [ctx, panel] = shown;
// CheckedModel<Model>: a model that QAbstractItemModelTester checks on every change (a failed check
//   fails the test); constructed with arguments, it shows them first (the model's setSession).
#pragma once

#include <QAbstractItemModelTester>
#include <memory>
#include <utility>

#include "engine/api/session.h"
#include "viewers/selection/selection_context.h"

namespace kiln::test {

template <typename Panel>
struct PanelOn {
  PanelOn(int width, int height, std::shared_ptr<const session::Session> s) {
    panel.resize(width, height);
    panel.show();
    ctx.setSession(std::move(s));
  }

  viewers::SelectionContext ctx;
  Panel panel{&ctx};
};

template <typename Model>
struct CheckedModel : Model {
  CheckedModel() = default;
  template <typename... Session>
  explicit CheckedModel(Session&&... session) {
    this->setSession(std::forward<Session>(session)...);
  }

  QAbstractItemModelTester tester{this, QAbstractItemModelTester::FailureReportingMode::Fatal};
};

}  // namespace kiln::test
