#!/usr/bin/env python3
"""Compare `relax run` with Apache TVM on random programs of the differential generator.

Never part of CI: it needs a Python with apache-tvm (0.27) and numpy.

1. Dump programs:
   RELAX_DIFF_PROGRAMS=500 RELAX_DIFF_DUMP=/tmp/diff \
     cargo test --release -p relax-engine --test differential -- --nocapture
2. Compare:
   PYTHON_WITH_TVM scripts/compare_tvm.py /tmp/diff [--relax target/release/relax] [--device cpu]

Each `caseN.py` (a TVMScript module) is built by TVM for `llvm` and run by its VM on
`caseN.json` (the inputs); the same files go through `relax run --json`. Integers must
match exactly, floats within 1e-3 relative (NaN equals NaN). The script prints one line
per disagreement or failure and the counts at the end; exit 1 when anything disagrees.
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np


def tvm_run(text, inputs):
    import tvm
    from tvm import relax

    # from_source parses the module itself; the import lines are for humans.
    body = "\n".join(l for l in text.splitlines() if not l.startswith(("from ", "import ")))
    mod = tvm.script.from_source(body)
    ex = tvm.compile(mod, target="llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    to_dev = getattr(tvm.runtime, "tensor", None) or tvm.nd.array
    out = vm["main"](*[to_dev(a) for a in inputs])
    flat = []

    def walk(v):
        if isinstance(v, (list, tuple)) or type(v).__name__ in ("Array", "ADT", "Tuple"):
            for f in v:
                walk(f)
        else:
            flat.append(v.numpy())

    walk(out)
    return flat


def tvm_run_isolated(path, inputs_json, tmp):
    """TVM in a child process: its compiled code can trap (SIGFPE on an integer
    division by zero) and that must not end the comparison."""
    out = os.path.join(tmp, "tvm_out.npz")
    if os.path.exists(out):
        os.remove(out)
    r = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--tvm-one", path, inputs_json, out],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if r.returncode < 0:
        raise RuntimeError(f"TVM process killed by signal {-r.returncode}")
    if r.returncode != 0:
        lines = r.stderr.strip().splitlines()
        raise RuntimeError(lines[-1] if lines else f"exit {r.returncode}")
    z = np.load(out)
    return [z[f"r{i}"] for i in range(len(z.files))]


def tvm_one(path, inputs_json, out):
    with open(path) as f:
        text = f.read()
    with open(inputs_json) as f:
        raw = json.load(f)
    inputs = [np.array(i["data"], dtype=i["dtype"]).reshape(i["shape"]) for i in raw]
    res = tvm_run(text, inputs)
    np.savez(out, **{f"r{i}": a for i, a in enumerate(res)})


def ours_run(relax_bin, path, inputs_json, device):
    r = subprocess.run(
        [relax_bin, "run", path, "--inputs-json", inputs_json, "--json", "--device", device],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}")
    outs = json.loads(r.stdout)["outputs"]
    res = []
    for o in outs:
        data = o["data"]
        arr = np.array(data, dtype=object)
        fl = np.vectorize(lambda x: float(x) if not isinstance(x, str) else float(x))(arr) if arr.size else arr
        res.append(np.asarray(fl, dtype=np.float64).reshape(o["shape"]))
    return res


def agree(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return False, f"shape {a.shape} vs {b.shape}"
    both_nan = np.isnan(a) & np.isnan(b)
    ok = both_nan | (a == b) | (np.abs(a - b) <= 1e-3 * np.maximum(np.maximum(np.abs(a), np.abs(b)), 1.0))
    if ok.all():
        return True, ""
    i = int(np.argmin(ok.reshape(-1)))
    return False, f"element {i}: tvm {b.reshape(-1)[i]} ours {a.reshape(-1)[i]}"


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--tvm-one":
        tvm_one(*sys.argv[2:])
        return 0
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--relax", default=os.path.join("target", "release", "relax"))
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    cases = sorted(glob.glob(os.path.join(args.dir, "case*.py")), key=lambda p: int(p.split("case")[-1][:-3]))
    counts = {"programs": 0, "agree": 0, "disagree": 0, "tvm_error": 0, "ours_error": 0, "both_error": 0}
    tmp = tempfile.mkdtemp()
    for path in cases:
        counts["programs"] += 1
        name = os.path.basename(path)[:-3]
        with open(path[:-3] + ".json") as f:
            raw = json.load(f)
        inputs = [np.array(i["data"], dtype=i["dtype"]).reshape(i["shape"]) for i in raw]
        nested = os.path.join(tmp, name + ".json")
        with open(nested, "w") as f:
            json.dump([{"dtype": i["dtype"], "shape": i["shape"], "data": a.tolist()} for i, a in zip(raw, inputs)], f)
        tvm_err = ours_err = None
        try:
            theirs = tvm_run_isolated(path, nested, tmp)
        except Exception as e:  # noqa: BLE001 - any TVM failure is a finding
            tvm_err = str(e)
        try:
            ours = ours_run(args.relax, path, nested, args.device)
        except Exception as e:  # noqa: BLE001
            ours_err = str(e)
        if tvm_err and ours_err:
            counts["both_error"] += 1
            print(f"{name}: both fail: tvm: {tvm_err} | ours: {ours_err}")
            continue
        if tvm_err:
            counts["tvm_error"] += 1
            print(f"{name}: TVM fails, ours runs: {tvm_err}")
            continue
        if ours_err:
            counts["ours_error"] += 1
            print(f"{name}: ours fails, TVM runs: {ours_err}")
            continue
        if len(ours) != len(theirs):
            counts["disagree"] += 1
            print(f"{name}: {len(ours)} results vs TVM's {len(theirs)}")
            continue
        bad = [(k, why) for k, (a, b) in enumerate(zip(ours, theirs)) for ok, why in [agree(a, b)] if not ok]
        if bad:
            counts["disagree"] += 1
            print(f"{name}: result {bad[0][0]}: {bad[0][1]}")
        else:
            counts["agree"] += 1
    print(json.dumps(counts))
    return 0 if counts["disagree"] == 0 and counts["ours_error"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
