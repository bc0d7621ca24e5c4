# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(p: R.Tensor((4, 5), dtype="float32"), l: R.Tensor((4, 5), dtype="float32"), t: R.Tensor((4,), dtype="int64"), w: R.Tensor((5,), dtype="float32"), q: R.Tensor((2, 5, 3), dtype="float32"), tq: R.Tensor((2, 3), dtype="int64"), v: R.Tensor((5,), dtype="float32")):
        with R.dataflow():
            ce = R.nn.cross_entropy_with_logits(p, l)
            c1 = R.nn.cross_entropy_with_logits(v, w)
            nm = R.nn.nll_loss(p, t, w, reduction="mean", ignore_index=2)
            ns = R.nn.nll_loss(p, t, w, reduction="sum", ignore_index=2)
            nn_ = R.nn.nll_loss(q, tq, w, reduction="none")
            nw = R.nn.nll_loss(q, tq, reduction="mean", ignore_index=0)
            R.output(ce, c1, nm, ns, nn_, nw)
        return (ce, c1, nm, ns, nn_, nw)
