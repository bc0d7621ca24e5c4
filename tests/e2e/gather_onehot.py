# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 4), dtype="float32"), gi: R.Tensor((3, 2), dtype="int64"), nd: R.Tensor((2, 2), dtype="int64"), oh: R.Tensor((5,), dtype="int32"), lens: R.Tensor((4,), dtype="int64"), v: R.Tensor((2, 3, 2, 2), dtype="float32")) -> R.Tuple(R.Tensor((3, 2), dtype="float32"), R.Tensor((2,), dtype="float32"), R.Tensor((5, 4), dtype="float32"), R.Tensor((4, 5), dtype="float32"), R.Tensor((5, 3), dtype="int32"), R.Tensor((5, 3), dtype="int32"), R.Tensor((3, 4), dtype="float32"), R.Tensor((2, 12), dtype="float32")):
        with R.dataflow():
            a = R.gather_elements(x, gi, axis=1)
            b = R.gather_nd(x, nd)
            c = R.one_hot(oh, R.prim_value(T.float32(1.0)), R.prim_value(T.float32(-2.0)), depth=4, axis=-1)
            d = R.one_hot(oh, R.prim_value(T.float32(3.0)), R.prim_value(T.float32(0.0)), depth=4, axis=0)
            m = R.meshgrid((oh, R.const([7, 8, 9], "int32")), indexing="ij")
            m0 = m[0]
            m1 = m[1]
            r = R.reverse_sequence(x, lens, seq_axis=0, batch_axis=1)
            f = R.nn.batch_flatten(v)
            R.output(a, b, c, d, m0, m1, r, f)
        return (a, b, c, d, m0, m1, r, f)
