# from tvm.script import ir as I
# from tvm.script import relax as R
# from tvm.script import tir as T

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 7, 6), dtype="float32")) -> R.Tuple(R.Tensor((2, 6, 3, 3), dtype="float32"), R.Tensor((6, 2, 7), dtype="float32"), R.Tensor((2, 7, 2, 3), dtype="float32")):
        with R.dataflow():
            a = R.layout_transform(x, index_map=T.index_map(lambda i, j, k: (i, k, j // 3, j % 3)), pad_value=T.float32(-1.0))
            b = R.layout_transform(x, index_map=T.index_map(lambda i, j, k: (k, i, j)))
            c = R.layout_transform(x, index_map=T.index_map(lambda i, j, k: (i, j, k // 3, k % 3)))
            R.output(a, b, c)
        return (a, b, c)
