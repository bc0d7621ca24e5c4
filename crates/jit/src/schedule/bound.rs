//! Functions that bind their own threads, kept as written: thread-binding loops
//! and `launch_thread` become reads of the builtins.

use relax_ir::tir::{BinOp, For, ForKind, PrimExpr, Stmt, TirVar};
use relax_ir::DataType;

use super::{i32c, if_, let_, sanitize, to_i32, Builtin, GpuKernel, Grid};
use crate::error::{JitError, Result};
use crate::expr::{self, bin};
use crate::lower::LoweredFunc;

/// A kernel for a function that binds its own threads: thread-binding loops and
/// `launch_thread` become reads of the builtins (with guards where a loop's extent
/// is smaller than the launched size).
pub(super) fn bound_kernel(lf: &LoweredFunc, body: &Stmt, n: usize) -> Result<GpuKernel> {
    // Collect extents per tag.
    let mut extents: Vec<(String, PrimExpr)> = Vec::new();
    let mut bad = None;
    expr::visit_stmts(body, &mut |s| {
        let (tag, ext) = match s {
            Stmt::For(For {
                kind: ForKind::ThreadBinding,
                thread_tag: Some(t),
                extent,
                ..
            }) => (t.clone(), extent.clone()),
            Stmt::LaunchThread { tag, extent, .. } => (tag.clone(), extent.clone()),
            _ => return,
        };
        if tag_builtin(&tag).is_none() {
            bad = Some(tag.clone());
            return;
        }
        match extents.iter_mut().find(|(t, _)| *t == tag) {
            Some((_, e)) => {
                if let (Some(a), Some(b)) = (e.as_int(), ext.as_int()) {
                    if b > a {
                        *e = ext;
                    }
                }
            }
            None => extents.push((tag, ext)),
        }
    });
    if let Some(t) = bad {
        return Err(JitError::Unsupported {
            func: lf.name.clone(),
            msg: format!("thread tag \"{t}\""),
        });
    }
    let mut wg = [1u32; 3];
    let mut grid = [i32c(1), i32c(1), i32c(1)];
    let mut builtins = Vec::new();
    let mut tag_vars: Vec<(String, TirVar, PrimExpr)> = Vec::new();
    for (tag, ext) in &extents {
        let Some(b) = tag_builtin(tag) else { continue };
        let v = TirVar::new(sanitize(tag), DataType::INT32);
        match b {
            Builtin::Local(d) => {
                let c = ext.as_int().ok_or_else(|| JitError::Unsupported {
                    func: lf.name.clone(),
                    msg: format!("non-constant extent of {tag}"),
                })?;
                if c <= 0 || c > 1024 {
                    return Err(JitError::Unsupported {
                        func: lf.name.clone(),
                        msg: format!("{tag} extent {c}"),
                    });
                }
                wg[d as usize] = c as u32;
            }
            Builtin::Group(d) => grid[d as usize] = ext.clone(),
            _ => {}
        }
        builtins.push((v.clone(), b));
        tag_vars.push((tag.clone(), v, ext.clone()));
    }
    if wg.iter().map(|&x| x as u64).product::<u64>() > 1024 {
        return Err(JitError::Unsupported {
            func: lf.name.clone(),
            msg: format!("workgroup size {wg:?} exceeds 1024"),
        });
    }
    let body = rewrite_bindings(body, &tag_vars);
    Ok(GpuKernel {
        name: format!("{}_{}", sanitize(&lf.name), n),
        body,
        workgroup_size: wg,
        grid: Grid::Dims(grid),
        builtins,
        alternatives: Vec::new(),
        schedule: "",
    })
}

fn tag_builtin(tag: &str) -> Option<Builtin> {
    let d = match tag.rsplit('.').next()? {
        "x" => 0,
        "y" => 1,
        "z" => 2,
        _ => return None,
    };
    if tag.starts_with("threadIdx") {
        Some(Builtin::Local(d))
    } else if tag.starts_with("blockIdx") {
        Some(Builtin::Group(d))
    } else {
        None
    }
}

fn rewrite_bindings(s: &Stmt, tags: &[(String, TirVar, PrimExpr)]) -> Stmt {
    let bind = |var: &TirVar, tag: &str, extent: &PrimExpr, body: Stmt| -> Stmt {
        let Some((_, tv, full)) = tags.iter().find(|(t, _, _)| t == tag) else {
            return body;
        };
        let guarded = match (extent.as_int(), full.as_int()) {
            (Some(a), Some(b)) if a == b => body,
            _ => if_(bin(BinOp::Lt, tv.to_expr(), to_i32(extent)), body),
        };
        let_(var, expr::cast(tv.to_expr(), var.dtype()), guarded)
    };
    match s {
        Stmt::For(For {
            var,
            extent,
            kind: ForKind::ThreadBinding,
            thread_tag: Some(tag),
            body,
            ..
        }) => bind(var, tag, extent, rewrite_bindings(body, tags)),
        Stmt::LaunchThread { var, tag, extent, body } => bind(var, tag, extent, rewrite_bindings(body, tags)),
        Stmt::For(f) => Stmt::For(For {
            kind: if f.kind == ForKind::Parallel {
                ForKind::Serial
            } else {
                f.kind
            },
            ..f.with_body(rewrite_bindings(&f.body, tags))
        }),
        Stmt::Let { var, value, body } => let_(var, value.clone(), rewrite_bindings(body, tags)),
        Stmt::Attr { body, .. } => rewrite_bindings(body, tags),
        Stmt::Assert { cond, message, body } => Stmt::Assert {
            cond: cond.clone(),
            message: message.clone(),
            body: Box::new(rewrite_bindings(body, tags)),
        },
        Stmt::While { cond, body } => Stmt::While {
            cond: cond.clone(),
            body: Box::new(rewrite_bindings(body, tags)),
        },
        Stmt::If {
            cond,
            then_branch,
            else_branch,
        } => Stmt::If {
            cond: cond.clone(),
            then_branch: Box::new(rewrite_bindings(then_branch, tags)),
            else_branch: else_branch.as_ref().map(|e| Box::new(rewrite_bindings(e, tags))),
        },
        Stmt::Seq(v) => Stmt::Seq(v.iter().map(|x| rewrite_bindings(x, tags)).collect()),
        Stmt::Alloc { buffer, body } => Stmt::Alloc {
            buffer: buffer.clone(),
            body: Box::new(rewrite_bindings(body, tags)),
        },
        other => other.clone(),
    }
}
