# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(pixel_values: R.Tensor((1, 3, 16, 16), dtype="float32"), m_embeddings_patch_embeddings_weight: R.Tensor((8, 3, 4, 4), dtype="float32"), m_embeddings_layernorm_weight: R.Tensor((8,), dtype="float32"), m_embeddings_layernorm_bias: R.Tensor((8,), dtype="float32"), m_encoder_stages_0_layers_0_layer_scale_parameter: R.Tensor((8,), dtype="float32"), m_encoder_stages_0_layers_0_dwconv_weight: R.Tensor((8, 1, 7, 7), dtype="float32"), m_encoder_stages_0_layers_0_pwconv1_bias: R.Tensor((32,), dtype="float32"), m_encoder_stages_1_downsampling_layer_1_weight: R.Tensor((16, 8, 2, 2), dtype="float32"), m_encoder_stages_1_layers_0_layer_scale_parameter: R.Tensor((16,), dtype="float32"), m_encoder_stages_1_layers_0_dwconv_weight: R.Tensor((16, 1, 7, 7), dtype="float32"), m_encoder_stages_1_layers_0_layernorm_weight: R.Tensor((16,), dtype="float32"), m_encoder_stages_1_layers_0_layernorm_bias: R.Tensor((16,), dtype="float32"), m_encoder_stages_1_layers_0_pwconv1_bias: R.Tensor((64,), dtype="float32"), val_4: R.Tensor((8, 32), dtype="float32"), val_6: R.Tensor((32, 8), dtype="float32"), val_12: R.Tensor((16, 64), dtype="float32"), val_14: R.Tensor((64, 16), dtype="float32")) -> R.Tensor((1, 16, 2, 2), dtype="float32"):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            lv: R.Tensor((1, 8, 4, 4), dtype="float32") = R.nn.conv2d(pixel_values, m_embeddings_patch_embeddings_weight, strides=[4, 4], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype=None)
            lv1: R.Tensor((1, 4, 4, 8), dtype="float32") = R.permute_dims(lv, axes=[0, 2, 3, 1])
            lv2: R.Tensor((1, 4, 4, 8), dtype="float32") = R.nn.layer_norm(lv1, m_embeddings_layernorm_weight, m_embeddings_layernorm_bias, axes=[-1], epsilon=9.9999999747524271e-07, center=True, scale=True)
            lv3: R.Tensor((1, 8, 4, 4), dtype="float32") = R.permute_dims(lv2, axes=[0, 3, 1, 2])
            lv4: R.Tensor((1, 8, 4, 4), dtype="float32") = R.nn.conv2d(lv3, m_encoder_stages_0_layers_0_dwconv_weight, strides=[1, 1], padding=[3, 3, 3, 3], dilation=[1, 1], groups=8, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype=None)
            lv5: R.Tensor((1, 4, 4, 8), dtype="float32") = R.permute_dims(lv4, axes=[0, 2, 3, 1])
            lv6: R.Tensor((1, 4, 4, 8), dtype="float32") = R.nn.layer_norm(lv5, m_embeddings_layernorm_weight, m_embeddings_layernorm_bias, axes=[-1], epsilon=9.9999999747524271e-07, center=True, scale=True)
            lv7: R.Tensor((1, 4, 4, 32), dtype="float32") = R.matmul(lv6, val_4, out_dtype=None)
            lv8: R.Tensor((1, 4, 4, 32), dtype="float32") = R.add(lv7, m_encoder_stages_0_layers_0_pwconv1_bias)
            lv9: R.Tensor((1, 4, 4, 32), dtype="float32") = R.nn.gelu(lv8)
            lv10: R.Tensor((1, 4, 4, 8), dtype="float32") = R.matmul(lv9, val_6, out_dtype=None)
            lv11: R.Tensor((1, 4, 4, 8), dtype="float32") = R.add(lv10, m_embeddings_layernorm_bias)
            lv12: R.Tensor((1, 4, 4, 8), dtype="float32") = R.multiply(m_encoder_stages_0_layers_0_layer_scale_parameter, lv11)
            lv13: R.Tensor((1, 8, 4, 4), dtype="float32") = R.permute_dims(lv12, axes=[0, 3, 1, 2])
            lv14: R.Tensor((1, 8, 4, 4), dtype="float32") = R.add(lv3, lv13)
            lv15: R.Tensor((1, 4, 4, 8), dtype="float32") = R.permute_dims(lv14, axes=[0, 2, 3, 1])
            lv16: R.Tensor((1, 4, 4, 8), dtype="float32") = R.nn.layer_norm(lv15, m_embeddings_layernorm_weight, m_embeddings_layernorm_bias, axes=[-1], epsilon=9.9999999747524271e-07, center=True, scale=True)
            lv17: R.Tensor((1, 8, 4, 4), dtype="float32") = R.permute_dims(lv16, axes=[0, 3, 1, 2])
            lv18: R.Tensor((1, 16, 2, 2), dtype="float32") = R.nn.conv2d(lv17, m_encoder_stages_1_downsampling_layer_1_weight, strides=[2, 2], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype=None)
            lv19: R.Tensor((1, 16, 2, 2), dtype="float32") = R.nn.conv2d(lv18, m_encoder_stages_1_layers_0_dwconv_weight, strides=[1, 1], padding=[3, 3, 3, 3], dilation=[1, 1], groups=16, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype=None)
            lv20: R.Tensor((1, 2, 2, 16), dtype="float32") = R.permute_dims(lv19, axes=[0, 2, 3, 1])
            lv21: R.Tensor((1, 2, 2, 16), dtype="float32") = R.nn.layer_norm(lv20, m_encoder_stages_1_layers_0_layernorm_weight, m_encoder_stages_1_layers_0_layernorm_bias, axes=[-1], epsilon=9.9999999747524271e-07, center=True, scale=True)
            lv22: R.Tensor((1, 2, 2, 64), dtype="float32") = R.matmul(lv21, val_12, out_dtype=None)
            lv23: R.Tensor((1, 2, 2, 64), dtype="float32") = R.add(lv22, m_encoder_stages_1_layers_0_pwconv1_bias)
            lv24: R.Tensor((1, 2, 2, 64), dtype="float32") = R.nn.gelu(lv23)
            lv25: R.Tensor((1, 2, 2, 16), dtype="float32") = R.matmul(lv24, val_14, out_dtype=None)
            lv26: R.Tensor((1, 2, 2, 16), dtype="float32") = R.add(lv25, m_encoder_stages_1_layers_0_layernorm_bias)
            lv27: R.Tensor((1, 2, 2, 16), dtype="float32") = R.multiply(m_encoder_stages_1_layers_0_layer_scale_parameter, lv26)
            lv28: R.Tensor((1, 16, 2, 2), dtype="float32") = R.permute_dims(lv27, axes=[0, 3, 1, 2])
            gv: R.Tensor((1, 16, 2, 2), dtype="float32") = R.add(lv18, lv28)
            R.output(gv)
        return gv