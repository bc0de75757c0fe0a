// The session model as the apps see it: the value types of a session (session.h) and the store
// that reads and writes .kiln files (store.h). No LibTorch, no Qt.
#pragma once

#include "engine/session/session.h"
#include "engine/session/store.h"
