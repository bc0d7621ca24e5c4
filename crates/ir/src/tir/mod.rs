//! TIR: `PrimExpr`s (shape expressions and kernel arithmetic), buffers, statements
//! and `PrimFunc`s.

mod buffer;
mod expr;
mod function;
mod gpu_op;
mod intrinsic;
mod stmt;
pub mod verify;

pub use buffer::{Buffer, BufferNode, BufferRegion, Range};
pub use expr::{expr_equal, BinOp, PrimExpr, PrimExprKind, TirVar, TirVarNode};
pub use function::PrimFunc;
pub use gpu_op::{GpuOp, SubgroupReduce};
pub use intrinsic::{CallOp, DtypeAt, FloatMath, Intrinsic, RetType, Signature};
pub use stmt::{Block, For, ForKind, IterKind, IterVar, MatchBufferRegion, Stmt, MAX_STMT_TREE_DEPTH};
