"""The peer: torch.compile (Inductor) on the benchmark's models, same inputs, same modes.

python3 inductor_peer.py OUT.json [mode ...]. Cold compile = first call with an empty Inductor cache
(TORCHINDUCTOR_CACHE_DIR set fresh by the caller); warm = after torch._dynamo.reset(), a second
compile that hits Inductor's on-disk caches. Steady state: CUDA events, median of 100 after warm-up.
"""
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
from models import CASES  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
out_path = sys.argv[1]
modes = sys.argv[2:] or ["default", "reduce-overhead"]
only = os.environ.get("KILN_BENCH_ONLY", "")
results = {}


def steady_ms(fn, x, iters=100):
    for _ in range(10):
        fn(x)
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn(x)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


for name, ctor, shape in CASES:
    if only and name not in only.split(","):
        continue
    torch.manual_seed(0)
    model = ctor().eval().cuda()
    x = torch.randn(*shape, device="cuda")
    r = {}
    with torch.no_grad():
        r["eager_ms"] = steady_ms(model, x)
        for mode in modes:
            torch._dynamo.reset()
            t0 = time.perf_counter()
            fn = torch.compile(model, mode=mode)
            fn(x)
            torch.cuda.synchronize()
            cold = time.perf_counter() - t0
            torch._dynamo.reset()
            t0 = time.perf_counter()
            fn = torch.compile(model, mode=mode)
            fn(x)
            torch.cuda.synchronize()
            warm = time.perf_counter() - t0
            r[mode] = {"ms": steady_ms(fn, x), "cold_s": cold, "warm_s": warm}
            print(name, mode, r[mode], flush=True)
    results[name] = r
    json.dump(results, open(out_path, "w"), indent=1)
print(json.dumps(results, indent=1))
