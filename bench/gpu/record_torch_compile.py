"""Records real torch.compile runs of a corpus model, for comparing Kiln with Inductor module by module.

    python3 record_torch_compile.py MODEL OUT_DIR [--modes default,reduce-overhead,max-autotune] [--iters 10]
    python3 record_torch_compile.py list        the model names, one per line

MODEL is a name of peer_bench.py's cases (bench/gpu/models.py and make_corpus.py's cases(False): resnet18,
bert_embeds, ...). Writes
    OUT_DIR/MODEL.pt                 the TorchScript file Kiln profiles (same seeded weights)
    OUT_DIR/MODEL.inputs             its Kiln input specs, one per line ("8x3x224x224:float32")
    OUT_DIR/MODE/trace/              TORCH_TRACE logs of torch.compile(model, mode=MODE)
    OUT_DIR/MODE/profile.json        torch.profiler's Chrome (Kineto) trace: `iters` steady-state iterations
                                     after warm-up, one ProfilerStep per iteration
    OUT_DIR/record.json              what was recorded: torch version, device, per mode its status or error
Each mode runs in its own process, because TORCH_TRACE is read when torch is imported: the environment variable
is set for the child before it starts. A mode that fails is recorded with its error; the others still run.
Then: `kiln import OUT_DIR/MODE/trace OUT_DIR/MODE/profile.json -o inductor.kiln`, `kiln profile OUT_DIR/MODEL.pt`
and `kiln diff` (scripts/record-compare runs the whole sequence).
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_MODES = "default,reduce-overhead,max-autotune"


def usage(code):
    sys.stderr.write(__doc__)
    sys.exit(code)


def parse(argv):
    """(model, out_dir, modes, iters) from the command line."""
    args = list(argv)
    modes, iters = DEFAULT_MODES, 10
    rest = []
    while args:
        a = args.pop(0)
        if a in ("-h", "--help"):
            usage(0)
        elif a == "--modes" and args:
            modes = args.pop(0)
        elif a.startswith("--modes="):
            modes = a.split("=", 1)[1]
        elif a == "--iters" and args:
            iters = int(args.pop(0))
        elif a.startswith("--iters="):
            iters = int(a.split("=", 1)[1])
        else:
            rest.append(a)
    if len(rest) != 2:
        usage(2)
    modes = [m.strip() for m in modes.split(",") if m.strip()]
    if not modes or iters < 1:
        usage(2)
    return rest[0], os.path.abspath(rest[1]), modes, iters


# ---- the child processes (torch is imported only here) ----


def build(name):
    sys.path.insert(0, HERE)
    import peer_bench  # noqa: E402  (its cases() and seeding)

    return peer_bench.build(name)


def write_torchscript(name, out_dir):
    import torch

    m, inputs, specs, how, dtype = build(name)
    with torch.no_grad():
        sm = torch.jit.script(m) if how == "script" else torch.jit.trace(m, inputs, check_trace=False)
    sm.save(os.path.join(out_dir, name + ".pt"))
    with open(os.path.join(out_dir, name + ".inputs"), "w") as f:
        f.write("\n".join(specs) + "\n")
    return {"torch": torch.__version__, "dtype": dtype, "inputs": specs, "how": how}


def record_mode(name, out_dir, mode, iters):
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    precision = os.environ.get("KILN_BENCH_PRECISION", "highest")
    torch.set_float32_matmul_precision(precision)
    m, inputs, _specs, _how, _dtype = build(name)
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    m = m.to(device)
    inputs = tuple(x.to(device) for x in inputs)

    def sync():
        if cuda:
            torch.cuda.synchronize()

    with torch.no_grad():
        fn = torch.compile(m, mode=mode)
        for _ in range(5):  # compile, then warm up (reduce-overhead records its CUDA graph here)
            fn(*inputs)
        sync()
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
        # One cycle (repeat=1), written when it ends: a profiler whose schedule repeats clears its events at
        # the end of each cycle, and exporting after the block would write an empty one.
        path = os.path.join(out_dir, mode, "profile.json")
        with profile(activities=activities, schedule=schedule(wait=0, warmup=1, active=iters, repeat=1),
                     on_trace_ready=lambda prof: prof.export_chrome_trace(path)) as p:
            for _ in range(iters + 2):
                fn(*inputs)
                sync()
                p.step()
    return {"device": torch.cuda.get_device_name(0) if cuda else "cpu", "precision": precision, "iters": iters}


def child(argv):
    kind, name, out_dir = argv[0], argv[1], argv[2]
    if kind == "torchscript":
        result = write_torchscript(name, out_dir)
    else:
        result = record_mode(name, out_dir, argv[3], int(argv[4]))
    print("RESULT " + json.dumps(result), flush=True)


# ---- the parent: no torch import, so each child's TORCH_TRACE is its own ----


def run_child(args, env):
    """Runs this script as a child; returns (result dict or None, error text or None)."""
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child"] + args, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    result = None
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            result = json.loads(line[len("RESULT "):])
        else:
            print("  " + line, flush=True)
    if p.returncode != 0 or result is None:
        tail = [l for l in p.stdout.splitlines() if l.strip()][-1:] or ["(no output)"]
        return None, "exit status %d: %s" % (p.returncode, tail[0][:300])
    return result, None


def main(argv):
    if argv and argv[0] == "--child":
        child(argv[1:])
        return 0
    if argv == ["list"]:
        sys.path.insert(0, HERE)
        import peer_bench

        print("\n".join(sorted(peer_bench.cases())))
        return 0
    name, out_dir, modes, iters = parse(argv)
    os.makedirs(out_dir, exist_ok=True)
    env = dict(os.environ)
    env.pop("TORCH_TRACE", None)
    record = {"model": name, "modes": {}}
    print("recording %s into %s: TorchScript" % (name, out_dir), flush=True)
    result, error = run_child(["torchscript", name, out_dir], env)
    if error:
        record["torchscript_error"] = error
        print("TorchScript failed: " + error, file=sys.stderr)
    else:
        record.update(result)
    for mode in modes:
        trace = os.path.join(out_dir, mode, "trace")
        os.makedirs(trace, exist_ok=True)
        mode_env = dict(env)
        mode_env["TORCH_TRACE"] = trace
        mode_env.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(out_dir, mode, "inductor_cache"))
        print("recording %s: torch.compile mode=%s" % (name, mode), flush=True)
        result, error = run_child(["mode", name, out_dir, mode, str(iters)], mode_env)
        record["modes"][mode] = {"error": error} if error else dict(result, status="ok")
        if error:
            print("mode %s failed: %s" % (mode, error), file=sys.stderr)
    with open(os.path.join(out_dir, "record.json"), "w") as f:
        json.dump(record, f, indent=1)
    ok = [m for m in modes if "error" not in record["modes"][m]]
    print("recorded %d of %d mode(s) of %s: %s" % (len(ok), len(modes), name, ", ".join(ok) or "none"), flush=True)
    return 0 if ok and "torchscript_error" not in record else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
