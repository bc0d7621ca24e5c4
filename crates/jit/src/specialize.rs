//! A PrimFunc specialized to the values its shape variables take in one call: the
//! GPU path compiles such a copy when a tensor of symbolic size turns out larger
//! than one storage binding may hold, so that the emitter, which knows sizes from
//! constants only, binds it in chunks.

use std::collections::HashMap;

use relax_ir::mutator::{walk_prim_expr, StmtExprMutator};
use relax_ir::tir::{Buffer, PrimExpr, PrimExprKind};
use relax_ir::PrimFunc;

/// `f` with every variable of `values` (by id) replaced by its value: in the body,
/// and in the shapes, strides and offsets of every buffer (parameters' included).
pub(crate) fn specialize(f: &PrimFunc, values: &HashMap<u64, i64>) -> PrimFunc {
    let mut m = Specializer {
        values,
        buffers: HashMap::new(),
    };
    map_prim_func(f, &mut m)
}

/// `f` with its buffers and body rewritten by `m` (parameters and attributes kept).
fn map_prim_func(f: &PrimFunc, m: &mut impl StmtExprMutator) -> PrimFunc {
    PrimFunc {
        params: f.params.clone(),
        buffer_map: f
            .buffer_map
            .iter()
            .map(|(v, b)| (v.clone(), m.visit_buffer(b)))
            .collect(),
        ret_type: f.ret_type,
        body: m.visit_stmt(&f.body),
        attrs: f.attrs.clone(),
        private: f.private,
        s_tir: f.s_tir,
        span: f.span,
    }
}

struct Specializer<'a> {
    values: &'a HashMap<u64, i64>,
    /// Each buffer rewritten once (by id), so every reference sees the same copy.
    buffers: HashMap<u64, Buffer>,
}

impl StmtExprMutator for Specializer<'_> {
    fn visit_prim_expr(&mut self, e: &PrimExpr) -> PrimExpr {
        if let PrimExprKind::Var(v) = e.kind() {
            if let Some(&x) = self.values.get(&v.id()) {
                return PrimExpr::int_of(x, v.dtype());
            }
        }
        walk_prim_expr(self, e)
    }

    fn visit_buffer(&mut self, b: &Buffer) -> Buffer {
        let mut buffers = std::mem::take(&mut self.buffers);
        let nb = rewrite_buffer(self, &mut buffers, b);
        self.buffers = buffers;
        nb
    }
}

/// `b` with its shape, strides and offset rewritten by `m`, once per buffer (`done`
/// keeps the rewritten buffers by id).
fn rewrite_buffer(m: &mut impl StmtExprMutator, done: &mut HashMap<u64, Buffer>, b: &Buffer) -> Buffer {
    if let Some(nb) = done.get(&b.id()) {
        return nb.clone();
    }
    let mut node = b.copy_node();
    node.shape = node.shape.iter().map(|e| m.visit_prim_expr(e)).collect();
    node.strides = node.strides.iter().map(|e| m.visit_prim_expr(e)).collect();
    node.elem_offset = node.elem_offset.as_ref().map(|e| m.visit_prim_expr(e));
    let nb = Buffer::from_node(node);
    done.insert(b.id(), nb.clone());
    nb
}

/// Smallest channel count [`generalize`] makes symbolic: smaller constants (window
/// sizes, strides, paddings) are everywhere and shared by few layers.
const MIN_GENERIC_EXTENT: i64 = 8;

/// Candidate generalizations of `f` (a function whose buffer parameters all have
/// constant shapes), most general first: the channel counts (dimension 1 of every
/// 4-D buffer parameter), then only those of the inputs that are not also the
/// output's. Each is the constants to make symbolic. Empty when `f` has a symbolic
/// shape already or no such dimension.
pub(crate) fn generic_candidates(f: &PrimFunc) -> Vec<Vec<i64>> {
    let mut dims: Vec<(bool, i64)> = Vec::new();
    let n = f.buffer_map.len();
    for (t, (_, b)) in f.buffer_map.iter().enumerate() {
        let mut consts = Vec::new();
        for d in b.shape() {
            match d.as_int() {
                Some(v) => consts.push(v),
                None => return Vec::new(),
            }
        }
        if consts.len() == 4 && consts[1] >= MIN_GENERIC_EXTENT {
            dims.push((t + 1 == n, consts[1]));
        }
    }
    let mut all: Vec<i64> = dims.iter().map(|&(_, v)| v).collect();
    all.sort_unstable();
    all.dedup();
    let out: Vec<i64> = dims.iter().filter(|&&(o, _)| o).map(|&(_, v)| v).collect();
    let inputs: Vec<i64> = all.iter().copied().filter(|v| !out.contains(v)).collect();
    let mut c = Vec::new();
    if !all.is_empty() {
        c.push(all);
    }
    if !inputs.is_empty() && !out.is_empty() {
        c.push(inputs);
    }
    c
}

/// `f` with every integer constant equal to one of `values` replaced by a shape
/// variable (one per value, of the buffers' index type), in the body and in every
/// buffer's shape. The parameters' shapes then bind the variables, so at run time
/// each has the value it replaced and the function computes exactly what `f` does;
/// functions that differ only in those constants become one (one compiled program
/// and pipeline for layers that differ only in a channel count).
pub(crate) fn generalize(f: &PrimFunc, values: &[i64]) -> PrimFunc {
    let dtype = f
        .buffer_map
        .iter()
        .flat_map(|(_, b)| b.shape().first().map(|d| d.dtype()))
        .next()
        .unwrap_or(relax_ir::DataType::INT64);
    let vars = values
        .iter()
        .enumerate()
        .map(|(i, &v)| (v, relax_ir::tir::TirVar::new(format!("c{i}"), dtype)))
        .collect();
    let mut m = Generalizer {
        vars,
        buffers: HashMap::new(),
    };
    map_prim_func(f, &mut m)
}

struct Generalizer {
    vars: HashMap<i64, relax_ir::tir::TirVar>,
    /// Each buffer rewritten once (by id), so every reference sees the same copy.
    buffers: HashMap<u64, Buffer>,
}

impl StmtExprMutator for Generalizer {
    fn visit_prim_expr(&mut self, e: &PrimExpr) -> PrimExpr {
        if let PrimExprKind::IntImm { value, dtype } = e.kind() {
            if let (true, Some(v)) = (dtype.is_integer() && !dtype.is_bool(), self.vars.get(value)) {
                let x = v.to_expr();
                return if v.dtype() == *dtype {
                    x
                } else {
                    PrimExpr::new(PrimExprKind::Cast {
                        dtype: *dtype,
                        value: x,
                    })
                };
            }
        }
        walk_prim_expr(self, e)
    }

    fn visit_buffer(&mut self, b: &Buffer) -> Buffer {
        let mut buffers = std::mem::take(&mut self.buffers);
        let nb = rewrite_buffer(self, &mut buffers, b);
        self.buffers = buffers;
        nb
    }
}

/// How one kernel is scheduled: the schedule's name, its workgroup size, its
/// number of four-element loads, and its launch grid when that is constant
/// (`None` when it depends on a symbolic extent).
type KernelSignature = (&'static str, [u32; 3], usize, Option<Vec<i64>>);

/// Per kernel of `f` as scheduled with `opts`: its [`KernelSignature`]. `None` when
/// `f` does not lower or schedule.
fn schedule_signature(f: &PrimFunc, opts: &crate::schedule::ScheduleOptions) -> Option<Vec<KernelSignature>> {
    let lf = crate::lower::lower(f).ok()?;
    let kernels = crate::schedule::schedule(&lf, opts).ok()?;
    let none = HashMap::new();
    Some(
        kernels
            .iter()
            .map(|k| {
                let mut n = 0;
                crate::expr::visit_stmts(&k.body, &mut |s| {
                    if let relax_ir::tir::Stmt::Evaluate(e) = s {
                        if matches!(e.kind(), PrimExprKind::Call { op, .. } if op.gpu() == Some(crate::schedule::GpuOp::VLoad4)) {
                            n += 1;
                        }
                    }
                });
                let grid = match &k.grid {
                    crate::schedule::Grid::Linear(e) => vec![e.clone()],
                    crate::schedule::Grid::Dims(d) => d.to_vec(),
                };
                let grid = grid
                    .iter()
                    .map(|e| crate::args::eval_int(e, &none).ok())
                    .collect::<Option<Vec<i64>>>();
                (k.schedule, k.workgroup_size, n, grid)
            })
            .collect(),
    )
}

/// Whether a kernel scheduled as `got` (generic) runs as well as one scheduled as
/// `want` (constant): the same schedule, workgroup and vector loads, and the same
/// constant grid, except that an elementwise kernel (the spatial schedule) may
/// have a grid of the symbolic extents.
fn same_schedule(want: &KernelSignature, got: &KernelSignature) -> bool {
    let spatial = want.0.starts_with("spatial");
    want.0 == got.0 && want.1 == got.1 && want.2 == got.2 && (want.3 == got.3 || (spatial && got.3.is_none()))
}

/// The most general of [`generic_candidates`] that schedules `f` as its constants
/// do (the same kernels, workgroup sizes and four-element loads: a convolution
/// whose output channels became symbolic would lose its GEMM schedule, one whose
/// reduction did its vector loads), or `None`. Without
/// `ScheduleOptions::generic_reductions`, only functions whose every kernel has
/// the spatial schedule (elementwise and injective ones) are made generic.
pub(crate) fn generic_version(f: &PrimFunc, opts: &crate::schedule::ScheduleOptions) -> Option<PrimFunc> {
    let candidates = generic_candidates(f);
    if candidates.is_empty() {
        return None;
    }
    let want = schedule_signature(f, opts)?;
    if !opts.generic_reductions && !want.iter().all(|w| w.0.starts_with("spatial")) {
        return None;
    }
    candidates.iter().map(|values| generalize(f, values)).find(|g| {
        schedule_signature(g, opts)
            .is_some_and(|got| got.len() == want.len() && want.iter().zip(&got).all(|(w, g)| same_schedule(w, g)))
    })
}
