# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(q: R.Tensor((2, 4, 2, 8), dtype="float32"), k: R.Tensor((2, 6, 2, 8), dtype="float32"), v: R.Tensor((2, 6, 2, 5), dtype="float32"), q6: R.Tensor((2, 6, 2, 8), dtype="float32"), k4: R.Tensor((2, 4, 2, 8), dtype="float32"), v4: R.Tensor((2, 4, 2, 5), dtype="float32"), b: R.Tensor((2, 2, 4, 6), dtype="float32"), b1: R.Tensor((1, 1, 1, 6), dtype="float32")) -> R.Tuple(R.Tensor((2, 4, 2, 5), dtype="float32"), R.Tensor((2, 4, 2, 5), dtype="float32"), R.Tensor((2, 4, 2, 5), dtype="float32"), R.Tensor((2, 6, 2, 5), dtype="float32"), R.Tensor((2, 4, 2, 5), dtype="float32"), R.Tensor((2, 4, 2, 5), dtype="float32"), R.Tensor((2, 4, 2, 5), dtype="float32"), R.Tensor((2, 6, 2, 8), dtype="float32")):
        with R.dataflow():
            a0 = R.nn.attention(q, k, v)
            a1 = R.nn.attention(q, k, v, causal_mask="TopLeft")
            a2 = R.nn.attention(q, k, v, causal_mask="BottomRight")
            a3 = R.nn.attention(q6, k4, v4, causal_mask="BottomRight")
            a4 = R.nn.attention(q, k, v, scale=0.3)
            a5 = R.nn.attention(q, k, v, b, causal_mask="TopLeft")
            a6 = R.nn.attention(q, k, v, b1, scale=0.5, causal_mask="BottomRight")
            a7 = R.nn.attention(q6, q6, q6, causal_mask="TopLeft")
            R.output(a0, a1, a2, a3, a4, a5, a6, a7)
        return (a0, a1, a2, a3, a4, a5, a6, a7)
