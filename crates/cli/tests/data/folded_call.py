# A PrimFunc called only with constants: fold-constant evaluates the call when the
# module is prepared, so no kernel of it runs; `relax wgsl --func add_one` still
# shows it, as written.
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def add_one(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.sblock("B"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi] + T.float32(1)

    @R.function
    def main():
        cls = Module
        with R.dataflow():
            x = R.ones(R.shape([4]), "float32")
            y = R.call_tir(cls.add_one, (x,), out_sinfo=R.Tensor((4,), "float32"))
            R.output(y)
        return y
