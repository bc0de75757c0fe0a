"""Runs Kiln over the model corpus and prints one table: breaks against Dynamo's, ops lowered, and the error
against eager (and the speed against eager, with --profile) per mode.

    python3 run_corpus.py KILN CORPUS_DIR OUT_DIR [--device cuda] [--modes default,...] [--profile] [--only a,b]

CORPUS_DIR holds make_corpus.py's output (manifest.json beside the models). Every command's output is kept under
OUT_DIR/NAME.*; a model Kiln cannot handle is a row with its error, never a missing row.
"""
import json
import os
import subprocess
import sys
import time


def arg(name, default=None):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def run(cmd, log, timeout):
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = 124, e.stdout or "", (e.stderr or "") + f"\ntimed out after {timeout} s"
        out = out.decode() if isinstance(out, bytes) else out
        err = err.decode() if isinstance(err, bytes) else err
    with open(log, "w") as f:
        f.write(" ".join(cmd) + "\n--- stdout\n" + out + "\n--- stderr\n" + err + f"\n--- exit status {rc}\n")
    return rc, out, err, time.time() - t0


def first_error(err):
    for line in err.splitlines():
        if "error" in line.lower():
            return line.strip()[:160]
    return err.strip().splitlines()[-1][:160] if err.strip() else "no message on stderr"


def input_specs(m):
    """The CLI's -i specs of one call: make_corpus.py writes them as text; make_exported.py (.pt2) as
    [shape, dtype] per argument, every call's arguments in turn ("calls"), integer ids below "vocab"."""
    ins = m["inputs"]
    if not ins or isinstance(ins[0], str):
        return ins
    per_call = len(ins) // max(1, m.get("calls", 1))
    specs = []
    for shape, dtype in ins[:per_call]:
        spec = "x".join(str(d) for d in shape) + ":" + dtype
        if dtype.startswith("int"):
            spec += f"[0,{m.get('vocab', 10)})"
        specs.append(spec)
    return specs


def main():
    kiln, corpus, out = sys.argv[1], sys.argv[2], sys.argv[3]
    device = arg("--device", "cuda")
    modes = arg("--modes", "default").split(",")
    only = set(arg("--only").split(",")) if arg("--only") else None
    timeout = int(arg("--timeout", "120"))
    os.makedirs(out, exist_ok=True)
    manifest = json.load(open(os.path.join(corpus, "manifest.json")))
    rows = []
    for m in manifest["models"]:
        name = m["name"]
        if only and name not in only:
            continue
        row = {"name": name, "dtype": m.get("dtype", "float32"), "dynamo_breaks": m.get("dynamo", {}).get("breaks", "?")}
        if "error" in m:
            row["note"] = "not saved: " + m["error"][:120]
            rows.append(row)
            continue
        model = os.path.join(corpus, m["file"])
        ins = []
        for s in input_specs(m):
            ins += ["-i", s]
        rc, o, e, _ = run([kiln, "explain", model, *ins, "--json"], os.path.join(out, name + ".explain.log"), timeout)
        if rc == 0:
            try:
                d = json.loads(o)
                row["kiln_breaks"] = d.get("break_count")
                row["break_ids"] = sorted({b.get("id", "?") for b in d.get("graph_breaks", [])})
            except json.JSONDecodeError:
                row["kiln_breaks"] = "bad json"
        else:
            row["kiln_breaks"] = "fail"
            row["note"] = f"explain (exit status {rc}): " + first_error(e)
        for mode in (modes[:1] if "--profile" in sys.argv else modes):
            rc, o, e, secs = run([kiln, "compile", model, *ins, "--device", device, "--mode", mode, "--checks", "2", "--json"],
                                 os.path.join(out, f"{name}.{mode}.log"), timeout)
            cell = "fail"
            try:
                d = json.loads(o)
                ops = sum(r.get("graph_ops", 0) for r in d.get("regions", []))
                # A region that ran eagerly (its note says why) lowered nothing.
                fb = sum(r.get("graph_ops", 0) if r.get("note") else len(r.get("fallbacks", [])) for r in d.get("regions", []))
                notes = [r["note"] for r in d.get("regions", []) if r.get("note")]
                if notes:
                    row.setdefault("note", notes[0][:120])
                row["ops"] = ops
                row["lowered"] = f"{100.0 * (ops - fb) / ops:.0f}% ({fb} fb)" if ops else "0 ops"
                c = d.get("check", {})
                cell = f"{c.get('max_rel_error', float('nan')):.1e}{'' if c.get('ok') else ' MISMATCH'}"
                if c.get("eager_constant"):
                    # The comparison proves nothing when eager's output does not depend on the input.
                    cell += " BLIND"
                    row.setdefault("note", "eager output constant (zero weights?): the check cannot fail")
            except (json.JSONDecodeError, TypeError, ValueError):
                row.setdefault("note", f"{mode}: " + first_error(e))
            row[mode] = cell
        if "--profile" in sys.argv:
            # Every mode in one session: steady-state speed vs eager and error vs eager per mode.
            session = os.path.join(out, name + ".kiln")
            rc, o, e, _ = run([kiln, "profile", model, *ins, "--device", device, "--modes", "eager," + ",".join(modes),
                               "--iters", "30", "-o", session], os.path.join(out, name + ".profile.log"), timeout * 3)
            rj = os.path.join(out, name + ".report.json")
            run([kiln, "report", session, "--format", "json", "-o", rj], os.path.join(out, name + ".report.log"), 60)
            try:
                for r in json.load(open(rj))["runs"]:
                    if r.get("backend") not in ("kiln", "eager"):
                        continue
                    if r.get("peak_memory_bytes"):
                        row["mem_" + r["mode"]] = f"{r['peak_memory_bytes'] / 2**20:.1f}"
                    if r["mode"] == "eager":
                        continue
                    ok = r.get("status") == "ok"
                    row["speed_" + r["mode"]] = f"{r.get('speedup_vs_eager', 0):.2f}x" if ok else r.get("status", "?")[:40]
                    if ok and r["mode"] not in row:
                        row[r["mode"]] = f"{r.get('max_rel_error', float('nan')):.1e}"
            except (OSError, json.JSONDecodeError, KeyError):
                row.setdefault("note", "profile: " + first_error(e))
        rows.append(row)
        print(json.dumps(row), flush=True)
    with open(os.path.join(out, "corpus.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print(f"\nModel corpus on {device} (torch {manifest.get('torch')}): breaks Kiln/Dynamo, ops lowered, max rel error per mode")
    speed = "--profile" in sys.argv
    print("| model | dtype | breaks K/D | lowered | " + " | ".join(f"err {m}" for m in modes)
          + ("".join(f" | speed {m}" for m in modes) + " | peak MiB " + "/".join(["eager", *modes]) if speed else "")
          + " | note |")
    print("|---|---|---|---|" + "---|" * len(modes) * (2 if speed else 1) + ("---|" if speed else "") + "---|")
    for r in rows:
        print(f"| {r['name']} | {r['dtype']} | {r.get('kiln_breaks', '-')}/{r['dynamo_breaks']} | {r.get('lowered', '-')} | "
              + " | ".join(str(r.get(m, "-")) for m in modes)
              + ("".join(f" | {r.get('speed_' + m, '-')}" for m in modes)
                 + " | " + " / ".join(r.get("mem_" + m, "-") for m in ["eager", *modes]) if speed else "")
              + f" | {r.get('note', '')} |")


if __name__ == "__main__":
    main()
