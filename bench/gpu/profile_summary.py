"""Summarises `kiln profile` sessions made on the GPU machine: per run the figures the session holds
and, from its CUPTI trace, how many device records were stored, dropped and linked to Kiln kernels,
how many kernels came from CUDA graph replays, and what tracing cost (traced vs untraced median; in the
CUDA-graph modes the window records graphs whole and the kernel detail iterations' cost is given beside it).

    python3 bench/gpu/profile_summary.py SESSION.kiln...
"""
import json
import sqlite3
import sys


def summarise(path):
    db = sqlite3.connect(path)
    print(f"\n{path}")
    print("| mode | backend | status | median ms | kernels/iter | GPU busy | gap ms | peak MB | speedup | "
          "CUPTI records | dropped | kernels linked | graph kernels | traced ms | overhead |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    runs = db.execute("SELECT id, mode, backend, status, median_ms, kernels_per_iter, gpu_busy, launch_gap_ms, "
                      "peak_memory_bytes, speedup_vs_eager FROM runs ORDER BY seq").fetchall()
    for rid, mode, backend, status, med, kpi, busy, gap, peak, speed in runs:
        prof = db.execute("SELECT args_json FROM timeline WHERE run = ? AND category = 'profiler'", (rid,)).fetchone()
        a = json.loads(prof[0]) if prof and prof[0] else {}
        linked = f"{a.get('attributed_kernels', '-')}/{a.get('device_kernels', '-')}"
        overhead = a.get("overhead")
        print(f"| {mode} | {backend} | {status[:40]} | {med or 0:.4f} | {kpi or 0:.1f} | {100 * (busy or 0):.0f} % | "
              f"{gap or 0:.4f} | {(peak or 0) / 1e6:.1f} | {speed or 0:.2f} | {a.get('cupti_records', '-')} | "
              f"{a.get('dropped_records', '-')} | {linked} | {a.get('graph_kernels', '-')} | "
              f"{a.get('traced_median_ms', 0):.4f} | {'-' if overhead is None else f'{100 * overhead:+.0f} %'} |"
              + (f" error: {a['error']}" if 'error' in a else "")
              + (f" graphs whole: {a.get('graph_records')} graph records in the window; kernel detail "
                 f"{kd.get('iterations')} iterations, {kd.get('cupti_records')} records, overhead "
                 f"{100 * kd.get('overhead', 0):+.0f} %" if (kd := a.get("kernel_detail")) else ""))
    cats = db.execute("SELECT category, count(*) FROM timeline GROUP BY category ORDER BY 2 DESC").fetchall()
    print("timeline events by category: " + ", ".join(f"{c} {n}" for c, n in cats))
    linked = db.execute("SELECT count(*) FROM timeline WHERE category = 'kernel' AND lane LIKE 'cuda:%' "
                        "AND kernel != ''").fetchone()[0]
    print(f"device kernel records linked to a Kiln kernel or extern: {linked}")
    # Where the device time goes in each mode: the heaviest device kernels of the traced window.
    for rid, mode, backend, *_ in runs:
        top = db.execute("SELECT name, kernel, sum(dur_ns), count(*) FROM timeline WHERE run = ? AND category = 'kernel' "
                         "AND lane LIKE 'cuda:%' GROUP BY name ORDER BY 3 DESC LIMIT 6", (rid,)).fetchall()
        total = db.execute("SELECT sum(dur_ns) FROM timeline WHERE run = ? AND category = 'kernel' AND lane LIKE 'cuda:%'",
                           (rid,)).fetchone()[0] or 0
        if not top:
            continue
        print(f"  {mode}/{backend}: device kernel time {total / 1e3:.1f} us in the traced window; heaviest:")
        for name, kernel, ns, n in top:
            print(f"    {100 * ns / max(total, 1):5.1f} %  x{n:<4} {name[:90]}" + (f"  <- {kernel}" if kernel else ""))


for p in sys.argv[1:]:
    try:
        summarise(p)
    except Exception as e:  # one bad session must not hide the others
        print(f"{p}: {e}")
