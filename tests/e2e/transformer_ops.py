# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(mask: R.Tensor((2, 8), dtype="bool"), mask2: R.Tensor((2, 8), dtype="bool"), x: R.Tensor((2, 8), dtype="float32"), ids: R.Tensor((2, 8), dtype="int64"), h: R.Tensor((2, 8, 16), dtype="float32"), w: R.Tensor((16,), dtype="float32"), bb: R.Tensor((16,), dtype="float32"), gi: R.Tensor((3, 2), dtype="int64"), ge: R.Tensor((2, 4), dtype="int64"), y: R.Tensor((5, 8), dtype="float32")):
        n = T.int64()
        with R.dataflow():
            cs64 = R.cumsum(mask, axis=1, dtype="int64", exclusive=False)
            ba = R.bitwise_and(mask, mask2)
            bi = R.bitwise_and(ids, R.const(6, "int64"))
            ln_ = R.logical_not(mask)
            la = R.logical_and(ba, ln_)
            nan = R.isnan(R.divide(x, x))
            le = R.less_equal(ids, R.const(3, "int64"))
            gt = R.greater(x, R.const(0.5, "float32"))
            eq = R.equal(ids, R.const(2, "int64"))
            ne = R.not_equal(ids, R.const(4, "int64"))
            fl = R.full_like(x, R.const(0.0, "float32"), dtype=None)
            fl2 = R.full_like(ids, R.const(7, "int64"), dtype="float32")
            gnd = R.gather_nd(h, gi, batch_dims=0)
            gel = R.gather_elements(x, ge, axis=1)
            yn = R.match_cast(y, R.Tensor((n, 8), dtype="float32"))
            ss = R.strided_slice(yn, (0,), (1,), (n,), (1,), assume_inbound=False)
            ss2 = R.strided_slice(yn, (1,), (0,), (n,), (2,), assume_inbound=False)
            bt = R.broadcast_to(w, R.shape([2, 8, 16]))
            tu = R.triu(R.full(R.shape([8, 8]), R.const(-1.0e9, "float32"), dtype="float32"), 1)
            rp = R.repeat(h, repeats=2, axis=1)
            sp = R.split(h, indices_or_sections=[4, 12], axis=2)
            sp0 = sp[0]
            sp2 = sp[2]
            rms = R.nn.rms_norm(h, w, axes=[-1], epsilon=1.0000000000000001e-05)
            lnm = R.nn.layer_norm(h, w, bb, axes=[-1], epsilon=1.0000000000000001e-05)
            g = R.nn.gelu(h)
            gt2 = R.nn.gelu_tanh(h)
            si = R.nn.silu(h)
            rs = R.rsqrt(R.add(R.abs(h), R.const(0.5, "float32")))
            st = R.shape_to_tensor(R.shape_of(yn))
            R.output(cs64, bi, la, nan, le, gt, eq, ne, fl, fl2, gnd, gel, ss, ss2, bt, tu, rp, sp0, sp2, rms, lnm, g, gt2, si, rs, st)
        return (cs64, bi, la, nan, le, gt, eq, ne, fl, fl2, gnd, gel, ss, ss2, bt, tu, rp, sp0, sp2, rms, lnm, g, gt2, si, rs, st)
