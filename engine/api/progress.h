// Progress of long compiler work (max-autotune's candidate timing) as the apps show it.
#pragma once

#include "engine/runtime/tuning_progress.h"
