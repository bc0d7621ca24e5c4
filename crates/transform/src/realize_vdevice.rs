//! `RealizeVDevice`: propagate virtual devices through a module (backward from
//! annotations, function results and `hint_on_device`, then forward by
//! re-deriving StructInfo), turning `hint_on_device` into `to_vdevice` (or
//! removing it when the value is already there).
//!
//! Variables bound together (a binding's variable and the variables its value
//! uses, except through `to_vdevice`/`hint_on_device`) are co-located: a device
//! known for one of them spreads to the others. Explicit annotations win over
//! `hint_on_device` inputs. A call of an operator whose tensor arguments end on
//! different devices is an error (a `to_vdevice` is required).

use std::collections::HashMap;

use relax_ir::{
    AttrValue, Attrs, BaseFunc, Binding, Call, Diagnostic, Expr, ExprKind, Function, IRModule, SeqExpr, Span,
    StructInfo, TensorStructInfo, VDevice, Var,
};

use relax_ir::mutator::{walk_binding, walk_expr, ExprMutator};

use relax_checker::device::check_device_consistency;
use relax_checker::normalize::normalize_module;

/// Rule names of RealizeVDevice diagnostics.
pub mod rules {
    /// `hint_on_device` names a device missing from the module.
    pub const UNKNOWN_DEVICE: relax_ir::Rule = relax_ir::Rule::VDevice(relax_ir::VDeviceRule::UnknownDevice);
    /// An operator's tensor arguments are on different devices (found by the
    /// checker's device-consistency analysis).
    pub use relax_checker::device::MISMATCH;
    /// A function returns a tuple of another length than its annotation.
    pub const RETURN: relax_ir::Rule = relax_ir::Rule::VDevice(relax_ir::VDeviceRule::Return);
}

/// The result of [`realize_vdevice`].
#[derive(Clone, Debug)]
pub struct Realized {
    /// The module with devices propagated (normalized, StructInfo re-derived).
    pub module: IRModule,
    /// Errors found.
    pub diagnostics: Vec<Diagnostic>,
}

/// The DLPack device type of a target kind.
pub fn device_type_of(kind: &str) -> i64 {
    match kind {
        "llvm" | "c" | "cpu" => 1,
        "cuda" | "nvptx" => 2,
        "opencl" => 4,
        "vulkan" | "spirv" => 7,
        "metal" => 8,
        "rocm" => 10,
        "webgpu" => 15,
        "hexagon" => 16,
        _ => -1,
    }
}

/// The text form `kind:index:scope` of a module VDevice (index among the
/// module's devices of the same kind).
pub fn vdevice_attr_string(module: &IRModule, vd: &VDevice) -> String {
    let same_kind: Vec<&VDevice> = module
        .vdevices()
        .into_iter()
        .filter(|d| d.target.kind == vd.target.kind)
        .collect();
    let idx = same_kind.iter().position(|d| *d == vd).unwrap_or(0);
    format!("{}:{}:{}", vd.target.kind, idx, vd.memory_scope)
}

/// Run RealizeVDevice on `module`. A module without VDevices is only normalized.
pub fn realize_vdevice(module: &IRModule) -> Realized {
    let norm = normalize_module(module);
    let mut diags: Vec<Diagnostic> = norm.diagnostics.into_iter().filter(|d| d.is_error()).collect();
    if module.vdevices().is_empty() {
        return Realized {
            module: norm.module,
            diagnostics: diags,
        };
    }
    let m = norm.module;
    let mut r = Realizer {
        module: &m,
        diags: Vec::new(),
    };
    let known = r.infer(&m);
    let updated = r.apply(&m, &known);
    diags.extend(r.diags);
    let renorm = normalize_module(&updated);
    diags.extend(renorm.diagnostics.into_iter().filter(|d| d.is_error()));
    diags.extend(check_device_consistency(&renorm.module));
    Realized {
        module: renorm.module,
        diagnostics: diags,
    }
}

/// What backward propagation starts from, gathered from every function.
#[derive(Default)]
struct Facts {
    /// Devices of annotated variables (parameters, bindings, returned values) and
    /// of `hint_on_device` results.
    explicit: Vec<(Var, VDevice)>,
    /// Devices hinted for the inputs of `hint_on_device`.
    hints: Vec<(Var, VDevice)>,
    /// Co-location: the variables bound together, both ways.
    edges: HashMap<Var, Vec<Var>>,
    /// The value bound to each variable.
    bound: HashMap<Var, Expr>,
}

/// The module's VDevice that a `hint_on_device` call's attributes name.
fn hinted_device(module: &IRModule, attrs: &Attrs) -> Option<VDevice> {
    let dt = attrs.get_int("device_type").unwrap_or(-1);
    let idx = attrs.get_int("index").unwrap_or(0);
    let scope = attrs.get_str("memory_scope").unwrap_or("global");
    module
        .vdevices()
        .into_iter()
        .find(|d| device_type_of(&d.target.kind) == dt && d.vdevice_id == idx && d.memory_scope == scope)
        .cloned()
}

struct Realizer<'m> {
    module: &'m IRModule,
    diags: Vec<Diagnostic>,
}

fn is_prim(v: &Var) -> bool {
    matches!(v.struct_info(), Some(StructInfo::Prim(_)))
}

impl Realizer<'_> {
    fn lookup_hint(&mut self, attrs: &Attrs, span: Span) -> Option<VDevice> {
        let found = hinted_device(self.module, attrs);
        if found.is_none() {
            let dt = attrs.get_int("device_type").unwrap_or(-1);
            let idx = attrs.get_int("index").unwrap_or(0);
            self.diags.push(
                Diagnostic::error(
                    format!("R.hint_on_device: no device of type {dt} with index {idx} in the module's vdevice list"),
                    span,
                )
                .with_rule(rules::UNKNOWN_DEVICE),
            );
        }
        found
    }

    /// Backward propagation: the device of every variable that has one.
    fn infer(&mut self, m: &IRModule) -> HashMap<Var, VDevice> {
        let mut facts = Facts::default();
        for f in m.functions.values() {
            let BaseFunc::Relax(func) = f else { continue };
            self.collect_function(func, &mut facts);
        }
        // Explicit devices first: they win over the hinted inputs.
        let mut known: HashMap<Var, VDevice> = HashMap::new();
        for seeds in [facts.explicit, facts.hints] {
            let mut stack: Vec<Var> = Vec::new();
            for (v, d) in seeds {
                if !known.contains_key(&v) {
                    known.insert(v.clone(), d);
                    stack.push(v);
                }
            }
            propagate(&mut known, &mut stack, &facts.edges);
        }
        known
    }

    fn collect_function(&mut self, func: &Function, facts: &mut Facts) {
        for p in &func.params {
            if let Some(StructInfo::Tensor(TensorStructInfo { vdevice: Some(d), .. })) = p.struct_info() {
                facts.explicit.push((p.clone(), d.clone()));
            }
        }
        let ExprKind::Seq(seq) = func.body.kind() else { return };
        self.collect_seq(seq, facts);
        if let Some(ret) = &func.ret_struct_info {
            self.check_ret(&seq.body, ret, facts, func.span);
        }
    }

    fn check_ret(&mut self, e: &Expr, ret: &StructInfo, facts: &mut Facts, span: Span) {
        match ret {
            StructInfo::Tensor(TensorStructInfo { vdevice: Some(d), .. }) => {
                if let ExprKind::Var(v) = e.kind() {
                    facts.explicit.push((v.clone(), d.clone()));
                }
            }
            StructInfo::Tuple(fields) => {
                let mut cur = e.clone();
                while let ExprKind::Var(v) = cur.kind() {
                    match facts.bound.get(v) {
                        Some(x) => cur = x.clone(),
                        None => break,
                    }
                }
                if let ExprKind::Tuple(items) = cur.kind() {
                    if items.len() != fields.len() {
                        self.diags.push(
                            Diagnostic::error(
                                format!(
                                    "the function returns a tuple of {} elements but is annotated as returning {}",
                                    items.len(),
                                    fields.len()
                                ),
                                span,
                            )
                            .with_rule(rules::RETURN),
                        );
                        return;
                    }
                    for (x, s) in items.iter().zip(fields) {
                        self.check_ret(x, s, facts, span);
                    }
                }
            }
            _ => {}
        }
    }

    fn collect_seq(&mut self, seq: &SeqExpr, facts: &mut Facts) {
        for b in seq.blocks.iter().flat_map(|b| b.bindings.iter()) {
            let var = b.var();
            if let Some(StructInfo::Tensor(TensorStructInfo { vdevice: Some(d), .. })) = var.struct_info() {
                facts.explicit.push((var.clone(), d.clone()));
            }
            let value = b.value();
            if let ExprKind::Call(c) = value.kind() {
                if c.op.as_op() == Some("relax.hint_on_device") {
                    if let Some(d) = self.lookup_hint(&c.attrs, b.span()) {
                        facts.explicit.push((var.clone(), d.clone()));
                        if let Some(ExprKind::Var(a)) = c.args.first().map(|a| a.kind()) {
                            facts.hints.push((a.clone(), d));
                        }
                    }
                }
            }
            if !is_prim(var) {
                let mut used = Vec::new();
                used_vars(value, &mut used);
                for u in used {
                    if is_prim(&u) {
                        continue;
                    }
                    facts.edges.entry(var.clone()).or_default().push(u.clone());
                    facts.edges.entry(u).or_default().push(var.clone());
                }
            }
            facts.bound.insert(var.clone(), value.clone());
            // Nested scopes.
            match value.kind() {
                ExprKind::If {
                    then_branch,
                    else_branch,
                    ..
                } => {
                    for br in [then_branch, else_branch] {
                        if let ExprKind::Seq(s) = br.kind() {
                            self.collect_seq(s, facts);
                        }
                    }
                }
                ExprKind::Function(f) => self.collect_function(f, facts),
                _ => {}
            }
        }
    }

    /// Set the propagated devices on every variable and desugar `hint_on_device`.
    fn apply(&mut self, m: &IRModule, known: &HashMap<Var, VDevice>) -> IRModule {
        let mut out = m.clone();
        let mut rw = Rewriter {
            known,
            map: HashMap::new(),
            module: m,
        };
        for (gv, f) in m.functions.iter() {
            if let BaseFunc::Relax(func) = f {
                let nf = rw.visit_function(func);
                out.functions.insert(gv.clone(), BaseFunc::Relax(nf));
            }
        }
        out
    }
}

fn propagate(known: &mut HashMap<Var, VDevice>, stack: &mut Vec<Var>, edges: &HashMap<Var, Vec<Var>>) {
    while let Some(v) = stack.pop() {
        let Some(d) = known.get(&v).cloned() else { continue };
        if let Some(ns) = edges.get(&v) {
            for n in ns {
                if !known.contains_key(n) {
                    known.insert(n.clone(), d.clone());
                    stack.push(n.clone());
                }
            }
        }
    }
}

/// Variables used by a binding's value, not looking through `to_vdevice` and
/// `hint_on_device`.
fn used_vars(e: &Expr, out: &mut Vec<Var>) {
    match e.kind() {
        ExprKind::Var(v) => out.push(v.clone()),
        ExprKind::Call(c) => {
            if matches!(c.op.as_op(), Some("relax.to_vdevice") | Some("relax.hint_on_device")) {
                return;
            }
            used_vars(&c.op, out);
            c.args.iter().for_each(|a| used_vars(a, out));
        }
        ExprKind::Tuple(f) => f.iter().for_each(|a| used_vars(a, out)),
        ExprKind::TupleGetItem { tuple, .. } => used_vars(tuple, out),
        ExprKind::If {
            cond,
            then_branch,
            else_branch,
        } => {
            used_vars(cond, out);
            for br in [then_branch, else_branch] {
                if let ExprKind::Seq(s) = br.kind() {
                    used_vars(&s.body, out);
                }
            }
        }
        _ => {}
    }
}

struct Rewriter<'a> {
    known: &'a HashMap<Var, VDevice>,
    map: HashMap<Var, Var>,
    module: &'a IRModule,
}

fn with_vdevice(s: &StructInfo, d: &VDevice) -> Option<StructInfo> {
    match s {
        StructInfo::Tensor(t) if t.vdevice.as_ref() != Some(d) => Some(StructInfo::Tensor(TensorStructInfo {
            shape: t.shape.clone(),
            dtype: t.dtype,
            vdevice: Some(d.clone()),
            ndim: t.ndim,
        })),
        _ => None,
    }
}

/// Fill the devices missing from a return annotation with those of the body.
fn fill_vdevice(ret: &StructInfo, body: &StructInfo) -> StructInfo {
    match (ret, body) {
        (StructInfo::Tensor(r), StructInfo::Tensor(b)) if r.vdevice.is_none() && b.vdevice.is_some() => {
            StructInfo::Tensor(TensorStructInfo {
                shape: r.shape.clone(),
                dtype: r.dtype,
                vdevice: b.vdevice.clone(),
                ndim: r.ndim,
            })
        }
        (StructInfo::Tuple(r), StructInfo::Tuple(b)) if r.len() == b.len() => {
            StructInfo::Tuple(r.iter().zip(b).map(|(x, y)| fill_vdevice(x, y)).collect())
        }
        _ => ret.clone(),
    }
}

impl Rewriter<'_> {
    /// The definition of `v`, renewed with its inferred VDevice when it changes.
    fn def(&mut self, v: &Var) -> Var {
        if let Some(d) = self.known.get(v) {
            if let Some(s) = v.struct_info().and_then(|s| with_vdevice(s, d)) {
                let nv = v.renew_with_struct_info(Some(s));
                self.map.insert(v.clone(), nv.clone());
                return nv;
            }
        }
        v.clone()
    }

    fn desugar_hint(&mut self, c: &Call, arg: &Expr, span: Span) -> Expr {
        let Some(target) = hinted_device(self.module, &c.attrs) else {
            return arg.clone();
        };
        let input = match leaf_sinfo(arg) {
            StructInfo::Tensor(t) => t.vdevice,
            _ => None,
        };
        if input.as_ref() == Some(&target) {
            return arg.clone();
        }
        let mut attrs = Attrs::new();
        attrs.set("dst_vdevice", AttrValue::Str(vdevice_attr_string(self.module, &target)));
        Expr::with_span(
            ExprKind::Call(Call {
                op: Expr::op("relax.to_vdevice"),
                args: vec![arg.clone()],
                attrs,
                sinfo_args: Vec::new(),
            }),
            span,
        )
    }
}

/// The rewrite of the forward pass: variables take their inferred VDevices (uses
/// follow their renewed definitions), `hint_on_device` becomes `to_vdevice` (or
/// nothing), and return annotations take the devices of their bodies.
impl ExprMutator for Rewriter<'_> {
    fn visit_var_use(&mut self, v: &Var, e: &Expr) -> Expr {
        match self.map.get(v) {
            Some(n) => Expr::with_span(ExprKind::Var(n.clone()), e.span()),
            None => e.clone(),
        }
    }

    fn visit_expr(&mut self, e: &Expr) -> Expr {
        if let ExprKind::Call(c) = e.kind() {
            if c.op.as_op() == Some("relax.hint_on_device") && c.args.len() == 1 {
                let arg = self.visit_expr(&c.args[0]);
                return self.desugar_hint(c, &arg, e.span());
            }
        }
        walk_expr(self, e)
    }

    fn visit_binding(&mut self, b: &Binding) -> Vec<Binding> {
        let known = self.known.get(b.var()).cloned();
        let binding = match walk_binding(self, b) {
            Binding::VarBinding { var, value, span } => Binding::VarBinding {
                var: self.def(&var),
                value,
                span,
            },
            Binding::MatchCast {
                var,
                value,
                struct_info,
                span,
            } => Binding::MatchCast {
                var: self.def(&var),
                value,
                struct_info: match known {
                    Some(d) => with_vdevice(&struct_info, &d).unwrap_or(struct_info),
                    None => struct_info,
                },
                span,
            },
        };
        vec![binding]
    }

    fn visit_function(&mut self, f: &Function) -> Function {
        let params: Vec<Var> = f.params.iter().map(|p| self.def(p)).collect();
        let body = self.visit_expr(&f.body);
        let ret = match (&f.ret_struct_info, body.kind()) {
            (Some(r), ExprKind::Seq(seq)) => Some(fill_vdevice(r, &leaf_sinfo(&seq.body))),
            (r, _) => r.clone(),
        };
        Function {
            params,
            body,
            ret_struct_info: ret,
            ..f.clone()
        }
    }
}

fn leaf_sinfo(e: &Expr) -> StructInfo {
    match e.kind() {
        ExprKind::Var(v) => v.struct_info().cloned().unwrap_or(StructInfo::Object),
        ExprKind::Tuple(f) => StructInfo::Tuple(f.iter().map(leaf_sinfo).collect()),
        _ => StructInfo::Object,
    }
}
