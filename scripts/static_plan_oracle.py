"""Record what TVM's StaticPlanBlockMemory (and CallTIRRewrite) do on the modules of
TVM's own tests, as an oracle for `relax-transform`'s `static-plan-block-memory`
and `call-tir-rewrite` (see crates/transform/tests/static_plan_oracle.rs).

The test file is run with the pass wrapped: every module it is applied to and
the module it returns are written as TVMScript (one JSON line per application);
the test's own expectations are not checked (the installed TVM is the oracle).

Usage (needs apache-tvm 0.27 in the Python environment; the test files come
from apache/tvm's tests/python/relax/):
    python scripts/static_plan_oracle.py OUT.jsonl \
        test_transform_static_plan_block_memory.py [test_transform.py ...]
"""

import importlib.util
import json
import os
import sys
import traceback

import tvm
from tvm import relax

PASSES = {
    "StaticPlanBlockMemory": "static-plan-block-memory",
    "CallTIRRewrite": "call-tir-rewrite",
}


def pytest_stub():
    """A minimal `pytest` (raises, mark) for running test files without it."""
    import contextlib
    import types

    mod = types.ModuleType("pytest")

    @contextlib.contextmanager
    def raises(exc, match=None):
        try:
            yield
        except exc:
            return
        raise AssertionError(f"did not raise {exc}")

    class Mark:
        def __getattr__(self, _name):
            return lambda *a, **k: (a[0] if len(a) == 1 and callable(a[0]) and not k else (lambda f: f))

    mod.raises = raises
    mod.mark = Mark()
    mod.fixture = lambda *a, **k: (a[0] if a and callable(a[0]) else (lambda f: f))
    return mod


def main():
    if importlib.util.find_spec("pytest") is None:
        sys.modules["pytest"] = pytest_stub()
    out, tests = sys.argv[1], sys.argv[2:]
    records = []
    current = {"test": None}
    originals = {name: getattr(relax.transform, name) for name in PASSES}

    def wrap(name):
        def make(*a, **k):
            inner = originals[name](*a, **k)

            def run(mod):
                rec = {
                    "file": current["file"],
                    "test": current["test"],
                    "pass": PASSES[name],
                    "input": mod.script(),
                }
                try:
                    res = inner(mod)
                    rec["output"] = res.script()
                except Exception as e:  # the pass rejects the module
                    rec["error"] = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
                    records.append(rec)
                    raise
                records.append(rec)
                return res

            return run

        return make

    for name in PASSES:
        setattr(relax.transform, name, wrap(name))
    tvm.ir.assert_structural_equal = lambda *a, **k: None
    for path in tests:
        spec = importlib.util.spec_from_file_location("t_" + os.path.basename(path)[:-3], path)
        m = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = m  # TVMScript reads the source through it
        spec.loader.exec_module(m)
        current["file"] = os.path.basename(path)
        for tname in sorted(n for n in dir(m) if n.startswith("test_")):
            f = getattr(m, tname)
            if not callable(f):
                continue
            current["test"] = tname
            try:
                f()
            except Exception:  # pytest.raises cases and tests needing pytest fixtures
                traceback.print_exc(limit=1)
    with open(out, "w") as fh:
        for r in records:
            fh.write(json.dumps(r, sort_keys=True) + "\n")
    print(f"{len(records)} applications recorded")


if __name__ == "__main__":
    main()
