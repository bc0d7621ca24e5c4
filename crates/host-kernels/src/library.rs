//! The library's kernels as one typed table: [`HostKernel`] is what the
//! `dispatch-host-library` pass selects and what the engine runs. In the IR a kernel is
//! an external symbol, `R.call_dps_packed("relax_host.conv2d_bias_relu", ...)`:
//! [`HostKernel::symbol`] writes it and [`HostKernel::from_symbol`] reads it back, the
//! only two places that know the spelling.

use crate::elementwise::{BinaryOp, Reduction, TakeMode, UnaryOp};

/// The prefix of every kernel's symbol.
pub const SYMBOL_PREFIX: &str = "relax_host.";

/// What a convolution kernel computes after the convolution itself, in this order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ConvFusion {
    /// Add a per-channel bias.
    pub bias: bool,
    /// Apply inference batch normalization (gamma, beta, mean, var, eps).
    pub bn: bool,
    /// Add a residual tensor of the output's shape.
    pub add: bool,
    /// Clamp at zero.
    pub relu: bool,
}

/// The form of a matrix product kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MatmulFusion {
    /// The second operand is `[N, K]` (`x @ permute_dims(W)` read untransposed).
    pub transposed_b: bool,
    /// Add a bias of `N` elements.
    pub bias: bool,
    /// Clamp at zero.
    pub relu: bool,
}

/// One kernel of the library, as called from Relax.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HostKernel {
    /// 2-D convolution (NCHW, OIHW) with its fused epilogue.
    Conv2d(ConvFusion),
    /// Matrix product with its fused epilogue.
    Matmul(MatmulFusion),
    /// Broadcasting binary operator, optionally clamped at zero.
    Binary {
        /// The operator.
        op: BinaryOp,
        /// Clamp at zero.
        relu: bool,
    },
    /// `max(x, 0)`.
    Relu,
    /// Elementwise function.
    Unary(UnaryOp),
    /// `x ** y` with a one-element exponent tensor read at run time.
    Power,
    /// GELU's tanh form spelled out step by step, its five scalars read at run time
    /// ([`crate::elementwise::gelu_tanh_chain`]).
    GeluTanhChain,
    /// `x * cos + rotate_half(x) * sin` ([`crate::elementwise::rotary_chain`]).
    RotaryChain,
    /// RMS normalization spelled out step by step, the exponent and epsilon read at
    /// run time ([`crate::elementwise::rms_norm_chain`]); `rsqrt`: the inverse as
    /// one `rsqrt` (else `1 / sqrt`).
    RmsNormChain {
        /// The inverse square root as `rsqrt` (else `1 / sqrt`).
        rsqrt: bool,
    },
    /// `concat(-x[..., h:], x[..., :h])` over the last axis
    /// ([`crate::elementwise::rotate_half`]).
    RotateHalf,
    /// Softmax over the last axis.
    Softmax,
    /// Softmax over the last axis whose rows of only `-inf` give zeros (torch's
    /// `_safe_softmax`: `softmax` followed by the guard `torch.export` writes out).
    SafeSoftmax,
    /// Softmax over the last axis whose NaN results become a scalar read at run time
    /// (ONNX exports' `where(isnan(p), fill, p)` after an attention softmax).
    SoftmaxNanFill,
    /// Mean over trailing axes.
    Mean,
    /// Sum, max or min over trailing axes.
    Reduce(Reduction),
    /// Index of the maximum (`max`) or minimum over the last axis or all elements.
    ArgReduce {
        /// `argmax` (else `argmin`).
        max: bool,
    },
    /// Layer normalization over trailing axes.
    LayerNorm,
    /// Inference batch normalization (channel axis 1).
    BatchNorm,
    /// Numpy broadcasting to the output's shape.
    BroadcastTo,
    /// Rows of a matrix picked by integer indices (`take` along axis 0).
    TakeRows(TakeMode),
    /// Transposition by an axes permutation.
    PermuteDims,
    /// Concatenation along an axis.
    Concat,
    /// 2-D max pooling.
    MaxPool2d,
    /// 2-D average pooling.
    AvgPool2d,
    /// Attention read through strides, one call per attention
    /// ([`crate::attention::attention`]).
    Attention,
}

const BINARY: [(BinaryOp, &str); 4] = [
    (BinaryOp::Add, "add"),
    (BinaryOp::Sub, "subtract"),
    (BinaryOp::Mul, "multiply"),
    (BinaryOp::Div, "divide"),
];

const REDUCTIONS: [(Reduction, &str); 3] = [
    (Reduction::Sum, "sum"),
    (Reduction::Max, "max"),
    (Reduction::Min, "min"),
];

impl BinaryOp {
    /// The Relax operator's name without `relax.` (`add`, `subtract`, ...).
    pub fn name(self) -> &'static str {
        BINARY.iter().find(|(op, _)| *op == self).map_or("", |(_, n)| n)
    }
    /// The operator of the Relax operator `relax.<name>`.
    pub fn from_name(name: &str) -> Option<BinaryOp> {
        BINARY.iter().find(|(_, n)| *n == name).map(|(op, _)| *op)
    }
}

impl Reduction {
    /// The Relax operator's name without `relax.` (`sum`, `max`, `min`).
    pub fn name(self) -> &'static str {
        REDUCTIONS.iter().find(|(r, _)| *r == self).map_or("", |(_, n)| n)
    }
    /// The reduction of the Relax operator `relax.<name>`.
    pub fn from_name(name: &str) -> Option<Reduction> {
        REDUCTIONS.iter().find(|(_, n)| *n == name).map(|(r, _)| *r)
    }
}

fn flag(s: &mut String, on: bool, suffix: &str) {
    if on {
        s.push_str(suffix);
    }
}

impl HostKernel {
    /// Every kernel of the library, each fused form once.
    pub fn all() -> Vec<HostKernel> {
        let mut v = Vec::new();
        for bits in 0..16u8 {
            v.push(HostKernel::Conv2d(ConvFusion {
                bias: bits & 1 != 0,
                bn: bits & 2 != 0,
                add: bits & 4 != 0,
                relu: bits & 8 != 0,
            }));
        }
        for bits in 0..8u8 {
            v.push(HostKernel::Matmul(MatmulFusion {
                transposed_b: bits & 1 != 0,
                bias: bits & 2 != 0,
                relu: bits & 4 != 0,
            }));
        }
        for (op, _) in BINARY {
            v.push(HostKernel::Binary { op, relu: false });
            v.push(HostKernel::Binary { op, relu: true });
        }
        v.push(HostKernel::Relu);
        v.extend(UnaryOp::ALL.iter().map(|&op| HostKernel::Unary(op)));
        v.push(HostKernel::Power);
        v.push(HostKernel::GeluTanhChain);
        v.push(HostKernel::RotateHalf);
        v.push(HostKernel::RotaryChain);
        v.push(HostKernel::RmsNormChain { rsqrt: true });
        v.push(HostKernel::RmsNormChain { rsqrt: false });
        v.extend([
            HostKernel::Softmax,
            HostKernel::SafeSoftmax,
            HostKernel::SoftmaxNanFill,
            HostKernel::Mean,
        ]);
        v.extend(REDUCTIONS.iter().map(|&(r, _)| HostKernel::Reduce(r)));
        v.extend([
            HostKernel::ArgReduce { max: true },
            HostKernel::ArgReduce { max: false },
            HostKernel::LayerNorm,
            HostKernel::BatchNorm,
            HostKernel::BroadcastTo,
            HostKernel::TakeRows(TakeMode::Fast),
            HostKernel::TakeRows(TakeMode::Clip),
            HostKernel::TakeRows(TakeMode::Wrap),
            HostKernel::PermuteDims,
            HostKernel::Concat,
            HostKernel::MaxPool2d,
            HostKernel::AvgPool2d,
            HostKernel::Attention,
        ]);
        v
    }

    /// The external symbol the IR calls it by (`relax_host.conv2d_bias_relu`).
    pub fn symbol(&self) -> String {
        let mut s = String::from(SYMBOL_PREFIX);
        match *self {
            HostKernel::Conv2d(f) => {
                s.push_str("conv2d");
                flag(&mut s, f.bias, "_bias");
                flag(&mut s, f.bn, "_bn");
                flag(&mut s, f.add, "_add");
                flag(&mut s, f.relu, "_relu");
            }
            HostKernel::Matmul(f) => {
                s.push_str("matmul");
                flag(&mut s, f.transposed_b, "_bt");
                flag(&mut s, f.bias, "_bias");
                flag(&mut s, f.relu, "_relu");
            }
            HostKernel::Binary { op, relu } => {
                s.push_str(op.name());
                flag(&mut s, relu, "_relu");
            }
            HostKernel::Relu => s.push_str("relu"),
            HostKernel::Unary(op) => s.push_str(op.name().trim_start_matches("nn.")),
            HostKernel::Power => s.push_str("power"),
            HostKernel::GeluTanhChain => s.push_str("gelu_tanh_chain"),
            HostKernel::RotateHalf => s.push_str("rotate_half"),
            HostKernel::RotaryChain => s.push_str("rotary_chain"),
            HostKernel::RmsNormChain { rsqrt } => {
                s.push_str("rms_norm_chain");
                flag(&mut s, rsqrt, "_rsqrt");
            }
            HostKernel::Softmax => s.push_str("softmax"),
            HostKernel::SafeSoftmax => s.push_str("safe_softmax"),
            HostKernel::SoftmaxNanFill => s.push_str("softmax_nan_fill"),
            HostKernel::Mean => s.push_str("mean"),
            HostKernel::Reduce(r) => s.push_str(r.name()),
            HostKernel::ArgReduce { max } => s.push_str(if max { "argmax" } else { "argmin" }),
            HostKernel::LayerNorm => s.push_str("layer_norm"),
            HostKernel::BatchNorm => s.push_str("batch_norm"),
            HostKernel::BroadcastTo => s.push_str("broadcast_to"),
            HostKernel::TakeRows(mode) => s.push_str(match mode {
                TakeMode::Fast => "take_rows",
                TakeMode::Clip => "take_rows_clip",
                TakeMode::Wrap => "take_rows_wrap",
            }),
            HostKernel::PermuteDims => s.push_str("permute_dims"),
            HostKernel::Concat => s.push_str("concat"),
            HostKernel::MaxPool2d => s.push_str("max_pool2d"),
            HostKernel::AvgPool2d => s.push_str("avg_pool2d"),
            HostKernel::Attention => s.push_str("attention"),
        }
        s
    }

    /// The kernel whose [`HostKernel::symbol`] is `symbol`.
    pub fn from_symbol(symbol: &str) -> Option<HostKernel> {
        HostKernel::all().into_iter().find(|k| k.symbol() == symbol)
    }

    /// This kernel with a bias added, when it has that form.
    pub fn with_bias(self) -> Option<HostKernel> {
        Some(match self {
            HostKernel::Conv2d(f) if !f.bias && !f.bn && !f.add && !f.relu => {
                HostKernel::Conv2d(ConvFusion { bias: true, ..f })
            }
            HostKernel::Matmul(f) if !f.bias && !f.relu => HostKernel::Matmul(MatmulFusion { bias: true, ..f }),
            _ => return None,
        })
    }

    /// This convolution with batch normalization added, when it has that form.
    pub fn with_batch_norm(self) -> Option<HostKernel> {
        match self {
            HostKernel::Conv2d(f) if !f.bn && !f.add && !f.relu => {
                Some(HostKernel::Conv2d(ConvFusion { bn: true, ..f }))
            }
            _ => None,
        }
    }

    /// This convolution with a residual add, when it has that form.
    pub fn with_residual(self) -> Option<HostKernel> {
        match self {
            HostKernel::Conv2d(f) if !f.add && !f.relu => Some(HostKernel::Conv2d(ConvFusion { add: true, ..f })),
            _ => None,
        }
    }

    /// This kernel with a `relu` clamp added, when it has that form.
    pub fn with_relu(self) -> Option<HostKernel> {
        Some(match self {
            HostKernel::Conv2d(f) if !f.relu => HostKernel::Conv2d(ConvFusion { relu: true, ..f }),
            HostKernel::Matmul(f) if !f.relu => HostKernel::Matmul(MatmulFusion { relu: true, ..f }),
            HostKernel::Binary { op, relu: false } => HostKernel::Binary { op, relu: true },
            _ => return None,
        })
    }

    /// Kernels with enough work per call to run on the thread pool as a whole.
    pub fn is_heavy(&self) -> bool {
        matches!(self, HostKernel::Conv2d(_) | HostKernel::Matmul(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_symbol_reads_back_as_its_kernel() {
        let all = HostKernel::all();
        let mut symbols = std::collections::HashSet::new();
        for k in &all {
            let s = k.symbol();
            assert!(symbols.insert(s.clone()), "{s} twice");
            assert_eq!(HostKernel::from_symbol(&s), Some(*k), "{s}");
        }
        assert_eq!(all.len(), 16 + 8 + 8 + 1 + UnaryOp::ALL.len() + 3 + 4 + 3 + 2 + 11 + 3);
        assert_eq!(
            HostKernel::Conv2d(ConvFusion {
                bias: true,
                bn: false,
                add: true,
                relu: true
            })
            .symbol(),
            "relax_host.conv2d_bias_add_relu"
        );
        assert_eq!(
            HostKernel::Matmul(MatmulFusion {
                transposed_b: true,
                bias: false,
                relu: false
            })
            .symbol(),
            "relax_host.matmul_bt"
        );
        assert_eq!(HostKernel::from_symbol("relax_host.conv2d_relu_bias"), None);
        assert_eq!(HostKernel::from_symbol("conv2d"), None);
    }
}
