// The session model as the apps see it: the value types of a session (session.h), the store that
// reads and writes .kiln files (store.h), and a .kiln file read row by row for streamed reports
// (session_rows.h). No LibTorch, no Qt.
#pragma once

#include "engine/session/session.h"
#include "engine/session/session_rows.h"
#include "engine/session/store.h"
