# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor((64, 32), "float32"), b: R.Tensor((32, 16), "float32")) -> R.Tensor((64, 16), "float32"):
        c = R.matmul(a, b)
        d = R.nn.relu(c)
        return d
