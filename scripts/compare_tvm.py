#!/usr/bin/env python3
"""Run the random programs dumped by the differential test with Apache TVM and compare
with our host results. Never part of CI; needs a venv with apache-tvm and numpy.

    RELAX_DIFF_DUMP=/tmp/diff RELAX_DIFF_PROGRAMS=500 \\
        cargo test --release -p relax-engine --test differential -- --nocapture
    /path/to/venv/bin/python scripts/compare_tvm.py /tmp/diff

Each caseN.py is parsed by TVM, legalized and compiled for `llvm`, run on the dumped
inputs, and every output compared with ours: exactly for integers, with rtol 1e-4 /
atol 1e-5 for floats (NaN equals NaN). Prints a summary and every disagreement; a
program that crashes TVM itself is reported as such (each runs in a worker process).
"""
import glob
import json
import os
import re
import subprocess
import sys

import numpy as np
import tvm
import tvm.script
from tvm import relax

def to_tvm(a):
    for make in ("tensor", "ndarray"):
        f = getattr(tvm.runtime, make, None)
        if f is not None:
            try:
                return f(a) if make == "tensor" else f.array(a)
            except Exception:
                pass
    return tvm.nd.array(a)


def flatten(v):
    if isinstance(v, (list, tuple)) or type(v).__name__ in ("Array", "ADT"):
        out = []
        for x in v:
            out.extend(flatten(x))
        return out
    return [v.numpy()]


def run_case(path):
    parsed = tvm.script.from_source(open(path).read())
    mod = parsed if isinstance(parsed, tvm.IRModule) else tvm.IRModule({"main": parsed})
    mod = relax.transform.LegalizeOps()(mod)
    ex = tvm.compile(mod, target="llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    stem = path[:-3]
    inputs = sorted(glob.glob(stem + "_in*.npy"), key=lambda p: int(re.search(r"_in(\d+)\.npy$", p).group(1)))
    args = [to_tvm(np.load(p)) for p in inputs]
    return flatten(vm["main"](*args))


def compare(path):
    """One line of JSON for case `path`: whether TVM ran it, values compared, findings."""
    stem = path[:-3]
    try:
        outs = run_case(path)
    except Exception as e:  # TVM rejected or failed: report, go on
        lines = [l for l in str(e).strip().splitlines() if l.strip() and not l.strip().startswith(("|", "-->", "^"))]
        return {"ran": False, "values": 0, "findings": ["TVM error: " + (lines[-1] if lines else type(e).__name__)[:200]]}
    ours = sorted(glob.glob(stem + "_out*.npy"), key=lambda p: int(re.search(r"_out(\d+)\.npy$", p).group(1)))
    if len(ours) != len(outs):
        return {"ran": True, "values": 0, "findings": [f"{len(ours)} results here, {len(outs)} from TVM"]}
    findings, values = [], 0
    for k, (o, t) in enumerate(zip(ours, outs)):
        a = np.load(o)
        t = np.asarray(t).astype(np.float64)
        if a.shape != t.shape:
            findings.append(f"result {k}: shape {a.shape} here, {t.shape} from TVM")
            continue
        if os.path.exists(o[:-4] + ".int"):
            same = np.array_equal(a, t)
        else:
            same = np.allclose(a, t, rtol=1e-4, atol=1e-5, equal_nan=True)
        values += a.size
        if not same:
            bad = int(np.argmax(np.abs(np.nan_to_num(a) - np.nan_to_num(t))))
            findings.append(f"result {k}[{bad}]: ours {a.flat[bad]}, TVM {t.flat[bad]}")
    return {"ran": True, "values": values, "findings": findings}


def main():
    if sys.argv[1] == "--worker":
        # Compare the cases named on stdin, one JSON line each (a crash of TVM ends
        # this process; the parent notes the case and starts a new worker).
        for line in sys.stdin:
            print(json.dumps(compare(line.strip())), flush=True)
        return
    d = sys.argv[1]
    cases = sorted(glob.glob(os.path.join(d, "case*.py")), key=lambda p: int(re.search(r"case(\d+)\.py$", p).group(1)))
    ran = agreed = values = 0
    failures = []
    i = 0
    while i < len(cases):
        proc = subprocess.Popen([sys.executable, __file__, "--worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        proc.stdin.write("".join(c + "\n" for c in cases[i:]))
        proc.stdin.close()
        for line in proc.stdout:
            r = json.loads(line)
            ran += r["ran"]
            values += r["values"]
            agreed += r["ran"] and not r["findings"]
            failures.extend((cases[i], f) for f in r["findings"])
            i += 1
        code = proc.wait()
        if i < len(cases) and code != 0:
            failures.append((cases[i], f"TVM crashed (exit status {code})"))
            i += 1
    print(f"{len(cases)} programs, {ran} run by TVM, {agreed} agree ({values} values compared), {len(failures)} findings")
    for path, why in failures:
        print(f"  {os.path.basename(path)}: {why}")


if __name__ == "__main__":
    main()
