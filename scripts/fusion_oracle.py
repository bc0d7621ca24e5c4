"""Record what TVM's fusion passes do on TVMScript modules, as an oracle for
`relax-transform`'s `fuse-ops` (see crates/transform/tests/oracle.rs).

For each module: LegalizeOps, AnnotateTIROpPattern (the `op_pattern` of every
PrimFunc), then FuseOps: the groups, each as the list of PrimFuncs its
`Primitive` function calls, in order.

Usage (needs apache-tvm 0.27 in the Python environment):
    python scripts/fusion_oracle.py OUT.jsonl MODULE.py [MODULE.py ...]
"""

import json
import os
import sys

import tvm
from tvm import relax


def primitive_groups(mod):
    groups = []
    for gv, func in mod.functions.items():
        if not isinstance(func, relax.Function):
            continue
        if func.attrs is None or "Primitive" not in func.attrs:
            continue
        callees = []

        def visit(e):
            if isinstance(e, relax.Call) and e.op == tvm.ir.Op.get("relax.call_tir"):
                callees.append(e.args[0].name_hint)

        relax.analysis.post_order_visit(func.body, visit)
        groups.append(callees)
    return sorted(groups)


def main():
    out = sys.argv[1]
    with open(out, "w") as f:
        for path in sys.argv[2:]:
            src = open(path).read()
            mod = tvm.script.from_source(src)
            mod = relax.transform.LegalizeOps()(mod)
            mod = relax.transform.AnnotateTIROpPattern()(mod)
            patterns = {
                gv.name_hint: int(func.attrs["op_pattern"])
                for gv, func in mod.functions.items()
                if isinstance(func, tvm.tirx.PrimFunc) and func.attrs is not None and "op_pattern" in func.attrs
            }
            fused = relax.transform.FuseOps()(mod)
            rec = {
                "module": os.path.basename(path),
                "op_patterns": patterns,
                "groups": primitive_groups(fused),
            }
            f.write(json.dumps(rec, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
