# Single-head attention: softmax(Q K^T / sqrt(d)) V with a symbolic sequence length `s`
# and head size d = 16.
# from tvm.script import ir as I
# from tvm.script import tir as T
# from tvm.script import relax as R


@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def scores(var_q: T.handle, var_k: T.handle, var_out: T.handle):
        s = T.int64()
        q = T.match_buffer(var_q, (s, T.int64(16)))
        k = T.match_buffer(var_k, (s, T.int64(16)))
        out = T.match_buffer(var_out, (s, s))
        for i, j, r in T.grid(s, s, T.int64(16)):
            with T.sblock("qk"):
                vi, vj, vr = T.axis.remap("SSR", [i, j, r])
                with T.init():
                    out[vi, vj] = T.float32(0.0)
                out[vi, vj] = out[vi, vj] + q[vi, vr] * k[vj, vr] * T.float32(0.25)

    @T.prim_func(private=True, s_tir=True)
    def softmax(var_x: T.handle, var_out: T.handle):
        s = T.int64()
        x = T.match_buffer(var_x, (s, s))
        out = T.match_buffer(var_out, (s, s))
        mx = T.sblock_alloc_buffer((s,))
        sm = T.sblock_alloc_buffer((s,))
        for i, j in T.grid(s, s):
            with T.sblock("max"):
                vi, vj = T.axis.remap("SR", [i, j])
                with T.init():
                    mx[vi] = T.float32(-3.4e38)
                mx[vi] = T.max(mx[vi], x[vi, vj])
        for i, j in T.grid(s, s):
            with T.sblock("sum"):
                vi, vj = T.axis.remap("SR", [i, j])
                with T.init():
                    sm[vi] = T.float32(0.0)
                sm[vi] = sm[vi] + T.exp(x[vi, vj] - mx[vi])
        for i, j in T.grid(s, s):
            with T.sblock("norm"):
                vi, vj = T.axis.remap("SS", [i, j])
                out[vi, vj] = T.exp(x[vi, vj] - mx[vi]) / sm[vi]

    @T.prim_func(private=True, s_tir=True)
    def weighted(var_p: T.handle, var_v: T.handle, var_out: T.handle):
        s = T.int64()
        p = T.match_buffer(var_p, (s, s))
        v = T.match_buffer(var_v, (s, T.int64(16)))
        out = T.match_buffer(var_out, (s, T.int64(16)))
        for i, j, r in T.grid(s, T.int64(16), s):
            with T.sblock("pv"):
                vi, vj, vr = T.axis.remap("SSR", [i, j, r])
                with T.init():
                    out[vi, vj] = T.float32(0.0)
                out[vi, vj] = out[vi, vj] + p[vi, vr] * v[vr, vj]

    @R.function
    def main(
        q: R.Tensor(("s", 16), dtype="float32"),
        k: R.Tensor(("s", 16), dtype="float32"),
        v: R.Tensor(("s", 16), dtype="float32"),
    ) -> R.Tensor(("s", 16), dtype="float32"):
        s = T.int64()
        cls = Module
        with R.dataflow():
            a = R.call_tir(cls.scores, (q, k), out_ty=R.Tensor((s, s), dtype="float32"))
            p = R.call_tir(cls.softmax, (a,), out_ty=R.Tensor((s, s), dtype="float32"))
            o = R.call_tir(cls.weighted, (p, v), out_ty=R.Tensor((s, 16), dtype="float32"))
            R.output(o)
        return o
