//! The graph walk: values, bindings with derived StructInfo, parameters and the
//! final `main`.

use crate::error::{convert_err, ConvertError};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use relax_ir::arith::Analyzer;
use relax_ir::text::ops as sigs;
use relax_ir::tir::{BinOp, TirVar};
use relax_ir::{
    AttrValue, Attrs, BaseFunc, Binding, BindingBlock, DataType, Expr, ExprKind, Function, IRModule, NDArray, PrimExpr,
    SeqExpr, Span, StructInfo, Var,
};
use relax_op::{self as registry, InferCtx};

use crate::ops::{self, Node};
use crate::proto::{self, type_proto, ModelProto};
use crate::tensor::{self, dtype_of, onnx_type_name};
use crate::{ImportError, ImportOptions, Imported, Summary};

/// Contents of a tensor known at import time (small tensors: shapes, scalars).
#[derive(Clone, Debug)]
pub enum Known {
    /// Integer or bool elements, possibly symbolic (`seq_len`).
    Int(Vec<PrimExpr>),
    /// Float elements.
    Float(Vec<f64>),
}

impl Known {
    pub fn len(&self) -> usize {
        match self {
            Known::Int(v) => v.len(),
            Known::Float(v) => v.len(),
        }
    }
}

/// An ONNX value during import.
#[derive(Clone, Debug)]
pub struct TVal {
    /// The Relax leaf (a variable or constant) once materialized.
    pub expr: Option<Expr>,
    /// Element type.
    pub dtype: DataType,
    /// Shape, when the rank is known.
    pub shape: Option<Vec<PrimExpr>>,
    /// Contents known at import time.
    pub known: Option<Known>,
    /// An initializer not yet made a parameter or constant: its name and data.
    pub init: Option<(String, Arc<NDArray>)>,
}

impl TVal {
    /// A value known at import time, with a constant shape.
    pub fn known(dtype: DataType, shape: Vec<i64>, known: Known) -> TVal {
        TVal {
            expr: None,
            dtype,
            shape: Some(shape.into_iter().map(PrimExpr::int).collect()),
            known: Some(known),
            init: None,
        }
    }
    /// The rank, if known.
    pub fn rank(&self) -> Option<usize> {
        self.shape.as_ref().map(Vec::len)
    }
    /// Constant dimensions, if every dimension is a constant.
    pub fn const_shape(&self) -> Option<Vec<i64>> {
        self.shape.as_ref()?.iter().map(PrimExpr::as_int).collect()
    }
    /// Known integer contents that are all constants.
    pub fn const_ints(&self) -> Option<Vec<i64>> {
        match self.known.as_ref()? {
            Known::Int(v) => v.iter().map(PrimExpr::as_int).collect(),
            Known::Float(v) => Some(v.iter().map(|&f| f as i64).collect()),
        }
    }
    /// Known contents as floats (constants only).
    pub fn const_floats(&self) -> Option<Vec<f64>> {
        match self.known.as_ref()? {
            Known::Int(v) => v.iter().map(|e| e.as_int().map(|i| i as f64)).collect(),
            Known::Float(v) => Some(v.clone()),
        }
    }
}

/// The import context: values by ONNX name, the bindings emitted so far, parameters.
pub struct Ctx<'a> {
    pub(crate) ana: Analyzer,
    values: HashMap<String, TVal>,
    bindings: Vec<Binding>,
    params: Vec<Var>,
    weights: Vec<(String, NDArray)>,
    used_names: HashSet<String>,
    counter: usize,
    opts: &'a ImportOptions,
    /// Symbolic shape variables by `dim_param` name.
    sym: HashMap<String, PrimExpr>,
    sym_order: Vec<String>,
    /// The default-domain opset.
    pub opset: i64,
    /// Outputs a converter does not produce, with the reason (an error only when used).
    missing: HashMap<String, String>,
}

fn sanitize(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert_str(0, "v_");
    }
    s
}

/// Python keywords and names that TVMScript reserves in a function body.
const RESERVED: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
    "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal",
    "not", "or", "pass", "raise", "return", "try", "while", "with", "yield", "R", "T", "I", "Module", "metadata",
];

impl<'a> Ctx<'a> {
    fn new(opts: &'a ImportOptions, opset: i64) -> Ctx<'a> {
        Ctx {
            ana: Analyzer::for_shapes(),
            values: HashMap::new(),
            bindings: Vec::new(),
            params: Vec::new(),
            weights: Vec::new(),
            used_names: RESERVED.iter().map(|s| s.to_string()).collect(),
            counter: 0,
            opts,
            sym: HashMap::new(),
            sym_order: Vec::new(),
            opset,
            missing: HashMap::new(),
        }
    }

    /// A fresh, printable variable name based on `hint`.
    fn fresh(&mut self, hint: &str) -> String {
        let base = sanitize(hint);
        let mut name = base.clone();
        let mut k = 1;
        while self.used_names.contains(&name) {
            name = format!("{base}_{k}");
            k += 1;
        }
        self.used_names.insert(name.clone());
        name
    }

    /// The value named `name`.
    pub fn value(&self, name: &str) -> Result<&TVal, ConvertError> {
        if let Some(why) = self.missing.get(name) {
            return Err(convert_err!("input `{name}` is {why}"));
        }
        self.values
            .get(name)
            .ok_or_else(|| convert_err!("input `{name}` is not defined by any earlier node, input or initializer"))
    }

    /// Define `name`.
    pub fn set(&mut self, name: &str, v: TVal) {
        self.values.insert(name.to_string(), v);
    }

    /// The symbolic (or fixed) extent of `dim_param` `name`.
    fn sym_dim(&mut self, name: &str) -> PrimExpr {
        if let Some(e) = self.sym.get(name) {
            return e.clone();
        }
        let e = match self.opts.dims.iter().find(|(n, _)| n == name) {
            Some((_, v)) => PrimExpr::int(*v),
            None => {
                let var = TirVar::new(sanitize(name), DataType::INT64);
                self.ana.bind(&var, 0, i64::MAX / 2);
                self.sym_order.push(name.to_string());
                var.to_expr()
            }
        };
        self.sym.insert(name.to_string(), e.clone());
        e
    }

    /// Simplify a shape expression.
    pub fn simplify(&self, e: &PrimExpr) -> PrimExpr {
        self.ana.simplify(e)
    }

    /// `a op b`, simplified.
    pub fn bin(&self, op: BinOp, a: &PrimExpr, b: &PrimExpr) -> PrimExpr {
        let a = if a.dtype() == DataType::INT64 {
            a.clone()
        } else {
            a.clone().cast(DataType::INT64)
        };
        let b = if b.dtype() == DataType::INT64 {
            b.clone()
        } else {
            b.clone().cast(DataType::INT64)
        };
        self.ana.simplify(&PrimExpr::binary(op, a, b))
    }

    /// The Relax leaf of value `name`, making a parameter or constant of an initializer
    /// and a constant of known contents on first use.
    pub fn tensor(&mut self, name: &str) -> Result<Expr, ConvertError> {
        let v = self.value(name)?.clone();
        if let Some(e) = &v.expr {
            return Ok(e.clone());
        }
        let e = if let Some((iname, data)) = &v.init {
            if data.numel() <= self.opts.max_const_elems {
                Expr::new(ExprKind::Constant { data: data.clone() })
            } else {
                let pname = self.fresh(iname);
                let shape = data.shape.iter().map(|&d| PrimExpr::int(d)).collect();
                let var = Var::new(pname.clone(), Some(StructInfo::tensor(shape, data.dtype)));
                self.params.push(var.clone());
                self.weights.push((pname, (**data).clone()));
                var.to_expr()
            }
        } else if let Some(k) = &v.known {
            self.materialize_known(&v, k)?
        } else {
            return Err(convert_err!("value `{name}` has no Relax expression"));
        };
        if let Some(slot) = self.values.get_mut(name) {
            slot.expr = Some(e.clone());
        }
        Ok(e)
    }

    /// A tensor of known contents as a Relax leaf.
    fn materialize_known(&mut self, v: &TVal, k: &Known) -> Result<Expr, ConvertError> {
        let shape = v.const_shape().ok_or("a known value of symbolic shape")?;
        let ints: Option<Vec<i64>> = match k {
            Known::Int(vals) => vals.iter().map(PrimExpr::as_int).collect(),
            Known::Float(_) => None,
        };
        match (k, ints) {
            (Known::Float(vals), _) => Ok(constant(
                v.dtype,
                shape,
                vals.iter().map(|&f| tensor::encode(v.dtype, f)),
            )),
            (Known::Int(_), Some(ints)) => Ok(constant(
                v.dtype,
                shape,
                ints.iter().map(|&i| tensor::encode_int(v.dtype, i)),
            )),
            (Known::Int(vals), None) => {
                // symbolic: R.shape_to_tensor(R.shape([...])), then reshape and cast
                let vals: Vec<PrimExpr> = vals
                    .iter()
                    .map(|e| {
                        if e.dtype() == DataType::INT64 {
                            e.clone()
                        } else {
                            e.clone().cast(DataType::INT64)
                        }
                    })
                    .collect();
                let n = vals.len() as i64;
                let mut t = self.op("shape_to_tensor", vec![Expr::shape(vals)], &[])?;
                if shape != [n] {
                    let e = self.leaf(&t)?;
                    let target = shape.iter().map(|&d| PrimExpr::int(d)).collect();
                    t = self.op("reshape", vec![e, Expr::shape(target)], &[])?;
                }
                if v.dtype != DataType::INT64 {
                    let e = self.leaf(&t)?;
                    t = self.op("astype", vec![e], &[("dtype", AttrValue::DataType(v.dtype))])?;
                }
                self.leaf(&t)
            }
        }
    }

    /// The leaf of an emitted value.
    pub fn leaf(&self, v: &TVal) -> Result<Expr, ConvertError> {
        v.expr
            .clone()
            .ok_or_else(|| ConvertError::internal("internal: value without expression"))
    }

    /// Bind `value` (a call or tuple item) to a fresh dataflow variable; its StructInfo
    /// is derived through the operator registry.
    pub fn emit(&mut self, value: Expr) -> Result<(Expr, StructInfo), ConvertError> {
        let sinfo = match value.kind() {
            ExprKind::Call(call) => {
                let name = call
                    .op
                    .as_op()
                    .ok_or_else(|| ConvertError::internal("internal: call of a non-operator"))?
                    .to_string();
                let def = registry::lookup(&name).ok_or_else(|| convert_err!("operator {name} is not registered"))?;
                let args: Vec<StructInfo> = call.args.iter().map(leaf_sinfo).collect();
                let ctx = InferCtx {
                    module: None,
                    analyzer: &self.ana,
                };
                (def.infer)(call, &args, &ctx).map_err(|e| ConvertError::infer(&name, e))?
            }
            ExprKind::TupleGetItem { tuple, index } => match leaf_sinfo(tuple) {
                StructInfo::Tuple(f) => f.get(*index).cloned().ok_or("tuple index out of range")?,
                _ => return Err("tuple item of a non-tuple".into()),
            },
            _ => leaf_sinfo(&value),
        };
        self.counter += 1;
        let hint = if self.counter == 1 {
            "lv".to_string()
        } else {
            format!("lv{}", self.counter - 1)
        };
        let name = self.fresh(&hint);
        let var = Var::new_dataflow(name, Some(sinfo.clone()));
        self.bindings.push(Binding::VarBinding {
            var: var.clone(),
            value,
            span: Span::NONE,
        });
        Ok((var.to_expr(), sinfo))
    }

    /// Call `R.<op>` with `args` and the named attributes (the others take the
    /// operator's defaults), bind it, and return the result as a value.
    pub fn op(&mut self, op: &str, args: Vec<Expr>, attrs: &[(&str, AttrValue)]) -> Result<TVal, ConvertError> {
        let shapes: Vec<Option<Vec<PrimExpr>>> = args
            .iter()
            .map(|a| {
                leaf_sinfo(a)
                    .as_tensor()
                    .and_then(|t| t.shape_values().map(<[PrimExpr]>::to_vec))
            })
            .collect();
        let call = make_call(op, args, attrs)?;
        let (e, s) = self.emit(call)?;
        let t = s.as_tensor().ok_or("the operator's result is not a tensor")?;
        if t.shape.is_none() && t.ndim >= 0 && BROADCASTING.contains(&op) {
            // A broadcast of dimensions the analyzer cannot prove equal (`s` against
            // `min(s, 128)`): take the simpler one, checked at run time by a match_cast.
            if let Some(dims) = shapes
                .iter()
                .cloned()
                .collect::<Option<Vec<_>>>()
                .and_then(|v| self.broadcast(&v))
            {
                let sinfo = StructInfo::tensor(dims, t.dtype);
                let name = self.fresh("lv");
                let var = Var::new_dataflow(name, Some(sinfo.clone()));
                self.bindings.push(Binding::MatchCast {
                    var: var.clone(),
                    value: e,
                    struct_info: sinfo.clone(),
                    span: Span::NONE,
                });
                return tval_of(var.to_expr(), &sinfo);
            }
        }
        tval_of(e, &s)
    }

    /// The broadcast of `shapes`; where two dimensions differ and neither is 1, the
    /// simpler one (a constant, then a variable).
    fn broadcast(&self, shapes: &[Vec<PrimExpr>]) -> Option<Vec<PrimExpr>> {
        let r = shapes.iter().map(Vec::len).max()?;
        let mut out = Vec::with_capacity(r);
        for i in 0..r {
            let mut cur: Option<PrimExpr> = None;
            for s in shapes {
                let Some(d) = (i + s.len()).checked_sub(r).map(|j| s[j].clone()) else {
                    continue;
                };
                cur = Some(match cur {
                    None => d,
                    Some(c) if c.as_int() == Some(1) => d,
                    Some(c) if d.as_int() == Some(1) || self.ana.can_prove_equal(&c, &d) => c,
                    Some(c) => match (c.as_int(), d.as_int()) {
                        (Some(_), Some(_)) => return None,
                        (Some(_), None) => c,
                        (None, Some(_)) => d,
                        _ if c.as_var().is_some() => c,
                        _ if d.as_var().is_some() => d,
                        _ => c,
                    },
                });
            }
            out.push(cur?);
        }
        Some(out)
    }

    /// Item `index` of an emitted tuple.
    pub fn item(&mut self, tuple: &Expr, index: usize) -> Result<TVal, ConvertError> {
        let (e, s) = self.emit(Expr::new(ExprKind::TupleGetItem {
            tuple: tuple.clone(),
            index,
        }))?;
        tval_of(e, &s)
    }

    /// Call `R.<op>` returning a tuple; the tuple's leaf.
    pub fn op_tuple(&mut self, op: &str, args: Vec<Expr>, attrs: &[(&str, AttrValue)]) -> Result<Expr, ConvertError> {
        let call = make_call(op, args, attrs)?;
        Ok(self.emit(call)?.0)
    }
}

/// Elementwise operators with numpy broadcasting.
const BROADCASTING: &[&str] = &[
    "add",
    "subtract",
    "multiply",
    "divide",
    "floor_divide",
    "power",
    "mod",
    "floor_mod",
    "maximum",
    "minimum",
    "equal",
    "not_equal",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
    "logical_and",
    "logical_or",
    "logical_xor",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "where",
];

/// A constant of `dtype` and `shape` from encoded elements.
pub fn constant(dtype: DataType, shape: Vec<i64>, elems: impl Iterator<Item = Vec<u8>>) -> Expr {
    let data: Vec<u8> = elems.flatten().collect();
    Expr::new(ExprKind::Constant {
        data: Arc::new(NDArray { dtype, shape, data }),
    })
}

/// The StructInfo of a leaf expression.
fn leaf_sinfo(e: &Expr) -> StructInfo {
    match e.kind() {
        ExprKind::Var(v) => v.struct_info().cloned().unwrap_or(StructInfo::Object),
        ExprKind::Constant { data } => relax_checker::derive::constant_struct_info(data),
        ExprKind::Tuple(f) => StructInfo::Tuple(f.iter().map(leaf_sinfo).collect()),
        ExprKind::ShapeExpr(v) => StructInfo::shape(v.clone()),
        ExprKind::PrimValue(v) => StructInfo::prim_value(v.clone()),
        _ => StructInfo::Object,
    }
}

/// A value from an emitted tensor.
fn tval_of(e: Expr, s: &StructInfo) -> Result<TVal, ConvertError> {
    let t = s.as_tensor().ok_or("the operator's result is not a tensor")?;
    let shape = match t.shape_values() {
        Some(v) => Some(v.to_vec()),
        None if t.ndim >= 0 => None,
        None => None,
    };
    Ok(TVal {
        expr: Some(e),
        dtype: t.dtype,
        shape,
        known: None,
        init: None,
    })
}

/// A call of `R.<op>` with attributes in TVM's order, defaults filled in.
pub fn make_call(op: &str, args: Vec<Expr>, attrs: &[(&str, AttrValue)]) -> Result<Expr, ConvertError> {
    let sig = sigs::lookup(op).ok_or_else(|| convert_err!(Internal;"internal: no signature for R.{op}"))?;
    let mut out = Attrs::new();
    for key in &sig.attr_order {
        let v = match attrs.iter().find(|(k, _)| k == key) {
            Some((_, v)) => v.clone(),
            None => {
                let given = |k: &str| attrs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone());
                sig.default_attr(key, &given)
                    .ok_or_else(|| convert_err!(Internal;"internal: R.{op} needs attribute `{key}`"))?
            }
        };
        out.set(key.clone(), v);
    }
    for (k, _) in attrs {
        if !sig.attr_order.iter().any(|a| a == k) {
            return Err(convert_err!(Internal;"internal: R.{op} has no attribute `{k}`"));
        }
    }
    Ok(Expr::call(Expr::op(&sig.op_name()), args, out, Vec::new()))
}

/// The opset of the default domain (`""` or `ai.onnx`).
fn default_opset(model: &ModelProto) -> i64 {
    model
        .opset_import
        .iter()
        .filter(|o| o.domain.is_empty() || o.domain == "ai.onnx")
        .map(|o| o.version)
        .max()
        .unwrap_or(1)
}

/// Import a decoded model.
pub fn import_model(
    model: &ModelProto,
    base_dir: Option<&Path>,
    opts: &ImportOptions,
) -> Result<Imported, ImportError> {
    let graph = model
        .graph
        .as_ref()
        .ok_or_else(|| ImportError::new("the model has no graph"))?;
    let opset = default_opset(model);
    let mut ctx = Ctx::new(opts, opset);
    let init_names: HashSet<&str> = graph.initializer.iter().map(|t| t.name.as_str()).collect();

    // Graph inputs (those that are not initializers) become the first parameters.
    let mut inputs = Vec::new();
    for vi in &graph.input {
        if init_names.contains(vi.name.as_str()) {
            continue;
        }
        let (dtype, shape) = value_info_type(&mut ctx, vi)?;
        let pname = ctx.fresh(&vi.name);
        let sinfo = match &shape {
            Some(s) => StructInfo::tensor(s.clone(), dtype),
            None => StructInfo::tensor_ndim(dtype, -1),
        };
        let var = Var::new(pname, Some(sinfo));
        inputs.push(var.clone());
        ctx.set(
            &vi.name,
            TVal {
                expr: Some(var.to_expr()),
                dtype,
                shape,
                known: None,
                init: None,
            },
        );
    }
    let num_inputs = inputs.len();

    // Initializers: read now (sizes checked), materialized on first use.
    for t in &graph.initializer {
        let data = Arc::new(tensor::to_ndarray(t, base_dir)?);
        let known = known_of(&data);
        ctx.set(
            &t.name,
            TVal {
                expr: None,
                dtype: data.dtype,
                shape: Some(data.shape.iter().map(|&d| PrimExpr::int(d)).collect()),
                known,
                init: Some((t.name.clone(), data)),
            },
        );
    }
    if opts.progress {
        eprintln!(
            "converting {} nodes ({} initializers, opset {opset})",
            graph.node.len(),
            graph.initializer.len()
        );
    }

    let mut summary = Summary {
        nodes: graph.node.len(),
        opset,
        ..Summary::default()
    };
    for (i, n) in graph.node.iter().enumerate() {
        *summary.op_counts.entry(n.op_type.clone()).or_insert(0) += 1;
        let node = Node::new(n, i, opset);
        convert_node(&mut ctx, &node)?;
    }

    // Outputs.
    let mut outs = Vec::new();
    for (k, o) in graph.output.iter().enumerate() {
        let leaf = ctx.tensor(&o.name).map_err(|e| ImportError {
            kind: e.kind,
            message: format!("graph output `{}`: {}", o.name, e.message),
        })?;
        let sinfo = leaf_sinfo(&leaf);
        let hint = if graph.output.len() == 1 {
            "gv".to_string()
        } else {
            format!("gv{k}")
        };
        let name = ctx.fresh(&hint);
        let var = Var::new(name, Some(sinfo));
        ctx.bindings.push(Binding::VarBinding {
            var: var.clone(),
            value: leaf,
            span: Span::NONE,
        });
        outs.push(var);
    }
    if outs.is_empty() {
        return Err(ImportError::new("the graph has no outputs"));
    }
    let (body, ret) = if outs.len() == 1 {
        let v = &outs[0];
        (v.to_expr(), v.struct_info().cloned().unwrap_or(StructInfo::Object))
    } else {
        let ret = StructInfo::Tuple(
            outs.iter()
                .map(|v| v.struct_info().cloned().unwrap_or(StructInfo::Object))
                .collect(),
        );
        (Expr::tuple(outs.iter().map(Var::to_expr).collect()), ret)
    };
    summary.bindings = ctx.bindings.len();
    let block = BindingBlock {
        bindings: std::mem::take(&mut ctx.bindings),
        is_dataflow: true,
        span: Span::NONE,
    };
    let mut params = inputs;
    params.extend(ctx.params.iter().cloned());
    let mut attrs = Attrs::new();
    attrs.set("num_input", AttrValue::Int(num_inputs as i64));
    let func = Function {
        params,
        body: Expr::new(ExprKind::Seq(SeqExpr {
            blocks: vec![block],
            body,
        })),
        ret_struct_info: Some(ret),
        is_pure: true,
        attrs,
        private: false,
        span: Span::NONE,
    };
    let mut module = IRModule::new();
    module.add("main", BaseFunc::Relax(func));

    summary.params = ctx.weights.len();
    summary.param_bytes = ctx.weights.iter().map(|(_, a)| a.data.len()).sum();
    summary.symbolic_dims = ctx.sym_order.clone();
    let check = relax_checker::check::check_module(&module);
    if let Some(e) = check.errors().next() {
        return Err(ImportError::new(format!(
            "internal: the imported program is not well formed: {}",
            e.message
        )));
    }
    Ok(Imported {
        module,
        params: ctx.weights,
        num_inputs,
        summary,
    })
}

/// Known contents of a small initializer.
fn known_of(a: &NDArray) -> Option<Known> {
    if a.numel() > 4096 {
        return None;
    }
    crate::ops::known_from_array(a)
}

/// The dtype and shape of a graph input.
fn value_info_type(
    ctx: &mut Ctx,
    vi: &proto::ValueInfoProto,
) -> Result<(DataType, Option<Vec<PrimExpr>>), ImportError> {
    let err = |m: &str| ImportError::new(format!("graph input `{}`: {m}", vi.name));
    let tp = vi.r#type.as_ref().ok_or_else(|| err("no type"))?;
    let Some(type_proto::Value::TensorType(t)) = &tp.value else {
        return Err(err("only tensor inputs are supported"));
    };
    let dtype = dtype_of(t.elem_type).ok_or_else(|| {
        err(&format!(
            "element type {} is not supported",
            onnx_type_name(t.elem_type)
        ))
    })?;
    let Some(shape) = &t.shape else {
        return Ok((dtype, None));
    };
    let mut dims = Vec::new();
    for (i, d) in shape.dim.iter().enumerate() {
        use proto::tensor_shape_proto::dimension::Value;
        dims.push(match &d.value {
            Some(Value::DimValue(v)) if *v >= 0 => PrimExpr::int(*v),
            Some(Value::DimValue(v)) => return Err(err(&format!("negative dimension {v}"))),
            Some(Value::DimParam(p)) if !p.is_empty() => ctx.sym_dim(p),
            _ => ctx.sym_dim(&format!("{}_dim{i}", vi.name)),
        });
    }
    Ok((dtype, Some(dims)))
}

/// Convert one node, naming it in any error.
fn convert_node(ctx: &mut Ctx, node: &Node) -> Result<(), ImportError> {
    let fail = |e: ConvertError| ImportError::at_node(node, e);
    let training = node.domain == "ai.onnx.preview.training"
        && matches!(node.op_type.as_str(), "Adagrad" | "Adam" | "Momentum")
        || node.domain == "ai.onnx.ml" && matches!(node.op_type.as_str(), "Binarizer" | "ArrayFeatureExtractor")
        || node.domain == "ai.onnx.preview" && node.op_type == "FlexAttention";
    if !node.domain.is_empty() && node.domain != "ai.onnx" && !training {
        return Err(fail(
            convert_err!(Unsupported; "operators of domain `{}` are not supported", node.domain),
        ));
    }
    if node.op_type == "If" && node.domain.is_empty() {
        return convert_if(ctx, node);
    }
    if matches!(node.op_type.as_str(), "Loop" | "Scan") && node.domain.is_empty() {
        return convert_loop(ctx, node).map_err(fail);
    }
    let conv = ops::lookup(&node.op_type)
        .ok_or_else(|| fail(ConvertError::unsupported("operator not supported by the importer")))?;
    let outs = conv(ctx, node).map_err(fail)?;
    for (k, name) in node.outputs.iter().enumerate() {
        if name.is_empty() {
            continue;
        }
        match outs.get(k) {
            Some(v) => {
                if crate::config::trace() {
                    eprintln!(
                        "{} {} -> {:?} {:?} known={:?}",
                        node.op_type,
                        name,
                        v.dtype,
                        v.shape,
                        v.known.as_ref().map(|k| k.len())
                    );
                }
                ctx.set(name, v.clone())
            }
            None => {
                let why = format!(
                    "output {k} of node `{}` ({}, opset {}), which the importer does not produce",
                    node.name, node.op_type, node.opset
                );
                ctx.missing.insert(name.clone(), why);
            }
        }
    }
    Ok(())
}

/// `If` with a condition known when importing: the chosen branch's nodes are converted
/// in place (they see the enclosing graph's values) and its outputs become the node's.
fn convert_if(ctx: &mut Ctx, node: &Node) -> Result<(), ImportError> {
    let fail = |e: ConvertError| ImportError::at_node(node, e);
    let cond = node
        .inputs
        .first()
        .and_then(|c| ctx.value(c).ok())
        .and_then(|v| v.const_ints())
        .and_then(|v| v.first().copied())
        .ok_or_else(|| {
            fail(ConvertError::unsupported(
                "the condition must be known when the model is imported",
            ))
        })?;
    let branch = if cond != 0 { "then_branch" } else { "else_branch" };
    let g = node
        .attr(branch)
        .and_then(|a| a.g.as_deref())
        .ok_or_else(|| fail(convert_err!("no {branch}")))?;
    for (i, n) in g.node.iter().enumerate() {
        let sub = Node::new(n, i, node.opset);
        convert_node(ctx, &sub)?;
    }
    if g.output.len() != node.outputs.len() {
        return Err(fail(convert_err!(
            "{branch} has {} outputs, the node {}",
            g.output.len(),
            node.outputs.len()
        )));
    }
    for (o, name) in g.output.iter().zip(&node.outputs) {
        if name.is_empty() {
            continue;
        }
        let v = ctx.value(&o.name).map_err(fail)?.clone();
        ctx.set(name, v);
    }
    Ok(())
}

/// Graph attribute `g` of `node` applied to `inputs` (bound to its inputs in order; its
/// initializers become values): its nodes converted in place, its outputs' values.
pub(crate) fn apply_graph(
    ctx: &mut Ctx,
    node: &Node,
    g: &crate::proto::GraphProto,
    inputs: Vec<TVal>,
) -> Result<Vec<TVal>, ConvertError> {
    if g.input.len() != inputs.len() {
        return Err(convert_err!(
            "the graph attribute takes {} inputs, it is given {}",
            g.input.len(),
            inputs.len()
        ));
    }
    for (i, v) in g.input.iter().zip(inputs) {
        ctx.set(&i.name, v);
    }
    for t in &g.initializer {
        let a = crate::tensor::to_ndarray(t, None).map_err(|e| ConvertError::new(e.kind, e.message))?;
        ctx.set(&t.name, crate::ops::array_value(&t.name, a));
    }
    for (i, n) in g.node.iter().enumerate() {
        convert_node(ctx, &Node::new(n, i, node.opset)).map_err(|e| ConvertError::new(e.kind, e.message))?;
    }
    g.output.iter().map(|o| ctx.value(&o.name).cloned()).collect()
}

/// The Relax leaf of value `v` (materialized under a private name).
fn leaf_of(ctx: &mut Ctx, v: TVal) -> Result<Expr, ConvertError> {
    if let Some(e) = &v.expr {
        return Ok(e.clone());
    }
    ctx.counter += 1;
    let name = format!("\u{0}loop#{}", ctx.counter);
    ctx.set(&name, v);
    ctx.tensor(&name)
}

/// `Loop` with a trip count and condition known when importing, and `Scan` (opset 9
/// and later) over a static length: the body is converted once per iteration, the
/// loop-carried values passed on, the scan outputs stacked.
fn convert_loop(ctx: &mut Ctx, node: &Node) -> Result<(), ConvertError> {
    let body = node.attr("body").and_then(|a| a.g.as_deref()).ok_or("no body")?;
    let is_loop = node.op_type == "Loop";
    if !is_loop && node.opset < 9 {
        return Err(ConvertError::unsupported(
            "Scan before opset 9 (with a batch axis) is not supported",
        ));
    }
    let input = |ctx: &Ctx, i: usize| -> Result<TVal, ConvertError> {
        let name = node
            .inputs
            .get(i)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| convert_err!("input {i} is missing"))?;
        ctx.value(name).cloned()
    };
    let (n_state, n_scan_in, steps): (usize, usize, i64);
    let mut scan_axes: Vec<i64> = Vec::new();
    let mut scan_in: Vec<TVal> = Vec::new();
    if is_loop {
        let trip = match node.inputs.first().filter(|s| !s.is_empty()) {
            Some(_) => input(ctx, 0)?
                .const_ints()
                .and_then(|v| v.first().copied())
                .ok_or_else(|| ops::must_be_known(node, 0))?,
            None => {
                return Err(ConvertError::unsupported(
                    "a Loop without a trip count is not supported",
                ))
            }
        };
        if let Some(c) = node.inputs.get(1).filter(|s| !s.is_empty()) {
            let c = ctx
                .value(c)?
                .const_ints()
                .and_then(|v| v.first().copied())
                .ok_or_else(|| ops::must_be_known(node, 1))?;
            if c == 0 {
                return Err(ConvertError::unsupported(
                    "a Loop that runs no iteration is not supported",
                ));
            }
        }
        if !(0..=4096).contains(&trip) {
            return Err(convert_err!("trip count {trip} is out of range"));
        }
        n_state = node.inputs.len().saturating_sub(2);
        n_scan_in = 0;
        steps = trip;
    } else {
        let k = node.int("num_scan_inputs", 0).max(0) as usize;
        n_scan_in = k;
        n_state = node.inputs.len().checked_sub(k).ok_or("too few inputs")?;
        let axes = node.ints("scan_input_axes").unwrap_or_else(|| vec![0; k]);
        let mut len = None;
        for j in 0..k {
            let v = input(ctx, n_state + j)?;
            let shape = v.const_shape().ok_or("scan inputs need static shapes")?;
            let a = ops::norm_axis(axes.get(j).copied().unwrap_or(0), shape.len())? as i64;
            len = Some(shape[a as usize]);
            scan_axes.push(a);
            scan_in.push(v);
        }
        steps = len.ok_or("no scan inputs")?;
    }
    if steps == 0 {
        return Err(ConvertError::unsupported("an empty loop is not supported"));
    }
    let (carried_names, first_body_state) = if is_loop { (2..2 + n_state, 2) } else { (0..n_state, 0) };
    let mut state: Vec<TVal> = carried_names.map(|i| input(ctx, i)).collect::<Result<_, _>>()?;
    let n_body_out = body.output.len();
    let first_out_state = if is_loop { 1 } else { 0 };
    let n_scan_out = n_body_out
        .checked_sub(first_out_state + n_state)
        .ok_or("the body has too few outputs")?;
    let in_dirs = node.ints("scan_input_directions").unwrap_or_default();
    let out_dirs = node.ints("scan_output_directions").unwrap_or_default();
    let mut scans: Vec<Vec<Expr>> = vec![Vec::new(); n_scan_out];
    for t in 0..steps {
        if is_loop {
            let it = body.input.first().ok_or("the body has no inputs")?;
            ctx.set(
                &it.name,
                TVal::known(DataType::INT64, vec![], Known::Int(vec![PrimExpr::int(t)])),
            );
            if let Some(c) = body.input.get(1) {
                ctx.set(
                    &c.name,
                    TVal::known(DataType::BOOL, vec![], Known::Int(vec![PrimExpr::int(1)])),
                );
            }
        }
        for (j, v) in state.iter().enumerate() {
            let name = &body
                .input
                .get(first_body_state + j)
                .ok_or("the body has too few inputs")?
                .name;
            ctx.set(name, v.clone());
        }
        for j in 0..n_scan_in {
            let idx = if in_dirs.get(j).copied().unwrap_or(0) == 1 {
                steps - 1 - t
            } else {
                t
            };
            let e = leaf_of(ctx, scan_in[j].clone())?;
            let sl = crate::ops::slice_axis(ctx, e, scan_axes[j], idx, idx + 1, 1)?;
            let v = ctx.op(
                "squeeze",
                vec![sl],
                &[("axis", AttrValue::List(vec![AttrValue::Int(scan_axes[j])]))],
            )?;
            let name = &body.input.get(n_state + j).ok_or("the body has too few inputs")?.name;
            ctx.set(name, v);
        }
        for (i, n) in body.node.iter().enumerate() {
            convert_node(ctx, &Node::new(n, i, node.opset)).map_err(|e| ConvertError::new(e.kind, e.message))?;
        }
        if is_loop {
            let c = ctx
                .value(&body.output[0].name)?
                .const_ints()
                .and_then(|v| v.first().copied());
            if c != Some(1) && t + 1 < steps {
                return Err("the loop condition must stay known and true".into());
            }
        }
        for (j, slot) in state.iter_mut().enumerate() {
            *slot = ctx.value(&body.output[first_out_state + j].name)?.clone();
        }
        for (j, items) in scans.iter_mut().enumerate() {
            let v = ctx.value(&body.output[first_out_state + n_state + j].name)?.clone();
            items.push(leaf_of(ctx, v)?);
        }
    }
    let out_axes = node.ints("scan_output_axes").unwrap_or_default();
    let mut outs: Vec<TVal> = state;
    for (j, mut items) in scans.into_iter().enumerate() {
        if out_dirs.get(j).copied().unwrap_or(0) == 1 {
            items.reverse();
        }
        let axis = out_axes.get(j).copied().unwrap_or(0);
        let mut parts = Vec::new();
        for e in items {
            let rank = match leaf_sinfo(&e).as_tensor() {
                Some(t) if t.ndim >= 0 => t.ndim as usize,
                _ => return Err("a scan output of unknown rank".into()),
            };
            let a = if axis < 0 { axis + rank as i64 + 1 } else { axis };
            let v = ctx.op(
                "expand_dims",
                vec![e],
                &[("axis", AttrValue::List(vec![AttrValue::Int(a)]))],
            )?;
            parts.push((ctx.leaf(&v)?, a));
        }
        let a = parts.first().map(|p| p.1).unwrap_or(0);
        let v = ctx.op(
            "concat",
            vec![Expr::tuple(parts.into_iter().map(|p| p.0).collect())],
            &[("axis", AttrValue::Int(a))],
        )?;
        outs.push(v);
    }
    for (name, v) in node.outputs.iter().zip(outs) {
        if !name.is_empty() {
            ctx.set(name, v);
        }
    }
    Ok(())
}

/// Names of the symbolic dimensions in `dims` (for messages).
#[allow(dead_code)]
pub fn sym_names(dims: &[PrimExpr]) -> BTreeSet<String> {
    dims.iter()
        .filter_map(|d| d.as_var().map(|v| v.name().to_string()))
        .collect()
}
