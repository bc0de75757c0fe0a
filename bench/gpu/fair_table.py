"""Prints the fair benchmark's tables from one machine call's results.

    python3 fair_table.py DIR NAME...

DIR holds, per model, NAME.peer.json and NAME.aoti.json (bench/gpu/peer_bench.py) and NAME.kiln.json
(kiln_gpu_bench), all written in the same call. Ratios compare like with like:
  - Kiln's best mode (reduce-overhead or max-autotune: CUDA-graph replay) against Inductor's compiled
    function replayed from a CUDA graph (no Python, no guards);
  - Kiln default (C++, no CUDA graph) against AOTInductor's package run from C++;
  - device time against device time (sum of kernel, copy and set durations per iteration).
A ratio below 1 means Kiln is faster. "noise": the largest spread between the three blocks of one
measurement in the row (largest block median / smallest - 1); ratios closer to 1 than that are not a difference. Missing or failed measurements print as "-" with the error listed below.
"""
import json
import os
import re
import sys

# Kinds of device work, by kernel name: who wrote the kernel and what it does.
KINDS = [
    ("Kiln generated", re.compile(r"^k\d+_")),
    ("Triton (Inductor)", re.compile(r"^triton_")),
    ("copies and sets", re.compile(r"^(memcpy|memset|Memcpy|Memset)")),
    # Fused attention (scaled_dot_product_attention's flash, memory-efficient or cuDNN kernels) before the
    # convolutions: cuDNN's attention kernels are named cudnn_..._sdpa_..._fprop_...
    ("attention (fused)", re.compile(r"sdpa|fmha|flash|attention", re.I)),
    ("convolution (cuDNN)", re.compile(r"conv|cudnn|implicit|winograd|fprop|nchwToNhwc|nhwcToNchw|Fft|fft", re.I)),
    ("GEMM (cuBLAS/CUTLASS)", re.compile(r"gemm|cublas|cutlass|xmma|gemv|splitK|sm90_|sm80_|ampere_", re.I)),
]


def kind_of(name):
    if name == "(others)":
        return "(others: below the top %s)" % (os.environ.get("KILN_BENCH_TOP") or "25")
    for kind, pattern in KINDS:
        if pattern.search(name):
            return kind
    return "ATen native kernels"


def by_kind(kernels):
    out = {}
    for name, (_count, ms) in (kernels or {}).items():
        out[kind_of(name)] = out.get(kind_of(name), 0.0) + ms
    return out


def load(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return {}


def f(v, digits=3):
    return "-" if v is None else f"{v:.{digits}f}"


def ratio(a, b):
    return None if a is None or b in (None, 0) else a / b


def fresh_cold(d, names):
    """Each mode's cold compile alone in a fresh process on each side (KILN_BENCH_FRESH_COLD), when measured."""
    modes = ("default", "reduce-overhead", "max-autotune")
    rows = []
    for name in names:
        for mode in modes:
            k = load(os.path.join(d, f"{name}.cold.kiln.{mode}.json")).get("cold", {}).get(mode)
            i = load(os.path.join(d, f"{name}.cold.inductor.{mode}.json"))
            if k or i:
                rows.append((name, mode, k or {}, i or {}))
    if not rows:
        return
    print("\nCold compile, each mode alone in a fresh process on each side (empty caches, one eager call first), seconds")
    print("| model | mode | Kiln | Inductor | Kiln / Inductor | Kiln's first call (cuDNN/cuBLAS set-up, tuning) | Kiln's NVRTC |")
    print("|---|---|--:|--:|--:|--:|--:|")
    for name, mode, k, i in rows:
        kc = None if k.get("error") else k.get("cold_s")
        ic = None if i.get("error") else i.get("cold_s")
        st = k.get("cold_stages_ms", {})
        staged = sum(st.values()) / 1e3 if st else None
        first = None if kc is None or staged is None else max(0.0, kc - staged)
        note = "".join(f" ({side} failed: {e.get('error')[:80]})" for side, e in (("Kiln", k), ("Inductor", i)) if e.get("error"))
        print(f"| {name} | {mode} | {f(kc, 2)} | {f(ic, 2)} | {f(ratio(kc, ic), 3)} | {f(first, 2)} | "
              f"{f(st.get('compile', 0) / 1e3 if st else None, 2)} |{note}")


def main():
    d, names = sys.argv[1], sys.argv[2:]
    rows, errors = [], []
    precision = None
    for name in names:
        peer = load(os.path.join(d, name + ".peer.json"))
        aoti_c = load(os.path.join(d, name + ".aoti.json"))
        k = load(os.path.join(d, name + ".kiln.json"))
        if not peer and not k:
            errors.append(f"{name}: no results (the peer or the benchmark failed before writing; see the logs)")
            continue
        precision = precision or k.get("precision")
        kiln = k.get("kiln", {})
        ind = peer.get("inductor_default", {})
        ind_ro = peer.get("inductor_reduce-overhead", {})
        aoti = k.get("aoti") or {}
        for what, v in [("kiln " + m, kiln.get(m, {})) for m in ("default", "reduce-overhead", "max-autotune")] + \
                [("inductor default", ind), ("inductor reduce-overhead", ind_ro), ("AOTInductor (C++)", aoti),
                 ("AOTInductor compile", aoti_c)]:
            if v.get("error"):
                errors.append(f"{name} {what}: {v['error']}")
            elif "ok" in v and not v["ok"]:
                errors.append(f"{name} {what}: output outside tolerance (max rel {v.get('rel_err', 0):.2e})")
        best_mode = min((m for m in ("reduce-overhead", "max-autotune") if kiln.get(m, {}).get("ms")),
                        key=lambda m: kiln[m]["ms"], default=None)
        best = kiln.get(best_mode, {}) if best_mode else {}
        default = kiln.get("default", {})
        # Paired (rounds alternating an untraced and a traced block, kiln profile's way of tracing: median of the
        # rounds' ratios); result files from before it have one traced block against the untraced median taken
        # right after it (the host's drift between the two blocks lands in that figure: marked unpaired).
        paired = default.get("cupti", {}).get("callbacks", {}).get("overhead")
        overhead = paired + 1 if paired is not None else ratio(default.get("traced_ms"), default.get("ms_again", default.get("ms")))
        rows.append({
            "name": name, "dtype": k.get("dtype", peer.get("dtype", "?")),
            "eager": k.get("eager", {}).get("ms"), "eager_py": peer.get("eager_py", {}).get("ms"),
            "k_default": default.get("ms"), "aoti": aoti.get("ms"),
            "k_ro": kiln.get("reduce-overhead", {}).get("ms"), "k_ma": kiln.get("max-autotune", {}).get("ms"),
            "best_mode": best_mode, "k_best": best.get("ms"), "replay": ind.get("replay_ms"),
            "i_call": ind.get("ms"), "i_ro_call": ind_ro.get("ms"),
            "dev_eager": k.get("eager", {}).get("device_ms"), "dev_eager_py": peer.get("eager_py", {}).get("device_ms"),
            "dev_default": default.get("device_ms"), "dev_best": best.get("device_ms"),
            "dev_aoti": aoti.get("device_ms"), "dev_replay": ind.get("replay_device_ms"),
            "k_cold": [kiln.get(m, {}).get("cold_s") for m in ("default", "reduce-overhead", "max-autotune")],
            "k_warm": [kiln.get(m, {}).get("warm_s") for m in ("default", "reduce-overhead", "max-autotune")],
            "i_cold": [ind.get("cold_s"), ind_ro.get("cold_s")], "i_warm": [ind.get("warm_s"), ind_ro.get("warm_s")],
            "aoti_cold": aoti_c.get("cold_s"), "aoti_concurrent": aoti_c.get("concurrent", False),
            "err": [kiln.get(m, {}).get("rel_err") for m in ("default", "reduce-overhead", "max-autotune")] +
                   [aoti.get("rel_err"), ind.get("rel_err")],
            "overhead": None if overhead is None else overhead - 1, "overhead_paired": paired is not None,
            "k_eager_kernels": k.get("eager", {}).get("kernels"), "k_default_kernels": default.get("kernels"),
            "k_best_kernels": best.get("kernels"), "aoti_kernels": aoti.get("kernels"),
            "replay_kernels": ind.get("replay_kernels"), "host": default.get("host"),
            "eager_host": k.get("eager", {}).get("host", {}).get("call_ms"),
            "peak": [k.get("eager", {}).get("peak_mib")] +
                    [kiln.get(m, {}).get("peak_mib") for m in ("default", "reduce-overhead", "max-autotune")] +
                    [aoti.get("peak_mib")],
            "variants": {m: v for m, v in kiln.items() if m not in ("default", "reduce-overhead", "max-autotune")},
            "kiln_all": kiln, "against_aoti": k.get("default_against_aoti"),
            "k_eager_ms": k.get("eager", {}).get("ms"), "eager_end": k.get("eager", {}).get("ms_end"),
            "eager_peak_end": k.get("eager", {}).get("peak_mib_end"),
            "noise": max([v for v in [k.get("eager", {}).get("spread"), aoti.get("spread"), ind.get("replay_spread"),
                                      ind.get("spread")] + [kiln.get(m, {}).get("spread") for m in kiln]
                          if v is not None], default=None),
        })
    print(f"\nFair benchmark ({precision or 'precision not recorded'}, the same on both sides); ms per call: "
          "CUDA events around one synchronized call, median of three blocks' medians of 100. Ratios < 1: Kiln faster.")
    print("| model | dtype | eager C++ | Kiln default | AOTI C++ | default/AOTI | Kiln r-o | Kiln m-a | "
          "Inductor graph replay | best/replay | Inductor per call (Python) | Inductor r-o per call (Python) | noise |")
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for r in rows:
        noise = "-" if r["noise"] is None else f"{100 * r['noise']:.0f} %"
        print(f"| {r['name']} | {r['dtype']} | {f(r['eager'])} | {f(r['k_default'])} | {f(r['aoti'])} | "
              f"{f(ratio(r['k_default'], r['aoti']), 2)} | {f(r['k_ro'])} | {f(r['k_ma'])} | {f(r['replay'])} | "
              f"{f(ratio(r['k_best'], r['replay']), 2)} | {f(r['i_call'])} | {f(r['i_ro_call'])} | {noise} |")
    print("\nDevice time per iteration, ms (kernels + copies + sets; Kiln, eager and AOTI from CUPTI in C++, "
          "Inductor and eager (Py) from torch.profiler)")
    print("| model | eager (C++) | eager (Py) | Kiln default | AOTI | default/AOTI | Kiln best | Inductor replay | "
          "best/Inductor | CUPTI overhead on Kiln default |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for r in rows:
        oh = "-" if r["overhead"] is None else f"{100 * r['overhead']:+.1f} %" + ("" if r["overhead_paired"] else " (unpaired)")
        print(f"| {r['name']} | {f(r['dev_eager'])} | {f(r['dev_eager_py'])} | {f(r['dev_default'])} | "
              f"{f(r['dev_aoti'])} | {f(ratio(r['dev_default'], r['dev_aoti']), 2)} | {f(r['dev_best'])} | "
              f"{f(r['dev_replay'])} | {f(ratio(r['dev_best'], r['dev_replay']), 2)} | {oh} |")
    print("\nCompile seconds, cold (empty caches) / warm (disk caches), and max rel error against eager")
    print("| model | Kiln default | Kiln r-o | Kiln m-a | Inductor default | Inductor r-o | AOTI (export + compile) | "
          "cold K/I default | error Kiln d / r-o / m-a, AOTI, Inductor |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|---|")
    for r in rows:
        cw = lambda c, w: f"{f(c, 1)} / {f(w, 1)}"  # noqa: E731
        # Built beside other builds (scripts/device-run does, to fit the machine's time): not a clean figure.
        aoti_cold = f"({f(r['aoti_cold'], 0)}, built in parallel)" if r["aoti_concurrent"] else f(r["aoti_cold"], 1)
        errs = " / ".join("-" if e is None else f"{e:.1e}" for e in r["err"][:3]) + ", " + \
            ", ".join("-" if e is None else f"{e:.1e}" for e in r["err"][3:])
        print(f"| {r['name']} | {cw(r['k_cold'][0], r['k_warm'][0])} | {cw(r['k_cold'][1], r['k_warm'][1])} | "
              f"{cw(r['k_cold'][2], r['k_warm'][2])} | {cw(r['i_cold'][0], r['i_warm'][0])} | "
              f"{cw(r['i_cold'][1], r['i_warm'][1])} | {aoti_cold} | "
              f"{f(ratio(r['k_cold'][0], r['i_cold'][0]), 2)} | {errs} |")
    fresh_cold(d, names)
    print("\nKiln's cold compile by stage, seconds (summed over regions; 'first call' is what no stage holds: the "
          "first call's cuDNN/cuBLAS set-up, weight copies, tuning; 'compile' includes each region's convolutions run once "
          "while NVRTC compiles, cuDNN's per-configuration set-up taken off the first call)")
    print("| model | mode | cold s | capture | lower..emit | compile (NVRTC + convolutions warmed) | load | first call | kernels | compiler runs |")
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    for r in rows:
        for mode in ("default", "reduce-overhead", "max-autotune"):
            v = r["kiln_all"].get(mode, {})
            st = v.get("cold_stages_ms")
            if not st or v.get("cold_s") is None:
                continue
            front = sum(ms for s, ms in st.items() if s not in ("capture", "compile", "load"))
            staged = sum(st.values()) / 1e3
            print(f"| {r['name']} | {mode} | {f(v['cold_s'], 2)} | {f(st.get('capture', 0) / 1e3, 2)} | "
                  f"{f(front / 1e3, 2)} | {f(st.get('compile', 0) / 1e3, 2)} | {f(st.get('load', 0) / 1e3, 2)} | "
                  f"{f(max(0.0, v['cold_s'] - staged), 2)} | {v.get('cold_kernels', '-')} | {v.get('cold_compiler_runs', '-')} |")
    for r in rows:
        for mode in ("default", "reduce-overhead", "max-autotune"):
            v = r["kiln_all"].get(mode, {})
            u = v.get("cold_unit_ms")
            if not u:
                continue
            slow = ", ".join(f"{ms:.0f}" for ms in u.get("slowest", []))
            ext = "; ".join(f"{n} {ms:.0f}" for ms, n in v.get("cold_extern_slowest", []))
            print(f"- {r['name']} {mode}: NVRTC units {u.get('sum', 0) / 1e3:.2f} s summed (median {u.get('median', 0):.0f} ms, "
                  f"slowest {slow} ms); first call's externs {v.get('cold_extern_ms', 0) / 1e3:.2f} s (by op, ms: {ext})")
    print("\nDevice time by kind of kernel, ms per iteration (Kiln best = its faster CUDA-graph mode)")
    for r in rows:
        sides = [("eager", r["k_eager_kernels"]), ("Kiln default", r["k_default_kernels"]),
                 ("AOTI", r["aoti_kernels"]), ("Kiln best", r["k_best_kernels"]), ("Inductor replay", r["replay_kernels"])]
        table = {name: by_kind(k) for name, k in sides}
        kinds = sorted({k for t in table.values() for k in t}, key=lambda k: -max(t.get(k, 0) for t in table.values()))
        if not kinds:
            continue
        print(f"\n{r['name']} ({r['dtype']})\n| kind | " + " | ".join(n for n, _ in sides) + " |")
        print("|---|" + "--:|" * len(sides))
        for k in kinds:
            print(f"| {k} | " + " | ".join(f(table[n].get(k)) if table[n] else "-" for n, _ in sides) + " |")
        if r["k_best_kernels"] and r["replay_kernels"]:
            top = lambda ks: sorted(((v[1], v[0], n) for n, v in ks.items() if n != "(others)"), reverse=True)[:6]  # noqa: E731
            print("\ntop kernels, Kiln best | Inductor replay (ms/iter, launches/iter):")
            for a, b in zip(top(r["k_best_kernels"]), top(r["replay_kernels"])):
                print(f"- {a[0]:.3f} ({a[1]:.0f}) {a[2][:70]} | {b[0]:.3f} ({b[1]:.0f}) {b[2][:70]}")
    hosts = [r for r in rows if r["host"]]
    if hosts:
        print("\nWhere a Kiln default call's host time goes, ms per call (Kiln's own spans over 50 calls, exclusive "
              "times: they add up to the call; device work overlaps them)")
        cats = ["guard", "region", "kernel", "extern", "interpreter", "capture", "outside spans"]
        print("| model | call | " + " | ".join(cats) + " |")
        print("|---|--:|" + "--:|" * len(cats))
        for r in hosts:
            h = r["host"]
            print(f"| {r['name']} | {f(h.get('call_ms'))} | " + " | ".join(f(h.get(c + "_ms")) for c in cats) + " |")
    if any(v is not None for r in rows for v in r["peak"]):
        print("\nPeak device memory, MiB (the caching allocator's peak over steady-state calls: weights, layout "
              "copies, graph pools and workspaces included; each side after giving back earlier cuBLAS workspaces)")
        print("| model | eager | Kiln default | Kiln r-o | Kiln m-a | AOTI | worst Kiln / eager |")
        print("|---|--:|--:|--:|--:|--:|--:|")
        for r in rows:
            e, kd, kro, kma, ao = r["peak"]
            worst = max((v for v in (kd, kro, kma) if v is not None), default=None)
            print(f"| {r['name']} | {f(e, 1)} | {f(kd, 1)} | {f(kro, 1)} | {f(kma, 1)} | {f(ao, 1)} | "
                  f"{f(ratio(worst, e), 2)} |")
    paired = [(r, m, v["paired"]) for r in rows for m, v in r["kiln_all"].items() if v.get("paired")]
    if paired:
        print("\nKiln against eager, paired in one process (15 rounds alternating a block of 20 calls of each; "
              "median of the rounds' eager / Kiln ratios: above 1 Kiln is faster)")
        print("| model | Kiln mode | speedup | eager ms | Kiln ms |")
        print("|---|---|--:|--:|--:|")
        for r, m, p in paired:
            print(f"| {r['name']} | {m} | {p['speedup']:.2f}x | {f(p.get('eager_ms'))} | {f(p.get('kiln_ms'))} |")
            aa = r["kiln_all"][m].get("paired_eager_aa")
            if aa:
                print(f"| {r['name']} | eager against eager | {aa['speedup']:.2f}x | {f(aa.get('eager_ms'))} | "
                      f"{f(aa.get('kiln_ms'))} |")
    vs_aoti = [(r["name"], r["against_aoti"]) for r in rows if r.get("against_aoti")]
    if vs_aoti:
        print("\nKiln default against AOTInductor from C++, paired in one process (both loaded; 15 rounds alternating "
              "a block of 20 calls of each; median of the rounds' Kiln / AOTI ratios: below 1 Kiln is faster), under "
              "no-grad and under InferenceMode (the same guard on both sides); and Kiln with its externs (convolutions, "
              "products) called through the interpreter against called directly, and its matrix products through LibTorch against "
              "cuBLASLt called directly (calls: cuBLASLt products during that pairing), and attention's backend picked "
              "by PyTorch on every call against once per problem, and cuDNN's attention (PyTorch's pick) against the "
              "memory-efficient kernel called directly (KILN_ATTENTION_EFFICIENT), paired the same way")
        print("| model | default/AOTI, no-grad | Kiln / AOTI ms | default/AOTI, InferenceMode | Kiln / AOTI ms | "
              "externs interpreted / direct | products LibTorch / cuBLASLt (calls) | attention picked each call / once | "
              "attention cuDNN / memory-efficient |")
        print("|---|--:|--:|--:|--:|--:|--:|--:|--:|")
        for n, a in vs_aoti:
            if a.get("error"):
                print(f"| {n} | failed: {a['error'][:100]} | | | | | | | |")
                continue
            ng, im, g = a.get("no_grad", {}), a.get("inference_mode", {}), a.get("direct_externs", {})
            lt, once, eff = a.get("cublaslt", {}), a.get("attention_once", {}), a.get("attention_efficient", {})
            print(f"| {n} | {f(ng.get('default_over_aoti'), 2)} | {f(ng.get('kiln_ms'))} / {f(ng.get('aoti_ms'))} | "
                  f"{f(im.get('default_over_aoti'), 2)} | {f(im.get('kiln_ms'))} / {f(im.get('aoti_ms'))} | "
                  f"{f(g.get('off_over_on'), 2)} | {f(lt.get('off_over_on'), 2)} ({lt.get('cublaslt_calls', '-')}) | "
                  f"{f(once.get('off_over_on'), 2)} | {f(eff.get('off_over_on'), 2)} |")
    ends = [(r["name"], r["k_eager_ms"], r["eager_end"], r["peak"][0], r["eager_peak_end"]) for r in rows
            if r.get("eager_end")]
    if ends:
        print("\nEager's per-call median and peak first and again after every Kiln run of the model (same process): "
              + "; ".join(f"{n} {f(a)} → {f(b)} ms, {f(p, 1)} → {f(q, 1)} MiB" for n, a, b, p, q in ends))
    cupti = [(r, m, v["cupti"]) for r in rows for m, v in r["kiln_all"].items() if v.get("cupti")]
    if cupti:
        ways = list(dict.fromkeys(w for _, _, c in cupti for w in c))
        print("\nWhat CUPTI tracing adds to a call, paired in one process (9 rounds alternating an untraced and a "
              "traced block of 20 calls; median of traced / untraced - 1), by how the launching calls are recorded "
              "(records per call by kind in brackets)")
        print("| model | Kiln mode | " + " | ".join(ways) + " |")
        print("|---|---|" + "--:|" * len(ways))
        for r, m, c in cupti:
            def cell(v):
                if "error" in v:
                    return "failed: " + v["error"][:80]
                kinds = "/".join(f"{k} {n:.0f}" for k, n in sorted(v.get("by_kind", {}).items()))
                return f"{v['overhead'] * 100:+.1f} % ({kinds or round(v['records_per_call'])})" + (
                    " [" + v["note"] + "]" if v.get("note") else "")
            cells = [cell(c[w]) if w in c else "-" for w in ways]
            print(f"| {r['name']} | {m} | " + " | ".join(cells) + " |")
    parts = [(r, r["kiln_all"]["default"]["window_parts"]) for r in rows
             if isinstance(r["kiln_all"].get("default", {}).get("window_parts"), dict)]
    if parts:
        names = list(parts[0][1].keys())
        print("\nWhat each part of kiln profile's traced window adds to a Kiln default call (9 rounds alternating an "
              "untraced block and one with the part on, 20 calls each; median ratio - 1): host spans, LibTorch op "
              "callbacks, memory samples, CUPTI as kiln profile records, all together")
        print("| model | " + " | ".join(names) + " |")
        print("|---|" + "--:|" * len(names))
        for r, p in parts:
            cells = [f"{100 * p[n]:+.1f} %" if isinstance(p.get(n), (int, float)) else str(p.get(n, "-"))[:60]
                     for n in names]
            print(f"| {r['name']} | " + " | ".join(cells) + " |")
    variants = [(r, m, v) for r in rows for m, v in r["variants"].items()]
    if variants:
        print("\nOther Kiln variants (KILN_BENCH_KILN_MODES), against eager in the same process")
        print("| model | variant | ms | / eager | device ms | peak MiB | host call ms | error |")
        print("|---|---|--:|--:|--:|--:|--:|---|")
        for r, m, v in variants:
            err = v.get("error") or ("-" if v.get("rel_err") is None else f"{v['rel_err']:.1e}")
            print(f"| {r['name']} | {m} | {f(v.get('ms'))} | {f(ratio(v.get('ms'), r['k_eager_ms']), 2)} | "
                  f"{f(v.get('device_ms'))} | {f(v.get('peak_mib'), 1)} | {f(v.get('host', {}).get('call_ms'))} | {err} |")
    for r in hosts:
        by = r["host"].get("extern_by_target") or {}
        if by:
            top = sorted(by.items(), key=lambda kv: -kv[1][0] * kv[1][1])[:6]
            print(f"\n{r['name']}: eager host ms per call {f(r['eager_host'])}; Kiln default's extern calls "
                  "(calls per call, host µs each): " + "; ".join(f"{t} {c:.0f} x {us:.1f}" for t, (c, us) in top))
    if errors:
        print("\nFailed or outside tolerance:")
        for e in errors:
            print("- " + e)


if __name__ == "__main__":
    main()
