# from typing import TypeVar
# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis
# from tvm.script import relax as R

seq_len = TypeVar("seq_len")
total_seq_len = TypeVar("total_seq_len")
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def causal_mask(divide: T.Buffer((T.int64(1), T.int64(4), seq_len, seq_len), "float32"), causal_mask: T.Buffer((T.int64(1), T.int64(4), seq_len, seq_len), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for b, h, i, j in T.grid(T.int64(1), T.int64(4), seq_len, seq_len):
            with T.sblock("causal_mask"):
                v_b, v_h, v_i, v_j = T.axis.remap("SSSS", [b, h, i, j])
                T.reads(divide[v_b, v_h, v_i, v_j])
                T.writes(causal_mask[v_b, v_h, v_i, v_j])
                causal_mask[v_b, v_h, v_i, v_j] = T.if_then_else(v_i < v_j, T.float32(-340282346638528859811704183484516925440.0), divide[v_b, v_h, v_i, v_j])

    @T.prim_func(private=True, s_tir=True)
    def causal_mask1(divide2: T.Buffer((T.int64(1), T.int64(4), T.int64(1), total_seq_len), "float32"), causal_mask: T.Buffer((T.int64(1), T.int64(4), T.int64(1), total_seq_len), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for b, h, i, j in T.grid(T.int64(1), T.int64(4), T.int64(1), total_seq_len):
            with T.sblock("causal_mask"):
                v_b, v_h, v_i, v_j = T.axis.remap("SSSS", [b, h, i, j])
                T.reads(divide2[v_b, v_h, v_i, v_j])
                T.writes(causal_mask[v_b, v_h, v_i, v_j])
                causal_mask[v_b, v_h, v_i, v_j] = T.if_then_else(total_seq_len + v_i <= v_j, T.float32(-340282346638528859811704183484516925440.0), divide2[v_b, v_h, v_i, v_j])

    @T.prim_func(private=True, s_tir=True)
    def last_position(add3: T.Buffer((T.int64(1), seq_len, T.int64(32)), "float32"), last_position: T.Buffer((T.int64(1), T.int64(1), T.int64(32)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for i, j, k in T.grid(T.int64(1), T.int64(1), T.int64(32)):
            with T.sblock("last_position"):
                v_i, v_j, v_k = T.axis.remap("SSS", [i, j, k])
                T.reads(add3[v_i, seq_len + v_j - T.int64(1), v_k])
                T.writes(last_position[v_i, v_j, v_k])
                last_position[v_i, v_j, v_k] = add3[v_i, seq_len + v_j - T.int64(1), v_k]

    @T.prim_func(private=True, s_tir=True)
    def last_position1(add7: T.Buffer((T.int64(1), T.int64(1), T.int64(32)), "float32"), last_position: T.Buffer((T.int64(1), T.int64(1), T.int64(32)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for i, j, k in T.grid(T.int64(1), T.int64(1), T.int64(32)):
            with T.sblock("last_position"):
                v_i, v_j, v_k = T.axis.remap("SSS", [i, j, k])
                T.reads(add7[v_i, v_j, v_k])
                T.writes(last_position[v_i, v_j, v_k])
                last_position[v_i, v_j, v_k] = add7[v_i, v_j, v_k]

    @T.prim_func(private=True, s_tir=True)
    def rotary_embedding(split_0: T.Buffer((T.int64(1), seq_len, T.int64(4), T.int64(8)), "float32"), rotary: T.Buffer((T.int64(1), seq_len, T.int64(4), T.int64(8)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for b, s, h, d in T.grid(T.int64(1), seq_len, T.int64(4), T.int64(8)):
            with T.sblock("rotary"):
                v_b, v_s, v_h, v_d = T.axis.remap("SSSS", [b, s, h, d])
                T.reads(split_0[v_b, v_s, v_h, v_d - T.int64(4):v_d - T.int64(4) + T.int64(9)])
                T.writes(rotary[v_b, v_s, v_h, v_d])
                rotary[v_b, v_s, v_h, v_d] = T.cos(T.Cast("float32", v_s) / T.pow(T.float32(10000.0), T.Cast("float32", v_d % T.int64(4) * T.int64(2)) / T.float32(8.0))) * split_0[v_b, v_s, v_h, v_d] + T.sin(T.Cast("float32", v_s) / T.pow(T.float32(10000.0), T.Cast("float32", v_d % T.int64(4) * T.int64(2)) / T.float32(8.0))) * T.if_then_else(v_d < T.int64(4), split_0[v_b, v_s, v_h, v_d + T.int64(4)] * T.float32(-1.0), split_0[v_b, v_s, v_h, v_d - T.int64(4)])

    @T.prim_func(private=True, s_tir=True)
    def rotary_embedding1(split_1: T.Buffer((T.int64(1), seq_len, T.int64(2), T.int64(8)), "float32"), rotary: T.Buffer((T.int64(1), seq_len, T.int64(2), T.int64(8)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for b, s, h, d in T.grid(T.int64(1), seq_len, T.int64(2), T.int64(8)):
            with T.sblock("rotary"):
                v_b, v_s, v_h, v_d = T.axis.remap("SSSS", [b, s, h, d])
                T.reads(split_1[v_b, v_s, v_h, v_d - T.int64(4):v_d - T.int64(4) + T.int64(9)])
                T.writes(rotary[v_b, v_s, v_h, v_d])
                rotary[v_b, v_s, v_h, v_d] = T.cos(T.Cast("float32", v_s) / T.pow(T.float32(10000.0), T.Cast("float32", v_d % T.int64(4) * T.int64(2)) / T.float32(8.0))) * split_1[v_b, v_s, v_h, v_d] + T.sin(T.Cast("float32", v_s) / T.pow(T.float32(10000.0), T.Cast("float32", v_d % T.int64(4) * T.int64(2)) / T.float32(8.0))) * T.if_then_else(v_d < T.int64(4), split_1[v_b, v_s, v_h, v_d + T.int64(4)] * T.float32(-1.0), split_1[v_b, v_s, v_h, v_d - T.int64(4)])

    @T.prim_func(private=True, s_tir=True)
    def rotary_embedding2(split_04: T.Buffer((T.int64(1), T.int64(1), T.int64(4), T.int64(8)), "float32"), total_seq_len: T.int64, rotary: T.Buffer((T.int64(1), T.int64(1), T.int64(4), T.int64(8)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for b, s, h, d in T.grid(T.int64(1), T.int64(1), T.int64(4), T.int64(8)):
            with T.sblock("rotary"):
                v_b, v_s, v_h, v_d = T.axis.remap("SSSS", [b, s, h, d])
                T.reads(split_04[v_b, v_s, v_h, v_d - T.int64(4):v_d - T.int64(4) + T.int64(9)])
                T.writes(rotary[v_b, v_s, v_h, v_d])
                rotary[v_b, v_s, v_h, v_d] = T.cos(T.Cast("float32", v_s + total_seq_len - T.int64(1)) / T.pow(T.float32(10000.0), T.Cast("float32", v_d % T.int64(4) * T.int64(2)) / T.float32(8.0))) * split_04[v_b, v_s, v_h, v_d] + T.sin(T.Cast("float32", v_s + total_seq_len - T.int64(1)) / T.pow(T.float32(10000.0), T.Cast("float32", v_d % T.int64(4) * T.int64(2)) / T.float32(8.0))) * T.if_then_else(v_d < T.int64(4), split_04[v_b, v_s, v_h, v_d + T.int64(4)] * T.float32(-1.0), split_04[v_b, v_s, v_h, v_d - T.int64(4)])

    @T.prim_func(private=True, s_tir=True)
    def rotary_embedding3(split_14: T.Buffer((T.int64(1), T.int64(1), T.int64(2), T.int64(8)), "float32"), total_seq_len: T.int64, rotary: T.Buffer((T.int64(1), T.int64(1), T.int64(2), T.int64(8)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for b, s, h, d in T.grid(T.int64(1), T.int64(1), T.int64(2), T.int64(8)):
            with T.sblock("rotary"):
                v_b, v_s, v_h, v_d = T.axis.remap("SSSS", [b, s, h, d])
                T.reads(split_14[v_b, v_s, v_h, v_d - T.int64(4):v_d - T.int64(4) + T.int64(9)])
                T.writes(rotary[v_b, v_s, v_h, v_d])
                rotary[v_b, v_s, v_h, v_d] = T.cos(T.Cast("float32", v_s + total_seq_len - T.int64(1)) / T.pow(T.float32(10000.0), T.Cast("float32", v_d % T.int64(4) * T.int64(2)) / T.float32(8.0))) * split_14[v_b, v_s, v_h, v_d] + T.sin(T.Cast("float32", v_s + total_seq_len - T.int64(1)) / T.pow(T.float32(10000.0), T.Cast("float32", v_d % T.int64(4) * T.int64(2)) / T.float32(8.0))) * T.if_then_else(v_d < T.int64(4), split_14[v_b, v_s, v_h, v_d + T.int64(4)] * T.float32(-1.0), split_14[v_b, v_s, v_h, v_d - T.int64(4)])

    @R.function
    def _initialize_effect() -> R.Tuple(R.Any, R.Any, R.Any, R.Any):
        with R.dataflow():
            lv: R.Tensor((8, 2, 8), dtype="float32") = R.zeros(R.shape([8, 2, 8]), dtype="float32")
            layers_0_self_attn_k_cache: R.Any = R.call_pure_packed("vm.builtin.attention_kv_cache_create", lv, R.shape([8, 2, 8]), 0, ty_args=(R.Any,))
            lv1: R.Tensor((8, 2, 8), dtype="float32") = R.zeros(R.shape([8, 2, 8]), dtype="float32")
            layers_0_self_attn_v_cache: R.Any = R.call_pure_packed("vm.builtin.attention_kv_cache_create", lv1, R.shape([8, 2, 8]), 0, ty_args=(R.Any,))
            lv2: R.Tensor((8, 2, 8), dtype="float32") = R.zeros(R.shape([8, 2, 8]), dtype="float32")
            layers_1_self_attn_k_cache: R.Any = R.call_pure_packed("vm.builtin.attention_kv_cache_create", lv2, R.shape([8, 2, 8]), 0, ty_args=(R.Any,))
            lv3: R.Tensor((8, 2, 8), dtype="float32") = R.zeros(R.shape([8, 2, 8]), dtype="float32")
            layers_1_self_attn_v_cache: R.Any = R.call_pure_packed("vm.builtin.attention_kv_cache_create", lv3, R.shape([8, 2, 8]), 0, ty_args=(R.Any,))
            lv4: R.Tuple(R.Any, R.Any, R.Any, R.Any) = layers_0_self_attn_k_cache, layers_0_self_attn_v_cache, layers_1_self_attn_k_cache, layers_1_self_attn_v_cache
            gv: R.Tuple(R.Any, R.Any, R.Any, R.Any) = lv4
            R.output(gv)
        return gv

    @R.function
    def decode(ids: R.Tensor((1, 1), dtype="int32"), total_seq_len_1: R.Shape([total_seq_len]), layers_0_self_attn_k_cache: R.Any, layers_0_self_attn_v_cache: R.Any, layers_1_self_attn_k_cache: R.Any, layers_1_self_attn_v_cache: R.Any, embed_tokens_weight: R.Tensor((128, 32), dtype="float32"), layers_0_input_layernorm_weight: R.Tensor((32,), dtype="float32"), layers_0_self_attn_qkv_proj_weight: R.Tensor((64, 32), dtype="float32"), layers_0_self_attn_o_proj_weight: R.Tensor((32, 32), dtype="float32"), layers_0_post_attention_layernorm_weight: R.Tensor((32,), dtype="float32"), layers_0_mlp_gate_up_proj_weight: R.Tensor((176, 32), dtype="float32"), layers_0_mlp_down_proj_weight: R.Tensor((32, 88), dtype="float32"), layers_1_input_layernorm_weight: R.Tensor((32,), dtype="float32"), layers_1_self_attn_qkv_proj_weight: R.Tensor((64, 32), dtype="float32"), layers_1_self_attn_o_proj_weight: R.Tensor((32, 32), dtype="float32"), layers_1_post_attention_layernorm_weight: R.Tensor((32,), dtype="float32"), layers_1_mlp_gate_up_proj_weight: R.Tensor((176, 32), dtype="float32"), layers_1_mlp_down_proj_weight: R.Tensor((32, 88), dtype="float32"), norm_weight: R.Tensor((32,), dtype="float32"), lm_head_weight: R.Tensor((128, 32), dtype="float32")) -> R.Tuple(R.Tensor((1, 1, 128), dtype="float32"), R.Tuple(R.Any, R.Any, R.Any, R.Any)):
        R.func_attr({"num_input": 6})
        cls = Module
        with R.dataflow():
            reshape10: R.Tensor((1,), dtype="int32") = R.reshape(ids, R.shape([1]))
            take1: R.Tensor((1, 32), dtype="float32") = R.take(embed_tokens_weight, reshape10, axis=0, mode="fast")
            reshape11: R.Tensor((1, 1, 32), dtype="float32") = R.reshape(take1, R.shape([1, 1, 32]))
            rms_norm5: R.Tensor((1, 1, 32), dtype="float32") = R.nn.rms_norm(reshape11, layers_0_input_layernorm_weight, axes=[-1], epsilon=1.0000000000000001e-05)
            permute_dims17: R.Tensor((32, 64), dtype="float32") = R.permute_dims(layers_0_self_attn_qkv_proj_weight, axes=None)
            matmul13: R.Tensor((1, 1, 64), dtype="float32") = R.matmul(rms_norm5, permute_dims17, out_dtype=None)
            reshape12: R.Tensor((1, 1, 8, 8), dtype="float32") = R.reshape(matmul13, R.shape([1, 1, 8, 8]))
            split4: R.Tuple(R.Tensor((1, 1, 4, 8), dtype="float32"), R.Tensor((1, 1, 2, 8), dtype="float32"), R.Tensor((1, 1, 2, 8), dtype="float32")) = R.split(reshape12, indices_or_sections=[4, 6], axis=2)
            split_04: R.Tensor((1, 1, 4, 8), dtype="float32") = split4[0]
            split_14: R.Tensor((1, 1, 2, 8), dtype="float32") = split4[1]
            split_22: R.Tensor((1, 1, 2, 8), dtype="float32") = split4[2]
            lv20 = R.call_tir(cls.rotary_embedding2, (split_04, total_seq_len), out_ty=R.Tensor((1, 1, 4, 8), dtype="float32"))
            lv21 = R.call_tir(cls.rotary_embedding3, (split_14, total_seq_len), out_ty=R.Tensor((1, 1, 2, 8), dtype="float32"))
            squeeze4: R.Tensor((1, 2, 8), dtype="float32") = R.squeeze(lv21, axis=[0])
            lv22: R.Any = R.call_inplace_packed("vm.builtin.attention_kv_cache_append", layers_0_self_attn_k_cache, squeeze4, inplace_indices=[0], ty_args=(R.Any,))
            squeeze5: R.Tensor((1, 2, 8), dtype="float32") = R.squeeze(split_22, axis=[0])
            lv23: R.Any = R.call_inplace_packed("vm.builtin.attention_kv_cache_append", layers_0_self_attn_v_cache, squeeze5, inplace_indices=[0], ty_args=(R.Any,))
            lv24: R.Tensor((total_seq_len, 2, 8), dtype="float32") = R.call_pure_packed("vm.builtin.attention_kv_cache_view", lv22, R.shape([total_seq_len, 2, 8]), ty_args=(R.Tensor((total_seq_len, 2, 8), dtype="float32"),))
            reshape13: R.Tensor((1, total_seq_len, 2, 8), dtype="float32") = R.reshape(lv24, R.shape([1, total_seq_len, 2, 8]))
            lv25: R.Tensor((total_seq_len, 2, 8), dtype="float32") = R.call_pure_packed("vm.builtin.attention_kv_cache_view", lv23, R.shape([total_seq_len, 2, 8]), ty_args=(R.Tensor((total_seq_len, 2, 8), dtype="float32"),))
            reshape14: R.Tensor((1, total_seq_len, 2, 8), dtype="float32") = R.reshape(lv25, R.shape([1, total_seq_len, 2, 8]))
            repeat4: R.Tensor((1, total_seq_len, 4, 8), dtype="float32") = R.repeat(reshape13, repeats=2, axis=2)
            repeat5: R.Tensor((1, total_seq_len, 4, 8), dtype="float32") = R.repeat(reshape14, repeats=2, axis=2)
            permute_dims18: R.Tensor((1, 4, 1, 8), dtype="float32") = R.permute_dims(lv20, axes=[0, 2, 1, 3])
            permute_dims19: R.Tensor((1, 4, 8, total_seq_len), dtype="float32") = R.permute_dims(repeat4, axes=[0, 2, 3, 1])
            permute_dims20: R.Tensor((1, 4, total_seq_len, 8), dtype="float32") = R.permute_dims(repeat5, axes=[0, 2, 1, 3])
            matmul14: R.Tensor((1, 4, 1, total_seq_len), dtype="float32") = R.matmul(permute_dims18, permute_dims19, out_dtype=None)
            divide2: R.Tensor((1, 4, 1, total_seq_len), dtype="float32") = R.divide(matmul14, R.const(2.8284270763397217, "float32"))
            lv26 = R.call_tir(cls.causal_mask1, (divide2,), out_ty=R.Tensor((1, 4, 1, total_seq_len), dtype="float32"))
            softmax2: R.Tensor((1, 4, 1, total_seq_len), dtype="float32") = R.nn.softmax(lv26, axis=-1)
            matmul15: R.Tensor((1, 4, 1, 8), dtype="float32") = R.matmul(softmax2, permute_dims20, out_dtype=None)
            permute_dims21: R.Tensor((1, 1, 4, 8), dtype="float32") = R.permute_dims(matmul15, axes=[0, 2, 1, 3])
            reshape15: R.Tensor((1, 1, 32), dtype="float32") = R.reshape(permute_dims21, R.shape([1, 1, 32]))
            permute_dims22: R.Tensor((32, 32), dtype="float32") = R.permute_dims(layers_0_self_attn_o_proj_weight, axes=None)
            matmul16: R.Tensor((1, 1, 32), dtype="float32") = R.matmul(reshape15, permute_dims22, out_dtype=None)
            add4: R.Tensor((1, 1, 32), dtype="float32") = R.add(reshape11, matmul16)
            rms_norm6: R.Tensor((1, 1, 32), dtype="float32") = R.nn.rms_norm(add4, layers_0_post_attention_layernorm_weight, axes=[-1], epsilon=1.0000000000000001e-05)
            permute_dims23: R.Tensor((32, 176), dtype="float32") = R.permute_dims(layers_0_mlp_gate_up_proj_weight, axes=None)
            matmul17: R.Tensor((1, 1, 176), dtype="float32") = R.matmul(rms_norm6, permute_dims23, out_dtype=None)
            split5: R.Tuple(R.Tensor((1, 1, 88), dtype="float32"), R.Tensor((1, 1, 88), dtype="float32")) = R.split(matmul17, indices_or_sections=2, axis=-1)
            split_05: R.Tensor((1, 1, 88), dtype="float32") = split5[0]
            split_15: R.Tensor((1, 1, 88), dtype="float32") = split5[1]
            silu2: R.Tensor((1, 1, 88), dtype="float32") = R.nn.silu(split_05)
            mul2: R.Tensor((1, 1, 88), dtype="float32") = R.multiply(silu2, split_15)
            permute_dims24: R.Tensor((88, 32), dtype="float32") = R.permute_dims(layers_0_mlp_down_proj_weight, axes=None)
            matmul18: R.Tensor((1, 1, 32), dtype="float32") = R.matmul(mul2, permute_dims24, out_dtype=None)
            add5: R.Tensor((1, 1, 32), dtype="float32") = R.add(add4, matmul18)
            rms_norm7: R.Tensor((1, 1, 32), dtype="float32") = R.nn.rms_norm(add5, layers_1_input_layernorm_weight, axes=[-1], epsilon=1.0000000000000001e-05)
            permute_dims25: R.Tensor((32, 64), dtype="float32") = R.permute_dims(layers_1_self_attn_qkv_proj_weight, axes=None)
            matmul19: R.Tensor((1, 1, 64), dtype="float32") = R.matmul(rms_norm7, permute_dims25, out_dtype=None)
            reshape16: R.Tensor((1, 1, 8, 8), dtype="float32") = R.reshape(matmul19, R.shape([1, 1, 8, 8]))
            split6: R.Tuple(R.Tensor((1, 1, 4, 8), dtype="float32"), R.Tensor((1, 1, 2, 8), dtype="float32"), R.Tensor((1, 1, 2, 8), dtype="float32")) = R.split(reshape16, indices_or_sections=[4, 6], axis=2)
            split_06: R.Tensor((1, 1, 4, 8), dtype="float32") = split6[0]
            split_16: R.Tensor((1, 1, 2, 8), dtype="float32") = split6[1]
            split_23: R.Tensor((1, 1, 2, 8), dtype="float32") = split6[2]
            lv27 = R.call_tir(cls.rotary_embedding2, (split_06, total_seq_len), out_ty=R.Tensor((1, 1, 4, 8), dtype="float32"))
            lv28 = R.call_tir(cls.rotary_embedding3, (split_16, total_seq_len), out_ty=R.Tensor((1, 1, 2, 8), dtype="float32"))
            squeeze6: R.Tensor((1, 2, 8), dtype="float32") = R.squeeze(lv28, axis=[0])
            lv29: R.Any = R.call_inplace_packed("vm.builtin.attention_kv_cache_append", layers_1_self_attn_k_cache, squeeze6, inplace_indices=[0], ty_args=(R.Any,))
            squeeze7: R.Tensor((1, 2, 8), dtype="float32") = R.squeeze(split_23, axis=[0])
            lv30: R.Any = R.call_inplace_packed("vm.builtin.attention_kv_cache_append", layers_1_self_attn_v_cache, squeeze7, inplace_indices=[0], ty_args=(R.Any,))
            lv31: R.Tensor((total_seq_len, 2, 8), dtype="float32") = R.call_pure_packed("vm.builtin.attention_kv_cache_view", lv29, R.shape([total_seq_len, 2, 8]), ty_args=(R.Tensor((total_seq_len, 2, 8), dtype="float32"),))
            reshape17: R.Tensor((1, total_seq_len, 2, 8), dtype="float32") = R.reshape(lv31, R.shape([1, total_seq_len, 2, 8]))
            lv32: R.Tensor((total_seq_len, 2, 8), dtype="float32") = R.call_pure_packed("vm.builtin.attention_kv_cache_view", lv30, R.shape([total_seq_len, 2, 8]), ty_args=(R.Tensor((total_seq_len, 2, 8), dtype="float32"),))
            reshape18: R.Tensor((1, total_seq_len, 2, 8), dtype="float32") = R.reshape(lv32, R.shape([1, total_seq_len, 2, 8]))
            repeat6: R.Tensor((1, total_seq_len, 4, 8), dtype="float32") = R.repeat(reshape17, repeats=2, axis=2)
            repeat7: R.Tensor((1, total_seq_len, 4, 8), dtype="float32") = R.repeat(reshape18, repeats=2, axis=2)
            permute_dims26: R.Tensor((1, 4, 1, 8), dtype="float32") = R.permute_dims(lv27, axes=[0, 2, 1, 3])
            permute_dims27: R.Tensor((1, 4, 8, total_seq_len), dtype="float32") = R.permute_dims(repeat6, axes=[0, 2, 3, 1])
            permute_dims28: R.Tensor((1, 4, total_seq_len, 8), dtype="float32") = R.permute_dims(repeat7, axes=[0, 2, 1, 3])
            matmul20: R.Tensor((1, 4, 1, total_seq_len), dtype="float32") = R.matmul(permute_dims26, permute_dims27, out_dtype=None)
            divide3: R.Tensor((1, 4, 1, total_seq_len), dtype="float32") = R.divide(matmul20, R.const(2.8284270763397217, "float32"))
            lv33 = R.call_tir(cls.causal_mask1, (divide3,), out_ty=R.Tensor((1, 4, 1, total_seq_len), dtype="float32"))
            softmax3: R.Tensor((1, 4, 1, total_seq_len), dtype="float32") = R.nn.softmax(lv33, axis=-1)
            matmul21: R.Tensor((1, 4, 1, 8), dtype="float32") = R.matmul(softmax3, permute_dims28, out_dtype=None)
            permute_dims29: R.Tensor((1, 1, 4, 8), dtype="float32") = R.permute_dims(matmul21, axes=[0, 2, 1, 3])
            reshape19: R.Tensor((1, 1, 32), dtype="float32") = R.reshape(permute_dims29, R.shape([1, 1, 32]))
            permute_dims30: R.Tensor((32, 32), dtype="float32") = R.permute_dims(layers_1_self_attn_o_proj_weight, axes=None)
            matmul22: R.Tensor((1, 1, 32), dtype="float32") = R.matmul(reshape19, permute_dims30, out_dtype=None)
            add6: R.Tensor((1, 1, 32), dtype="float32") = R.add(add5, matmul22)
            rms_norm8: R.Tensor((1, 1, 32), dtype="float32") = R.nn.rms_norm(add6, layers_1_post_attention_layernorm_weight, axes=[-1], epsilon=1.0000000000000001e-05)
            permute_dims31: R.Tensor((32, 176), dtype="float32") = R.permute_dims(layers_1_mlp_gate_up_proj_weight, axes=None)
            matmul23: R.Tensor((1, 1, 176), dtype="float32") = R.matmul(rms_norm8, permute_dims31, out_dtype=None)
            split7: R.Tuple(R.Tensor((1, 1, 88), dtype="float32"), R.Tensor((1, 1, 88), dtype="float32")) = R.split(matmul23, indices_or_sections=2, axis=-1)
            split_07: R.Tensor((1, 1, 88), dtype="float32") = split7[0]
            split_17: R.Tensor((1, 1, 88), dtype="float32") = split7[1]
            silu3: R.Tensor((1, 1, 88), dtype="float32") = R.nn.silu(split_07)
            mul3: R.Tensor((1, 1, 88), dtype="float32") = R.multiply(silu3, split_17)
            permute_dims32: R.Tensor((88, 32), dtype="float32") = R.permute_dims(layers_1_mlp_down_proj_weight, axes=None)
            matmul24: R.Tensor((1, 1, 32), dtype="float32") = R.matmul(mul3, permute_dims32, out_dtype=None)
            add7: R.Tensor((1, 1, 32), dtype="float32") = R.add(add6, matmul24)
            lv34 = R.call_tir(cls.last_position1, (add7,), out_ty=R.Tensor((1, 1, 32), dtype="float32"))
            rms_norm9: R.Tensor((1, 1, 32), dtype="float32") = R.nn.rms_norm(lv34, norm_weight, axes=[-1], epsilon=1.0000000000000001e-05)
            permute_dims33: R.Tensor((32, 128), dtype="float32") = R.permute_dims(lm_head_weight, axes=None)
            matmul25: R.Tensor((1, 1, 128), dtype="float32") = R.matmul(rms_norm9, permute_dims33, out_dtype=None)
            gv2: R.Tuple(R.Tensor((1, 1, 128), dtype="float32"), R.Tuple(R.Any, R.Any, R.Any, R.Any)) = matmul25, (lv22, lv23, lv29, lv30)
            R.output(gv2)
        return gv2

    @R.function
    def prefill(ids: R.Tensor((1, seq_len), dtype="int32"), layers_0_self_attn_k_cache: R.Any, layers_0_self_attn_v_cache: R.Any, layers_1_self_attn_k_cache: R.Any, layers_1_self_attn_v_cache: R.Any, embed_tokens_weight: R.Tensor((128, 32), dtype="float32"), layers_0_input_layernorm_weight: R.Tensor((32,), dtype="float32"), layers_0_self_attn_qkv_proj_weight: R.Tensor((64, 32), dtype="float32"), layers_0_self_attn_o_proj_weight: R.Tensor((32, 32), dtype="float32"), layers_0_post_attention_layernorm_weight: R.Tensor((32,), dtype="float32"), layers_0_mlp_gate_up_proj_weight: R.Tensor((176, 32), dtype="float32"), layers_0_mlp_down_proj_weight: R.Tensor((32, 88), dtype="float32"), layers_1_input_layernorm_weight: R.Tensor((32,), dtype="float32"), layers_1_self_attn_qkv_proj_weight: R.Tensor((64, 32), dtype="float32"), layers_1_self_attn_o_proj_weight: R.Tensor((32, 32), dtype="float32"), layers_1_post_attention_layernorm_weight: R.Tensor((32,), dtype="float32"), layers_1_mlp_gate_up_proj_weight: R.Tensor((176, 32), dtype="float32"), layers_1_mlp_down_proj_weight: R.Tensor((32, 88), dtype="float32"), norm_weight: R.Tensor((32,), dtype="float32"), lm_head_weight: R.Tensor((128, 32), dtype="float32")) -> R.Tuple(R.Tensor((1, 1, 128), dtype="float32"), R.Tuple(R.Any, R.Any, R.Any, R.Any)):
        R.func_attr({"num_input": 5})
        cls = Module
        with R.dataflow():
            reshape: R.Tensor((seq_len,), dtype="int32") = R.reshape(ids, R.shape([seq_len]))
            take: R.Tensor((seq_len, 32), dtype="float32") = R.take(embed_tokens_weight, reshape, axis=0, mode="fast")
            reshape1: R.Tensor((1, seq_len, 32), dtype="float32") = R.reshape(take, R.shape([1, seq_len, 32]))
            rms_norm: R.Tensor((1, seq_len, 32), dtype="float32") = R.nn.rms_norm(reshape1, layers_0_input_layernorm_weight, axes=[-1], epsilon=1.0000000000000001e-05)
            permute_dims: R.Tensor((32, 64), dtype="float32") = R.permute_dims(layers_0_self_attn_qkv_proj_weight, axes=None)
            matmul: R.Tensor((1, seq_len, 64), dtype="float32") = R.matmul(rms_norm, permute_dims, out_dtype=None)
            reshape2: R.Tensor((1, seq_len, 8, 8), dtype="float32") = R.reshape(matmul, R.shape([1, seq_len, 8, 8]))
            split: R.Tuple(R.Tensor((1, seq_len, 4, 8), dtype="float32"), R.Tensor((1, seq_len, 2, 8), dtype="float32"), R.Tensor((1, seq_len, 2, 8), dtype="float32")) = R.split(reshape2, indices_or_sections=[4, 6], axis=2)
            split_0: R.Tensor((1, seq_len, 4, 8), dtype="float32") = split[0]
            split_1: R.Tensor((1, seq_len, 2, 8), dtype="float32") = split[1]
            split_2: R.Tensor((1, seq_len, 2, 8), dtype="float32") = split[2]
            lv5 = R.call_tir(cls.rotary_embedding, (split_0,), out_ty=R.Tensor((1, seq_len, 4, 8), dtype="float32"))
            lv6 = R.call_tir(cls.rotary_embedding1, (split_1,), out_ty=R.Tensor((1, seq_len, 2, 8), dtype="float32"))
            squeeze: R.Tensor((seq_len, 2, 8), dtype="float32") = R.squeeze(lv6, axis=[0])
            lv7: R.Any = R.call_inplace_packed("vm.builtin.attention_kv_cache_append", layers_0_self_attn_k_cache, squeeze, inplace_indices=[0], ty_args=(R.Any,))
            squeeze1: R.Tensor((seq_len, 2, 8), dtype="float32") = R.squeeze(split_2, axis=[0])
            lv8: R.Any = R.call_inplace_packed("vm.builtin.attention_kv_cache_append", layers_0_self_attn_v_cache, squeeze1, inplace_indices=[0], ty_args=(R.Any,))
            lv9: R.Tensor((seq_len, 2, 8), dtype="float32") = R.call_pure_packed("vm.builtin.attention_kv_cache_view", lv7, R.shape([seq_len, 2, 8]), ty_args=(R.Tensor((seq_len, 2, 8), dtype="float32"),))
            reshape3: R.Tensor((1, seq_len, 2, 8), dtype="float32") = R.reshape(lv9, R.shape([1, seq_len, 2, 8]))
            lv10: R.Tensor((seq_len, 2, 8), dtype="float32") = R.call_pure_packed("vm.builtin.attention_kv_cache_view", lv8, R.shape([seq_len, 2, 8]), ty_args=(R.Tensor((seq_len, 2, 8), dtype="float32"),))
            reshape4: R.Tensor((1, seq_len, 2, 8), dtype="float32") = R.reshape(lv10, R.shape([1, seq_len, 2, 8]))
            repeat: R.Tensor((1, seq_len, 4, 8), dtype="float32") = R.repeat(reshape3, repeats=2, axis=2)
            repeat1: R.Tensor((1, seq_len, 4, 8), dtype="float32") = R.repeat(reshape4, repeats=2, axis=2)
            permute_dims1: R.Tensor((1, 4, seq_len, 8), dtype="float32") = R.permute_dims(lv5, axes=[0, 2, 1, 3])
            permute_dims2: R.Tensor((1, 4, 8, seq_len), dtype="float32") = R.permute_dims(repeat, axes=[0, 2, 3, 1])
            permute_dims3: R.Tensor((1, 4, seq_len, 8), dtype="float32") = R.permute_dims(repeat1, axes=[0, 2, 1, 3])
            matmul1: R.Tensor((1, 4, seq_len, seq_len), dtype="float32") = R.matmul(permute_dims1, permute_dims2, out_dtype=None)
            divide: R.Tensor((1, 4, seq_len, seq_len), dtype="float32") = R.divide(matmul1, R.const(2.8284270763397217, "float32"))
            lv11 = R.call_tir(cls.causal_mask, (divide,), out_ty=R.Tensor((1, 4, seq_len, seq_len), dtype="float32"))
            softmax: R.Tensor((1, 4, seq_len, seq_len), dtype="float32") = R.nn.softmax(lv11, axis=-1)
            matmul2: R.Tensor((1, 4, seq_len, 8), dtype="float32") = R.matmul(softmax, permute_dims3, out_dtype=None)
            permute_dims4: R.Tensor((1, seq_len, 4, 8), dtype="float32") = R.permute_dims(matmul2, axes=[0, 2, 1, 3])
            reshape5: R.Tensor((1, seq_len, 32), dtype="float32") = R.reshape(permute_dims4, R.shape([1, seq_len, 32]))
            permute_dims5: R.Tensor((32, 32), dtype="float32") = R.permute_dims(layers_0_self_attn_o_proj_weight, axes=None)
            matmul3: R.Tensor((1, seq_len, 32), dtype="float32") = R.matmul(reshape5, permute_dims5, out_dtype=None)
            add: R.Tensor((1, seq_len, 32), dtype="float32") = R.add(reshape1, matmul3)
            rms_norm1: R.Tensor((1, seq_len, 32), dtype="float32") = R.nn.rms_norm(add, layers_0_post_attention_layernorm_weight, axes=[-1], epsilon=1.0000000000000001e-05)
            permute_dims6: R.Tensor((32, 176), dtype="float32") = R.permute_dims(layers_0_mlp_gate_up_proj_weight, axes=None)
            matmul4: R.Tensor((1, seq_len, 176), dtype="float32") = R.matmul(rms_norm1, permute_dims6, out_dtype=None)
            split1: R.Tuple(R.Tensor((1, seq_len, 88), dtype="float32"), R.Tensor((1, seq_len, 88), dtype="float32")) = R.split(matmul4, indices_or_sections=2, axis=-1)
            split_01: R.Tensor((1, seq_len, 88), dtype="float32") = split1[0]
            split_11: R.Tensor((1, seq_len, 88), dtype="float32") = split1[1]
            silu: R.Tensor((1, seq_len, 88), dtype="float32") = R.nn.silu(split_01)
            mul: R.Tensor((1, seq_len, 88), dtype="float32") = R.multiply(silu, split_11)
            permute_dims7: R.Tensor((88, 32), dtype="float32") = R.permute_dims(layers_0_mlp_down_proj_weight, axes=None)
            matmul5: R.Tensor((1, seq_len, 32), dtype="float32") = R.matmul(mul, permute_dims7, out_dtype=None)
            add1: R.Tensor((1, seq_len, 32), dtype="float32") = R.add(add, matmul5)
            rms_norm2: R.Tensor((1, seq_len, 32), dtype="float32") = R.nn.rms_norm(add1, layers_1_input_layernorm_weight, axes=[-1], epsilon=1.0000000000000001e-05)
            permute_dims8: R.Tensor((32, 64), dtype="float32") = R.permute_dims(layers_1_self_attn_qkv_proj_weight, axes=None)
            matmul6: R.Tensor((1, seq_len, 64), dtype="float32") = R.matmul(rms_norm2, permute_dims8, out_dtype=None)
            reshape6: R.Tensor((1, seq_len, 8, 8), dtype="float32") = R.reshape(matmul6, R.shape([1, seq_len, 8, 8]))
            split2: R.Tuple(R.Tensor((1, seq_len, 4, 8), dtype="float32"), R.Tensor((1, seq_len, 2, 8), dtype="float32"), R.Tensor((1, seq_len, 2, 8), dtype="float32")) = R.split(reshape6, indices_or_sections=[4, 6], axis=2)
            split_02: R.Tensor((1, seq_len, 4, 8), dtype="float32") = split2[0]
            split_12: R.Tensor((1, seq_len, 2, 8), dtype="float32") = split2[1]
            split_21: R.Tensor((1, seq_len, 2, 8), dtype="float32") = split2[2]
            lv12 = R.call_tir(cls.rotary_embedding, (split_02,), out_ty=R.Tensor((1, seq_len, 4, 8), dtype="float32"))
            lv13 = R.call_tir(cls.rotary_embedding1, (split_12,), out_ty=R.Tensor((1, seq_len, 2, 8), dtype="float32"))
            squeeze2: R.Tensor((seq_len, 2, 8), dtype="float32") = R.squeeze(lv13, axis=[0])
            lv14: R.Any = R.call_inplace_packed("vm.builtin.attention_kv_cache_append", layers_1_self_attn_k_cache, squeeze2, inplace_indices=[0], ty_args=(R.Any,))
            squeeze3: R.Tensor((seq_len, 2, 8), dtype="float32") = R.squeeze(split_21, axis=[0])
            lv15: R.Any = R.call_inplace_packed("vm.builtin.attention_kv_cache_append", layers_1_self_attn_v_cache, squeeze3, inplace_indices=[0], ty_args=(R.Any,))
            lv16: R.Tensor((seq_len, 2, 8), dtype="float32") = R.call_pure_packed("vm.builtin.attention_kv_cache_view", lv14, R.shape([seq_len, 2, 8]), ty_args=(R.Tensor((seq_len, 2, 8), dtype="float32"),))
            reshape7: R.Tensor((1, seq_len, 2, 8), dtype="float32") = R.reshape(lv16, R.shape([1, seq_len, 2, 8]))
            lv17: R.Tensor((seq_len, 2, 8), dtype="float32") = R.call_pure_packed("vm.builtin.attention_kv_cache_view", lv15, R.shape([seq_len, 2, 8]), ty_args=(R.Tensor((seq_len, 2, 8), dtype="float32"),))
            reshape8: R.Tensor((1, seq_len, 2, 8), dtype="float32") = R.reshape(lv17, R.shape([1, seq_len, 2, 8]))
            repeat2: R.Tensor((1, seq_len, 4, 8), dtype="float32") = R.repeat(reshape7, repeats=2, axis=2)
            repeat3: R.Tensor((1, seq_len, 4, 8), dtype="float32") = R.repeat(reshape8, repeats=2, axis=2)
            permute_dims9: R.Tensor((1, 4, seq_len, 8), dtype="float32") = R.permute_dims(lv12, axes=[0, 2, 1, 3])
            permute_dims10: R.Tensor((1, 4, 8, seq_len), dtype="float32") = R.permute_dims(repeat2, axes=[0, 2, 3, 1])
            permute_dims11: R.Tensor((1, 4, seq_len, 8), dtype="float32") = R.permute_dims(repeat3, axes=[0, 2, 1, 3])
            matmul7: R.Tensor((1, 4, seq_len, seq_len), dtype="float32") = R.matmul(permute_dims9, permute_dims10, out_dtype=None)
            divide1: R.Tensor((1, 4, seq_len, seq_len), dtype="float32") = R.divide(matmul7, R.const(2.8284270763397217, "float32"))
            lv18 = R.call_tir(cls.causal_mask, (divide1,), out_ty=R.Tensor((1, 4, seq_len, seq_len), dtype="float32"))
            softmax1: R.Tensor((1, 4, seq_len, seq_len), dtype="float32") = R.nn.softmax(lv18, axis=-1)
            matmul8: R.Tensor((1, 4, seq_len, 8), dtype="float32") = R.matmul(softmax1, permute_dims11, out_dtype=None)
            permute_dims12: R.Tensor((1, seq_len, 4, 8), dtype="float32") = R.permute_dims(matmul8, axes=[0, 2, 1, 3])
            reshape9: R.Tensor((1, seq_len, 32), dtype="float32") = R.reshape(permute_dims12, R.shape([1, seq_len, 32]))
            permute_dims13: R.Tensor((32, 32), dtype="float32") = R.permute_dims(layers_1_self_attn_o_proj_weight, axes=None)
            matmul9: R.Tensor((1, seq_len, 32), dtype="float32") = R.matmul(reshape9, permute_dims13, out_dtype=None)
            add2: R.Tensor((1, seq_len, 32), dtype="float32") = R.add(add1, matmul9)
            rms_norm3: R.Tensor((1, seq_len, 32), dtype="float32") = R.nn.rms_norm(add2, layers_1_post_attention_layernorm_weight, axes=[-1], epsilon=1.0000000000000001e-05)
            permute_dims14: R.Tensor((32, 176), dtype="float32") = R.permute_dims(layers_1_mlp_gate_up_proj_weight, axes=None)
            matmul10: R.Tensor((1, seq_len, 176), dtype="float32") = R.matmul(rms_norm3, permute_dims14, out_dtype=None)
            split3: R.Tuple(R.Tensor((1, seq_len, 88), dtype="float32"), R.Tensor((1, seq_len, 88), dtype="float32")) = R.split(matmul10, indices_or_sections=2, axis=-1)
            split_03: R.Tensor((1, seq_len, 88), dtype="float32") = split3[0]
            split_13: R.Tensor((1, seq_len, 88), dtype="float32") = split3[1]
            silu1: R.Tensor((1, seq_len, 88), dtype="float32") = R.nn.silu(split_03)
            mul1: R.Tensor((1, seq_len, 88), dtype="float32") = R.multiply(silu1, split_13)
            permute_dims15: R.Tensor((88, 32), dtype="float32") = R.permute_dims(layers_1_mlp_down_proj_weight, axes=None)
            matmul11: R.Tensor((1, seq_len, 32), dtype="float32") = R.matmul(mul1, permute_dims15, out_dtype=None)
            add3: R.Tensor((1, seq_len, 32), dtype="float32") = R.add(add2, matmul11)
            lv19 = R.call_tir(cls.last_position, (add3,), out_ty=R.Tensor((1, 1, 32), dtype="float32"))
            rms_norm4: R.Tensor((1, 1, 32), dtype="float32") = R.nn.rms_norm(lv19, norm_weight, axes=[-1], epsilon=1.0000000000000001e-05)
            permute_dims16: R.Tensor((32, 128), dtype="float32") = R.permute_dims(lm_head_weight, axes=None)
            matmul12: R.Tensor((1, 1, 128), dtype="float32") = R.matmul(rms_norm4, permute_dims16, out_dtype=None)
            gv1: R.Tuple(R.Tensor((1, 1, 128), dtype="float32"), R.Tuple(R.Any, R.Any, R.Any, R.Any)) = matmul12, (lv7, lv8, lv14, lv15)
            R.output(gv1)
        return gv1