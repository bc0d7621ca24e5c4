# from typing import TypeVar
# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis
# from tvm.script import relax as R

seq_len = TypeVar("seq_len")
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def rotary_embedding(split_0: T.Buffer((T.int64(1), seq_len, T.int64(2), T.int64(8)), "float16"), rotary: T.Buffer((T.int64(1), seq_len, T.int64(2), T.int64(8)), "float16")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for b, s, h, d in T.grid(T.int64(1), seq_len, T.int64(2), T.int64(8)):
            with T.sblock("rotary"):
                v_b, v_s, v_h, v_d = T.axis.remap("SSSS", [b, s, h, d])
                T.reads(split_0[v_b, v_s, v_h, v_d - T.int64(4):v_d - T.int64(4) + T.int64(9)])
                T.writes(rotary[v_b, v_s, v_h, v_d])
                rotary[v_b, v_s, v_h, v_d] = T.Cast("float16", T.cos(T.Cast("float32", v_s) / T.pow(T.float32(500000.0), T.Cast("float32", v_d % T.int64(4) * T.int64(2)) / T.float32(8.0))) * T.Cast("float32", split_0[v_b, v_s, v_h, v_d]) + T.sin(T.Cast("float32", v_s) / T.pow(T.float32(500000.0), T.Cast("float32", v_d % T.int64(4) * T.int64(2)) / T.float32(8.0))) * T.Cast("float32", T.if_then_else(v_d < T.int64(4), split_0[v_b, v_s, v_h, v_d + T.int64(4)] * T.float16(-1.0), split_0[v_b, v_s, v_h, v_d - T.int64(4)])))

    @T.prim_func(private=True, s_tir=True)
    def rotary_embedding1(split_1: T.Buffer((T.int64(1), seq_len, T.int64(1), T.int64(8)), "float16"), rotary: T.Buffer((T.int64(1), seq_len, T.int64(1), T.int64(8)), "float16")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for b, s, h, d in T.grid(T.int64(1), seq_len, T.int64(1), T.int64(8)):
            with T.sblock("rotary"):
                v_b, v_s, v_h, v_d = T.axis.remap("SSSS", [b, s, h, d])
                T.reads(split_1[v_b, v_s, v_h, v_d - T.int64(4):v_d - T.int64(4) + T.int64(9)])
                T.writes(rotary[v_b, v_s, v_h, v_d])
                rotary[v_b, v_s, v_h, v_d] = T.Cast("float16", T.cos(T.Cast("float32", v_s) / T.pow(T.float32(500000.0), T.Cast("float32", v_d % T.int64(4) * T.int64(2)) / T.float32(8.0))) * T.Cast("float32", split_1[v_b, v_s, v_h, v_d]) + T.sin(T.Cast("float32", v_s) / T.pow(T.float32(500000.0), T.Cast("float32", v_d % T.int64(4) * T.int64(2)) / T.float32(8.0))) * T.Cast("float32", T.if_then_else(v_d < T.int64(4), split_1[v_b, v_s, v_h, v_d + T.int64(4)] * T.float16(-1.0), split_1[v_b, v_s, v_h, v_d - T.int64(4)])))

    @R.function
    def forward(input_ids: R.Tensor((1, seq_len), dtype="int32"), embed_tokens_weight: R.Tensor((32, 16), dtype="float16"), layers_0_input_layernorm_weight: R.Tensor((16,), dtype="float16"), layers_0_self_attn_qkv_proj_weight: R.Tensor((32, 16), dtype="float16"), layers_0_self_attn_o_proj_weight: R.Tensor((16, 16), dtype="float16"), layers_0_post_attention_layernorm_weight: R.Tensor((16,), dtype="float16"), layers_0_mlp_gate_up_proj_weight: R.Tensor((64, 16), dtype="float16"), layers_0_mlp_down_proj_weight: R.Tensor((16, 32), dtype="float16"), layers_1_input_layernorm_weight: R.Tensor((16,), dtype="float16"), layers_1_self_attn_qkv_proj_weight: R.Tensor((32, 16), dtype="float16"), layers_1_self_attn_o_proj_weight: R.Tensor((16, 16), dtype="float16"), layers_1_post_attention_layernorm_weight: R.Tensor((16,), dtype="float16"), layers_1_mlp_gate_up_proj_weight: R.Tensor((64, 16), dtype="float16"), layers_1_mlp_down_proj_weight: R.Tensor((16, 32), dtype="float16"), norm_weight: R.Tensor((16,), dtype="float16"), lm_head_weight: R.Tensor((32, 16), dtype="float16")) -> R.Tensor((1, seq_len, 32), dtype="float32"):
        R.func_attr({"num_input": 1})
        cls = Module
        with R.dataflow():
            reshape: R.Tensor((seq_len,), dtype="int32") = R.reshape(input_ids, R.shape([seq_len]))
            take: R.Tensor((seq_len, 16), dtype="float16") = R.take(embed_tokens_weight, reshape, axis=0, mode="fast")
            reshape1: R.Tensor((1, seq_len, 16), dtype="float16") = R.reshape(take, R.shape([1, seq_len, 16]))
            rms_norm: R.Tensor((1, seq_len, 16), dtype="float16") = R.nn.rms_norm(reshape1, layers_0_input_layernorm_weight, axes=[-1], epsilon=1.0000000000000001e-05)
            permute_dims: R.Tensor((16, 32), dtype="float16") = R.permute_dims(layers_0_self_attn_qkv_proj_weight, axes=None)
            matmul: R.Tensor((1, seq_len, 32), dtype="float16") = R.matmul(rms_norm, permute_dims, out_dtype=None)
            reshape2: R.Tensor((1, seq_len, 4, 8), dtype="float16") = R.reshape(matmul, R.shape([1, seq_len, 4, 8]))
            split: R.Tuple(R.Tensor((1, seq_len, 2, 8), dtype="float16"), R.Tensor((1, seq_len, 1, 8), dtype="float16"), R.Tensor((1, seq_len, 1, 8), dtype="float16")) = R.split(reshape2, indices_or_sections=[2, 3], axis=2)
            split_0: R.Tensor((1, seq_len, 2, 8), dtype="float16") = split[0]
            split_1: R.Tensor((1, seq_len, 1, 8), dtype="float16") = split[1]
            split_2: R.Tensor((1, seq_len, 1, 8), dtype="float16") = split[2]
            lv = R.call_tir(cls.rotary_embedding, (split_0,), out_ty=R.Tensor((1, seq_len, 2, 8), dtype="float16"))
            lv1 = R.call_tir(cls.rotary_embedding1, (split_1,), out_ty=R.Tensor((1, seq_len, 1, 8), dtype="float16"))
            repeat: R.Tensor((1, seq_len, 2, 8), dtype="float16") = R.repeat(lv1, repeats=2, axis=2)
            repeat1: R.Tensor((1, seq_len, 2, 8), dtype="float16") = R.repeat(split_2, repeats=2, axis=2)
            permute_dims1: R.Tensor((1, 2, seq_len, 8), dtype="float16") = R.permute_dims(lv, axes=[0, 2, 1, 3])
            permute_dims2: R.Tensor((1, 2, 8, seq_len), dtype="float16") = R.permute_dims(repeat, axes=[0, 2, 3, 1])
            permute_dims3: R.Tensor((1, 2, seq_len, 8), dtype="float16") = R.permute_dims(repeat1, axes=[0, 2, 1, 3])
            matmul1: R.Tensor((1, 2, seq_len, seq_len), dtype="float16") = R.matmul(permute_dims1, permute_dims2, out_dtype=None)
            divide: R.Tensor((1, 2, seq_len, seq_len), dtype="float16") = R.divide(matmul1, R.const(2.828125, "float16"))
            astype: R.Tensor((1, 2, seq_len, seq_len), dtype="float32") = R.astype(divide, dtype="float32")
            full: R.Tensor((seq_len, seq_len), dtype="float32") = R.full(R.shape([seq_len, seq_len]), R.const(-340282346638528859811704183484516925440.0, "float32"), dtype="float32")
            triu: R.Tensor((seq_len, seq_len), dtype="float32") = R.triu(full, 1)
            add: R.Tensor((1, 2, seq_len, seq_len), dtype="float32") = R.add(astype, triu)
            softmax: R.Tensor((1, 2, seq_len, seq_len), dtype="float32") = R.nn.softmax(add, axis=-1)
            astype1: R.Tensor((1, 2, seq_len, seq_len), dtype="float16") = R.astype(softmax, dtype="float16")
            matmul2: R.Tensor((1, 2, seq_len, 8), dtype="float16") = R.matmul(astype1, permute_dims3, out_dtype=None)
            permute_dims4: R.Tensor((1, seq_len, 2, 8), dtype="float16") = R.permute_dims(matmul2, axes=[0, 2, 1, 3])
            reshape3: R.Tensor((1, seq_len, 16), dtype="float16") = R.reshape(permute_dims4, R.shape([1, seq_len, 16]))
            permute_dims5: R.Tensor((16, 16), dtype="float16") = R.permute_dims(layers_0_self_attn_o_proj_weight, axes=None)
            matmul3: R.Tensor((1, seq_len, 16), dtype="float16") = R.matmul(reshape3, permute_dims5, out_dtype=None)
            add1: R.Tensor((1, seq_len, 16), dtype="float16") = R.add(reshape1, matmul3)
            rms_norm1: R.Tensor((1, seq_len, 16), dtype="float16") = R.nn.rms_norm(add1, layers_0_post_attention_layernorm_weight, axes=[-1], epsilon=1.0000000000000001e-05)
            permute_dims6: R.Tensor((16, 64), dtype="float16") = R.permute_dims(layers_0_mlp_gate_up_proj_weight, axes=None)
            matmul4: R.Tensor((1, seq_len, 64), dtype="float16") = R.matmul(rms_norm1, permute_dims6, out_dtype=None)
            split1: R.Tuple(R.Tensor((1, seq_len, 32), dtype="float16"), R.Tensor((1, seq_len, 32), dtype="float16")) = R.split(matmul4, indices_or_sections=2, axis=-1)
            split_01: R.Tensor((1, seq_len, 32), dtype="float16") = split1[0]
            split_11: R.Tensor((1, seq_len, 32), dtype="float16") = split1[1]
            silu: R.Tensor((1, seq_len, 32), dtype="float16") = R.nn.silu(split_01)
            mul: R.Tensor((1, seq_len, 32), dtype="float16") = R.multiply(silu, split_11)
            permute_dims7: R.Tensor((32, 16), dtype="float16") = R.permute_dims(layers_0_mlp_down_proj_weight, axes=None)
            matmul5: R.Tensor((1, seq_len, 16), dtype="float16") = R.matmul(mul, permute_dims7, out_dtype=None)
            add2: R.Tensor((1, seq_len, 16), dtype="float16") = R.add(add1, matmul5)
            rms_norm2: R.Tensor((1, seq_len, 16), dtype="float16") = R.nn.rms_norm(add2, layers_1_input_layernorm_weight, axes=[-1], epsilon=1.0000000000000001e-05)
            permute_dims8: R.Tensor((16, 32), dtype="float16") = R.permute_dims(layers_1_self_attn_qkv_proj_weight, axes=None)
            matmul6: R.Tensor((1, seq_len, 32), dtype="float16") = R.matmul(rms_norm2, permute_dims8, out_dtype=None)
            reshape4: R.Tensor((1, seq_len, 4, 8), dtype="float16") = R.reshape(matmul6, R.shape([1, seq_len, 4, 8]))
            split2: R.Tuple(R.Tensor((1, seq_len, 2, 8), dtype="float16"), R.Tensor((1, seq_len, 1, 8), dtype="float16"), R.Tensor((1, seq_len, 1, 8), dtype="float16")) = R.split(reshape4, indices_or_sections=[2, 3], axis=2)
            split_02: R.Tensor((1, seq_len, 2, 8), dtype="float16") = split2[0]
            split_12: R.Tensor((1, seq_len, 1, 8), dtype="float16") = split2[1]
            split_21: R.Tensor((1, seq_len, 1, 8), dtype="float16") = split2[2]
            lv2 = R.call_tir(cls.rotary_embedding, (split_02,), out_ty=R.Tensor((1, seq_len, 2, 8), dtype="float16"))
            lv3 = R.call_tir(cls.rotary_embedding1, (split_12,), out_ty=R.Tensor((1, seq_len, 1, 8), dtype="float16"))
            repeat2: R.Tensor((1, seq_len, 2, 8), dtype="float16") = R.repeat(lv3, repeats=2, axis=2)
            repeat3: R.Tensor((1, seq_len, 2, 8), dtype="float16") = R.repeat(split_21, repeats=2, axis=2)
            permute_dims9: R.Tensor((1, 2, seq_len, 8), dtype="float16") = R.permute_dims(lv2, axes=[0, 2, 1, 3])
            permute_dims10: R.Tensor((1, 2, 8, seq_len), dtype="float16") = R.permute_dims(repeat2, axes=[0, 2, 3, 1])
            permute_dims11: R.Tensor((1, 2, seq_len, 8), dtype="float16") = R.permute_dims(repeat3, axes=[0, 2, 1, 3])
            matmul7: R.Tensor((1, 2, seq_len, seq_len), dtype="float16") = R.matmul(permute_dims9, permute_dims10, out_dtype=None)
            divide1: R.Tensor((1, 2, seq_len, seq_len), dtype="float16") = R.divide(matmul7, R.const(2.828125, "float16"))
            astype2: R.Tensor((1, 2, seq_len, seq_len), dtype="float32") = R.astype(divide1, dtype="float32")
            full1: R.Tensor((seq_len, seq_len), dtype="float32") = R.full(R.shape([seq_len, seq_len]), R.const(-340282346638528859811704183484516925440.0, "float32"), dtype="float32")
            triu1: R.Tensor((seq_len, seq_len), dtype="float32") = R.triu(full1, 1)
            add3: R.Tensor((1, 2, seq_len, seq_len), dtype="float32") = R.add(astype2, triu1)
            softmax1: R.Tensor((1, 2, seq_len, seq_len), dtype="float32") = R.nn.softmax(add3, axis=-1)
            astype3: R.Tensor((1, 2, seq_len, seq_len), dtype="float16") = R.astype(softmax1, dtype="float16")
            matmul8: R.Tensor((1, 2, seq_len, 8), dtype="float16") = R.matmul(astype3, permute_dims11, out_dtype=None)
            permute_dims12: R.Tensor((1, seq_len, 2, 8), dtype="float16") = R.permute_dims(matmul8, axes=[0, 2, 1, 3])
            reshape5: R.Tensor((1, seq_len, 16), dtype="float16") = R.reshape(permute_dims12, R.shape([1, seq_len, 16]))
            permute_dims13: R.Tensor((16, 16), dtype="float16") = R.permute_dims(layers_1_self_attn_o_proj_weight, axes=None)
            matmul9: R.Tensor((1, seq_len, 16), dtype="float16") = R.matmul(reshape5, permute_dims13, out_dtype=None)
            add4: R.Tensor((1, seq_len, 16), dtype="float16") = R.add(add2, matmul9)
            rms_norm3: R.Tensor((1, seq_len, 16), dtype="float16") = R.nn.rms_norm(add4, layers_1_post_attention_layernorm_weight, axes=[-1], epsilon=1.0000000000000001e-05)
            permute_dims14: R.Tensor((16, 64), dtype="float16") = R.permute_dims(layers_1_mlp_gate_up_proj_weight, axes=None)
            matmul10: R.Tensor((1, seq_len, 64), dtype="float16") = R.matmul(rms_norm3, permute_dims14, out_dtype=None)
            split3: R.Tuple(R.Tensor((1, seq_len, 32), dtype="float16"), R.Tensor((1, seq_len, 32), dtype="float16")) = R.split(matmul10, indices_or_sections=2, axis=-1)
            split_03: R.Tensor((1, seq_len, 32), dtype="float16") = split3[0]
            split_13: R.Tensor((1, seq_len, 32), dtype="float16") = split3[1]
            silu1: R.Tensor((1, seq_len, 32), dtype="float16") = R.nn.silu(split_03)
            mul1: R.Tensor((1, seq_len, 32), dtype="float16") = R.multiply(silu1, split_13)
            permute_dims15: R.Tensor((32, 16), dtype="float16") = R.permute_dims(layers_1_mlp_down_proj_weight, axes=None)
            matmul11: R.Tensor((1, seq_len, 16), dtype="float16") = R.matmul(mul1, permute_dims15, out_dtype=None)
            add5: R.Tensor((1, seq_len, 16), dtype="float16") = R.add(add4, matmul11)
            rms_norm4: R.Tensor((1, seq_len, 16), dtype="float16") = R.nn.rms_norm(add5, norm_weight, axes=[-1], epsilon=1.0000000000000001e-05)
            permute_dims16: R.Tensor((16, 32), dtype="float16") = R.permute_dims(lm_head_weight, axes=None)
            matmul12: R.Tensor((1, seq_len, 32), dtype="float16") = R.matmul(rms_norm4, permute_dims16, out_dtype=None)
            astype4: R.Tensor((1, seq_len, 32), dtype="float32") = R.astype(matmul12, dtype="float32")
            gv: R.Tensor((1, seq_len, 32), dtype="float32") = astype4
            R.output(gv)
        return gv