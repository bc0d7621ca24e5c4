"""Record what TVM's own passes do on the modules of TVM's own tests of those passes,
as an oracle for `relax-transform` (see crates/transform/tests/pass_oracle.rs).

TVM's test files are run with pytest, with FoldConstant, DeadCodeElimination, FuseOps
and FuseTIR replaced by recording wrappers: whenever a test applies one of them, the
module it is given and the module TVM returns (or TVM's error) are written as one JSON
line. The installed TVM wheel is the oracle; the tests' own expectations are not used,
only whether each test passed (`tvm_test_passed`).

Each line: {"test": nodeid, "pass": name, "args": the pass's arguments,
"input": TVMScript, "output": TVMScript or null, "error": message or null,
"tvm_test_passed": bool}. Identical (pass, args, input) cases are kept once.

The committed crates/transform/tests/data/pass_oracle.jsonl was made with apache-tvm
0.27.0.post1 from the test files of apache/tvm commit 5d4dc8721307 (test_transform_
fold_constant, _dead_code_elimination, _fuse_ops and _fuse_tir).

Usage (apache-tvm 0.27 and pytest importable; the test files from TVM's
tests/python/relax/):
    python scripts/pass_oracle.py OUT.jsonl test_transform_fold_constant.py ...
"""

import base64
import json
import re
import struct
import sys

import pytest
import tvm
from tvm import relax

PASSES = ["FoldConstant", "DeadCodeElimination", "FuseOps", "FuseTIR"]

# Constants larger than this many bytes make a case too big to keep.
MAX_TEXT = 200_000


INLINE_SCALARS = {"int8", "int16", "int32", "int64", "float16", "float32", "float64", "bool"}
NDARRAY_MAGIC = 0xDD5E40F096B4A13F
META_REF = re.compile(r'metadata\["ir\.GenericConst"\]\[(\d+)\]')


def constants_in_print_order(mod, names):
    """The module's tensor constants that the printer puts in the metadata section, in
    the order it numbers them: functions in printed order, each expression in the order
    its text is printed; one entry per constant object."""
    found = []

    def add(c):
        if c.value.ndim == 0 and str(c.value.dtype) in INLINE_SCALARS:
            return
        if not any(c.same_as(x) for x in found):
            found.append(c)

    def visit(e):
        if isinstance(e, tvm.ir.expr.Constant):
            add(e)
        elif isinstance(e, relax.Call):
            if isinstance(e.op, relax.Expr):
                visit(e.op)
            for a in e.args:
                visit(a)
        elif isinstance(e, relax.Tuple):
            for f in e.fields:
                visit(f)
        elif isinstance(e, relax.TupleGetItem):
            visit(e.tuple_value)
        elif isinstance(e, relax.If):
            visit(e.cond)
            visit(e.true_branch)
            visit(e.false_branch)
        elif isinstance(e, relax.SeqExpr):
            for b in e.blocks:
                for binding in b.bindings:
                    visit(binding.value)
            visit(e.body)
        elif isinstance(e, relax.Function):
            visit(e.body)

    for name in names:
        f = mod[name]
        if isinstance(f, relax.Function):
            visit(f)
    return found


def encode_tensor(t):
    """A tensor in TVM's NDArray save format, base64 (what a metadata section holds)."""
    arr = t.numpy()
    dt = tvm.runtime.DataType(str(t.dtype))
    head = struct.pack("<QQiii", NDARRAY_MAGIC, 0, 1, 0, arr.ndim)
    head += struct.pack("<BBH", int(dt.type_code), dt.bits, dt.lanes)
    head += struct.pack(f"<{arr.ndim}q", *arr.shape)
    data = arr.tobytes()
    return base64.b64encode(head + struct.pack("<q", len(data)) + data).decode()


def script(mod):
    """The module's TVMScript with its tensor constants in a metadata section.

    This wheel's `script(show_meta=True)` crashes on tensor constants, so the section
    is written here, in the format `tvm.ir.load_json` reads, from the constants in the
    printer's numbering. A text whose references do not match them raises ValueError.
    """
    text = mod.script(show_meta=False)
    refs = [int(m) for m in META_REF.findall(text)]
    if not refs:
        return text
    first = list(dict.fromkeys(refs))
    if first != list(range(len(first))):
        raise ValueError("metadata references out of order")
    names = re.findall(r"^    def (\w+)\(", text, flags=re.M)
    consts = constants_in_print_order(mod, names)
    if len(consts) != len(first):
        raise ValueError(f"{len(first)} metadata references but {len(consts)} constants")
    nodes = [{"type_key": ""}, {"type_key": "Map", "keys": ["ir.GenericConst"], "data": [2]}]
    nodes.append({"type_key": "Array", "data": list(range(3, 3 + len(consts)))})
    for i in range(len(consts)):
        nodes.append({"type_key": "relax.expr.Constant", "attrs": {"data": str(i)}})
    meta = {"root": 1, "nodes": nodes, "b64ndarrays": [encode_tensor(c.value) for c in consts]}
    text = re.sub(r"^# Metadata omitted\..*$", "", text, flags=re.M)
    return text.rstrip() + '\n\nmetadata = tvm.ir.load_json("""' + json.dumps(meta) + '""")\n'


def jsonable(v):
    """A pass argument as JSON (lists and strings as they are, others by repr)."""
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if isinstance(v, (list, tuple)) or type(v).__name__ == "Array":
        return [jsonable(x) for x in v]
    return repr(v)


class Recorder:
    """A pytest plugin that wraps the passes and collects the cases."""

    def __init__(self):
        self.cases = []
        self.seen = set()
        self.current = None
        self.skipped = {}

    def wrap(self, name, real_factory):
        rec = self

        def factory(*args, **kwargs):
            real = real_factory(*args, **kwargs)
            pargs = {"args": [jsonable(a) for a in args], "kwargs": {k: jsonable(v) for k, v in kwargs.items()}}

            def run(mod, _ctx):
                try:
                    inp = script(mod)
                except Exception as e:  # noqa: BLE001
                    rec.skip(f"{name}: input does not print: {type(e).__name__}: {e}")
                    return real(mod)
                try:
                    out = real(mod)
                except Exception as e:
                    rec.add(name, pargs, inp, None, f"{type(e).__name__}: {e}"[:2000])
                    raise
                try:
                    rec.add(name, pargs, inp, script(out), None)
                except Exception as e:  # noqa: BLE001
                    rec.skip(f"{name}: output does not print: {type(e).__name__}: {e}")
                return out

            return tvm.transform.module_pass(run, opt_level=0, name=f"Recorded{name}")

        return factory

    def skip(self, why):
        self.skipped[why] = self.skipped.get(why, 0) + 1

    def add(self, name, pargs, inp, out, err):
        if len(inp) > MAX_TEXT or (out is not None and len(out) > MAX_TEXT):
            self.skip(f"{name}: over {MAX_TEXT} characters")
            return
        key = (name, json.dumps(pargs, sort_keys=True), inp)
        if key in self.seen:
            return
        self.seen.add(key)
        self.cases.append(
            {
                "test": self.current,
                "pass": name,
                "args": pargs,
                "input": inp,
                "output": out,
                "error": err,
                "tvm_test_passed": None,
            }
        )

    def pytest_configure(self, config):
        for name in PASSES:
            setattr(relax.transform, name, self.wrap(name, getattr(relax.transform, name)))

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        self.current = item.nodeid.split("/")[-1]
        first = len(self.cases)
        outcome = yield
        passed = outcome.excinfo is None
        for c in self.cases[first:]:
            c["tvm_test_passed"] = passed
        self.current = None


def main():
    out = sys.argv[1]
    files = sys.argv[2:]
    rec = Recorder()
    code = pytest.main(["-q", "-p", "no:cacheprovider", *files], plugins=[rec])
    with open(out, "w") as f:
        for c in rec.cases:
            f.write(json.dumps(c, sort_keys=True) + "\n")
    by_pass = {}
    for c in rec.cases:
        by_pass[c["pass"]] = by_pass.get(c["pass"], 0) + 1
    print(f"pytest exit code {int(code)}; cases: {by_pass}; not recorded: {rec.skipped}", file=sys.stderr)


if __name__ == "__main__":
    main()
