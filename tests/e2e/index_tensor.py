# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((5, 6, 7), dtype="float32"), i: R.Tensor((2, 1), dtype="int64"), j: R.Tensor((3,), dtype="int32"), k: R.Tensor((3,), dtype="int64"), m: R.Tensor((1, 6), dtype="bool"), r: R.Tensor((1, 1, 4, 1), dtype="int64"), c: R.Tensor((1, 1, 1, 4), dtype="int64"), p: R.Tensor((2, 8), dtype="int64")) -> R.Tuple(R.Tensor((2, 3, 7), dtype="float32"), R.Tensor((3, 6, 7), dtype="float32"), R.Tensor((2, 3), dtype="float32"), R.Tensor((1, 1, 4, 4), dtype="bool"), R.Tensor((1, 1, 4, 4), dtype="int64")):
        with R.dataflow():
            a = R.index_tensor(x, (i, j))
            b = R.index_tensor(x, (j,))
            d = R.index_tensor(x, (i, j, k))
            e = R.index_tensor(m, (r, c))
            f = R.index_tensor(p, (r, c))
            R.output(a, b, d, e, f)
        return (a, b, d, e, f)
