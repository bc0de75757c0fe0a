"""The peers of the fair benchmark, measured on the GPU machine in the same call as Kiln.

    python3 peer_bench.py compile DIR NAME   TorchScript for Kiln (DIR/NAME.pt), then torch.compile (Inductor):
                                            eager from Python, each mode's cold and warm compile and per-call time,
                                            and Inductor's compiled function captured into a CUDA graph and
                                            replayed (no Python, no guards): DIR/NAME.peer.json
    python3 peer_bench.py aoti DIR NAME      AOTInductor: torch.export + aoti_compile_and_package into
                                            DIR/NAME.aoti.pt2 (its compile time into DIR/NAME.aoti.json);
                                            the package is run from C++ by kiln_gpu_bench
    python3 peer_bench.py cold DIR NAME MODE one mode's cold compile alone in a fresh process, after one eager call:
                                            DIR/NAME.cold.inductor.MODE.json (kiln_gpu_bench --cold: Kiln's side)
    python3 peer_bench.py list               the model names, one per line

Each command runs in its own process with a fresh TORCHINDUCTOR_CACHE_DIR set by the caller, so "cold" is an
empty cache; "warm" is a second compile after torch._dynamo.reset() that hits the on-disk caches. Per-call time:
CUDA events around one synchronized call after 10 warm-up calls, the median of three blocks' medians of 100
(the method kiln_gpu_bench uses).
Device time per iteration: the sum of the kernel, memcpy and memset durations in torch.profiler's trace over 20
iterations, divided by 20. The float32 matmul precision is KILN_BENCH_PRECISION (default "highest", PyTorch's
default); cuDNN keeps PyTorch's default (TF32 allowed): both are written into the JSON and applied by
kiln_gpu_bench on Kiln's side. A step that fails is recorded with its error, never dropped.
"""
import json
import os
import statistics
import sys
import tempfile
import time
import traceback

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "corpus"))

PRECISION = os.environ.get("KILN_BENCH_PRECISION", "highest")
ITERS = int(os.environ.get("KILN_BENCH_ITERS", "100"))
TOP = max(1, int(os.environ.get("KILN_BENCH_TOP", "25") or "25"))
# Inductor modes timed per call from Python; default and max-autotune-no-cudagraphs are also replayed from a CUDA graph.
MODES = [m for m in os.environ.get("KILN_PEER_MODES", "default,reduce-overhead").split(",") if m]


def cases():
    """name -> builder() returning (module, inputs, Kiln input specs, "script"|"trace", dtype)."""
    from models import CASES

    out = {}
    for name, ctor, shape in CASES:
        def build(ctor=ctor, shape=shape):
            return ctor().eval(), (torch.randn(*shape),), ["x".join(map(str, shape)) + ":float32"], "script", "float32"
        out[name] = build
    import make_corpus

    for name, _family, dtype, how, build in make_corpus.cases(False):
        def wrapped(build=build, how=how, dtype=dtype):
            m, inputs, specs = build()
            return m, inputs, specs, how, dtype
        out[name] = wrapped
    return out


def sync():
    torch.cuda.synchronize()


def steady_ms(fn, iters=ITERS, spread=None):
    """CUDA events around one synchronized call, after 10 warm-up calls, in three blocks of `iters`:
    the median of the block medians (kiln_gpu_bench does the same); spread[0] = largest / smallest - 1."""
    for _ in range(10):
        fn()
    sync()
    blocks = []
    for _ in range(3):
        times = []
        for _ in range(iters):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
        blocks.append(statistics.median(times))
    blocks.sort()
    if spread is not None:
        spread.append(blocks[-1] / blocks[0] - 1)
    return blocks[1]


def device_ms(fn, iters=20, kernels=None):
    """Sum of device activity (kernels, memcpy, memset) per iteration, from torch.profiler's trace.
    kernels, when given (a dict), gets the KILN_BENCH_TOP (default 25) longest per iteration: {name: [count, ms]},
    the rest as "(others)"."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    sync()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(iters):
            fn()
        sync()
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    try:
        p.export_chrome_trace(path)
        events = json.load(open(path))["traceEvents"]
    finally:
        os.unlink(path)
    by_name = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            c = by_name.setdefault(e.get("name", "?")[:160], [0, 0.0])
            c[0] += 1
            c[1] += e.get("dur", 0)
    if kernels is not None:
        ranked = sorted(by_name.items(), key=lambda kv: -kv[1][1])
        top = TOP
        for name, (n, us) in ranked[:top]:
            kernels[name] = [n / iters, us / 1000.0 / iters]
        rest = ranked[top:]
        if rest:
            kernels["(others)"] = [sum(v[0] for _, v in rest) / iters, sum(v[1] for _, v in rest) / 1000.0 / iters]
    return sum(v[1] for v in by_name.values()) / 1000.0 / iters


def first_tensor(v):
    if isinstance(v, torch.Tensor):
        return v
    if isinstance(v, (list, tuple)):
        for x in v:
            t = first_tensor(x)
            if t is not None:
                return t
    if isinstance(v, dict):
        return first_tensor(list(v.values()))
    return None


def rel_error(a, b):
    a, b = first_tensor(a).double(), first_tensor(b).double()
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))


def error_text(e):
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]


def build(name):
    torch.manual_seed(0)
    m, inputs, specs, how, dtype = cases()[name]()
    return m, inputs, specs, how, dtype


def graph_replay(fn, inputs):
    """fn captured into one CUDA graph after warm-up on a side stream; returns the replay callable."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn(*inputs)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn(*inputs)
    return g, out


def first_compiled_call(m, mode, inputs):
    """torch.compile(m, mode) and its first call, synchronized: the compiled function, its output, seconds."""
    t0 = time.perf_counter()
    fn = torch.compile(m, mode=mode)
    out = fn(*inputs)
    sync()
    return fn, out, time.perf_counter() - t0


def on_gpu(name):
    """The named model and inputs on the GPU, at the benchmark's float32 matmul precision."""
    m, inputs, _specs, _how, _dtype = build(name)
    torch.set_float32_matmul_precision(PRECISION)
    return m.cuda(), tuple(x.cuda() for x in inputs)


def compile_peer(d, name):
    m, inputs, specs, how, dtype = build(name)
    r = {"name": name, "dtype": dtype, "inputs": specs, "precision": PRECISION,
         "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32, "torch": torch.__version__,
         "device": torch.cuda.get_device_name(0)}
    # TorchScript for Kiln, the same weights (seeded) as the peers'.
    with torch.no_grad():
        sm = torch.jit.script(m) if how == "script" else torch.jit.trace(m, inputs, check_trace=False)
    sm.save(os.path.join(d, name + ".pt"))
    torch.set_float32_matmul_precision(PRECISION)
    m = m.cuda()
    inputs = tuple(x.cuda() for x in inputs)
    # The guard Kiln and its C++ eager baseline run under (engine/runtime/inference_guard.h).
    with (torch.inference_mode() if os.environ.get("KILN_INFERENCE_MODE") == "1" else torch.no_grad()):
        ref = m(*inputs)
        sp = []
        r["eager_py"] = {"ms": steady_ms(lambda: m(*inputs), spread=sp), "device_ms": device_ms(lambda: m(*inputs))}
        r["eager_py"]["spread"] = sp[0]
        print(name, "eager", r["eager_py"], flush=True)
        for mode in MODES:
            e = {}
            try:
                torch._dynamo.reset()
                _fn, _out, e["cold_s"] = first_compiled_call(m, mode, inputs)
                torch._dynamo.reset()
                fn, out, e["warm_s"] = first_compiled_call(m, mode, inputs)
                e["rel_err"] = rel_error(out, ref)
                sp = []
                e["ms"] = steady_ms(lambda: fn(*inputs), spread=sp)
                e["spread"] = sp[0]
                if mode in ("default", "max-autotune-no-cudagraphs"):
                    g, gout = graph_replay(fn, inputs)
                    g.replay()
                    sync()
                    e["replay_rel_err"] = rel_error(gout, ref)
                    sp = []
                    e["replay_ms"] = steady_ms(g.replay, spread=sp)
                    e["replay_spread"] = sp[0]
                    e["replay_kernels"] = {}
                    e["replay_device_ms"] = device_ms(g.replay, kernels=e["replay_kernels"])
                    del g
                else:
                    e["device_ms"] = device_ms(lambda: fn(*inputs))
            except Exception as ex:  # noqa: BLE001
                e["error"] = error_text(ex)
                e["traceback"] = traceback.format_exc()[-1200:]
            r["inductor_" + mode] = e
            print(name, mode, {k: v for k, v in e.items() if k != "traceback"}, flush=True)
    json.dump(r, open(os.path.join(d, name + ".peer.json"), "w"), indent=1)


def aoti_peer(d, name):
    m, inputs = on_gpu(name)
    r = {"name": name, "concurrent": bool(os.environ.get("KILN_AOTI_CONCURRENT"))}
    try:
        t0 = time.perf_counter()
        with torch.no_grad():
            ep = torch.export.export(m, inputs)
        r["export_s"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        torch._inductor.aoti_compile_and_package(ep, package_path=os.path.join(d, name + ".aoti.pt2"))
        r["compile_s"] = time.perf_counter() - t1
        r["cold_s"] = time.perf_counter() - t0
    except Exception as ex:  # noqa: BLE001
        r["error"] = error_text(ex)
        r["traceback"] = traceback.format_exc()[-1200:]
    print(name, "aoti", {k: v for k, v in r.items() if k != "traceback"}, flush=True)
    json.dump(r, open(os.path.join(d, name + ".aoti.json"), "w"), indent=1)


def cold_peer(d, name, mode):
    """One mode's cold compile alone in this fresh process (empty Inductor cache, nothing compiled before in it),
    after one eager call, as kiln_gpu_bench --cold does on Kiln's side."""
    m, inputs = on_gpu(name)
    r = {"name": name, "mode": mode}
    try:
        with torch.no_grad():
            ref = m(*inputs)
            sync()
            _fn, out, r["cold_s"] = first_compiled_call(m, mode, inputs)
            r["rel_err"] = rel_error(out, ref)
    except Exception as ex:  # noqa: BLE001
        r["error"] = error_text(ex)
        r["traceback"] = traceback.format_exc()[-1200:]
    print(name, "inductor cold", mode, {k: v for k, v in r.items() if k != "traceback"}, flush=True)
    json.dump(r, open(os.path.join(d, f"{name}.cold.inductor.{mode}.json"), "w"), indent=1)


def main():
    what = sys.argv[1]
    if what == "cold":
        cold_peer(sys.argv[2], sys.argv[3], sys.argv[4])
        return
    if what == "list":
        print("\n".join(cases()))
        return
    d, name = sys.argv[2], sys.argv[3]
    os.makedirs(d, exist_ok=True)
    {"compile": compile_peer, "aoti": aoti_peer}[what](d, name)


if __name__ == "__main__":
    main()
