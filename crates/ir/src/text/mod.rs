//! The TVMScript text format: parser ([`parse`]) and printer ([`print`]).
//!
//! The dialect is the one Apache TVM 0.27 prints (`R.Any`, `out_ty=`, `T.sblock`,
//! module-level `n = TypeVar("n")`), plus the classic spellings of older releases.

pub mod ops;
pub mod parser;
pub mod printer;

pub use parser::parse;
pub use printer::{print_program, print_struct_info};

use crate::module::IRModule;
use crate::relax::Function;
use crate::tir::{PrimFunc, Stmt};

/// What a TVMScript text defines.
#[derive(Clone, Debug)]
pub enum Program {
    /// `@I.ir_module class Module: ...`
    Module(IRModule),
    /// A standalone `@R.function def name(...)`.
    Function {
        /// The function's name.
        name: String,
        /// The function.
        func: Function,
    },
    /// A standalone `@T.prim_func def name(...)`.
    PrimFunc {
        /// The function's name.
        name: String,
        /// The function.
        func: PrimFunc,
    },
}

impl Program {
    /// The program as a module (a standalone function becomes a one-function module).
    pub fn into_module(self) -> IRModule {
        match self {
            Program::Module(m) => m,
            Program::Function { name, func } => {
                let mut m = IRModule::new();
                m.add(&name, crate::module::BaseFunc::Relax(func));
                m
            }
            Program::PrimFunc { name, func } => {
                let mut m = IRModule::new();
                m.add(&name, crate::module::BaseFunc::Prim(func));
                m
            }
        }
    }
}

/// Whether a PrimFunc body needs TVM's implicit root block: a block with iteration
/// variables at the top, or a block realization under loops or other statements.
pub(crate) fn needs_root_block(body: &Stmt) -> bool {
    match body {
        Stmt::BlockRealize { block, .. } => !block.iter_vars.is_empty(),
        other => contains_block_realize(other),
    }
}

/// Whether `s` holds a block realization (not looking inside blocks).
fn contains_block_realize(s: &Stmt) -> bool {
    match s {
        Stmt::BlockRealize { .. } => true,
        _ => s.children().any(contains_block_realize),
    }
}
