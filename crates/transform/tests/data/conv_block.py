# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 3, 16, 16), "float32"), w: R.Tensor((8, 3, 3, 3), "float32"), b: R.Tensor((8,), "float32"), w2: R.Tensor((8, 8, 1, 1), "float32")) -> R.Tensor((1, 8, 7, 7), "float32"):
        with R.dataflow():
            lv0 = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])
            lv1 = R.reshape(b, R.shape([1, 8, 1, 1]))
            lv2 = R.add(lv0, lv1)
            lv3 = R.nn.relu(lv2)
            lv4 = R.nn.max_pool2d(lv3, pool_size=[3, 3], strides=[2, 2])
            lv5 = R.nn.conv2d(lv4, w2)
            lv6 = R.add(lv5, lv4)
            lv7 = R.nn.softmax(lv6, axis=1)
            gv = lv7
            R.output(gv)
        return gv
