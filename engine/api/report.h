// What the apps render from a session: the report generators (HTML, Markdown, JSON, Chrome trace)
// and the analyses that reports and panels share (device time per kernel, deduplicated graph
// breaks, the recompile history, device time by module and line, the comparison of two sessions,
// Graphviz layout behind its lock). No LibTorch, no Qt.
#pragma once

#include "engine/report/break_costs.h"
#include "engine/report/break_groups.h"
#include "engine/report/gpu_kernel_stats.h"
#include "engine/report/graphviz_svg.h"
#include "engine/report/memory_view.h"
#include "engine/report/number_text.h"
#include "engine/report/observations.h"
#include "engine/report/module_time.h"
#include "engine/report/recompile_costs.h"
#include "engine/report/recompile_history.h"
#include "engine/report/render_chrome_trace.h"
#include "engine/report/render_diff.h"
#include "engine/report/render_diff_text.h"
#include "engine/report/render_html.h"
#include "engine/report/render_json.h"
#include "engine/report/render_markdown.h"
