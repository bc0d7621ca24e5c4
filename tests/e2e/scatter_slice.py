# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 5), dtype="float32"), idx: R.Tensor((2, 5), dtype="int64"), upd: R.Tensor((2, 5), dtype="float32"), idx1: R.Tensor((4, 2), dtype="int64"), upd1: R.Tensor((4, 2), dtype="float32"), d: R.Tensor((3, 4), dtype="float32"), nd_idx: R.Tensor((2, 1), dtype="int64"), nd_upd: R.Tensor((2, 4), dtype="float32"), nd_idx2: R.Tensor((3, 2), dtype="int64"), nd_upd2: R.Tensor((3,), dtype="float32"), begin: R.Tensor((2,), dtype="int64"), end: R.Tensor((2,), dtype="int64"), strides: R.Tensor((2,), dtype="int64")) -> R.Tuple(R.Tensor((4, 5), dtype="float32"), R.Tensor((4, 5), dtype="float32"), R.Tensor((4, 5), dtype="float32"), R.Tensor((4, 5), dtype="float32"), R.Tensor((3, 4), dtype="float32"), R.Tensor((3, 4), dtype="float32"), R.Tensor((3, 4), dtype="float32"), R.Tensor(dtype="float32", ndim=2)):
        with R.dataflow():
            a = R.scatter_elements(x, idx, upd)
            b = R.scatter_elements(x, idx1, upd1, axis=1, reduction="add")
            c = R.scatter_elements(x, idx1, upd1, axis=-1, reduction="max")
            e = R.scatter_elements(x, idx1, upd1, axis=1, reduction="mean")
            f = R.scatter_nd(d, nd_idx, nd_upd)
            g = R.scatter_nd(d, nd_idx2, nd_upd2, reduction="add")
            h = R.scatter_nd(d, nd_idx2, nd_upd2, reduction="min")
            s = R.dynamic_strided_slice(x, begin, end, strides)
            R.output(a, b, c, e, f, g, h, s)
        return (a, b, c, e, f, g, h, s)
