use std::fmt;

use std::sync::Arc;

use super::{PrimExpr, TirVar};
use crate::dtype::DataType;
use crate::id::fresh_id;

/// A TIR buffer: a typed, shaped view of memory. Identity is by object.
#[derive(Clone)]
pub struct Buffer(pub Arc<BufferNode>);

/// The data of a [`Buffer`].
#[derive(Clone, Debug)]
pub struct BufferNode {
    /// Unique identity.
    pub id: u64,
    /// Name hint.
    pub name: String,
    /// The data pointer variable (a handle).
    pub data: TirVar,
    /// Element type.
    pub dtype: DataType,
    /// Shape, one expression per dimension.
    pub shape: Vec<PrimExpr>,
    /// Strides in elements; empty means compact row-major.
    pub strides: Vec<PrimExpr>,
    /// Offset of the first element, in elements (`None`: 0).
    pub elem_offset: Option<PrimExpr>,
    /// Storage scope: `"global"`, `"shared"`, `"local"`, ...
    pub scope: String,
    /// Data alignment in bytes (`-1` or 0: default).
    pub align: i64,
    /// Offset factor (0: default).
    pub offset_factor: i64,
    /// Axis separators (rarely used).
    pub axis_separators: Vec<i64>,
}

impl Buffer {
    /// A compact global buffer with a fresh data variable.
    pub fn new(name: impl Into<String>, dtype: DataType, shape: Vec<PrimExpr>) -> Buffer {
        Buffer::with_scope(name, dtype, shape, "global")
    }
    /// A compact buffer in `scope` with a fresh data variable.
    pub fn with_scope(name: impl Into<String>, dtype: DataType, shape: Vec<PrimExpr>, scope: &str) -> Buffer {
        let name = name.into();
        let data = TirVar::new_handle(name.clone(), Some(dtype), Some(scope.to_string()));
        Buffer(Arc::new(BufferNode {
            id: fresh_id(),
            name,
            data,
            dtype,
            shape,
            strides: Vec::new(),
            elem_offset: None,
            scope: scope.to_string(),
            align: -1,
            offset_factor: 0,
            axis_separators: Vec::new(),
        }))
    }
    /// Build from a fully specified node (a fresh identity is assigned).
    pub fn from_node(mut node: BufferNode) -> Buffer {
        node.id = fresh_id();
        Buffer(Arc::new(node))
    }
    /// A copy of this buffer's data, to build a changed buffer from with
    /// [`Buffer::from_node`] (which gives it an identity of its own).
    pub fn copy_node(&self) -> BufferNode {
        (*self.0).clone()
    }
    /// The name hint.
    pub fn name(&self) -> &str {
        &self.0.name
    }
    /// The element type.
    pub fn dtype(&self) -> DataType {
        self.0.dtype
    }
    /// The shape.
    pub fn shape(&self) -> &[PrimExpr] {
        &self.0.shape
    }
    /// The storage scope.
    pub fn scope(&self) -> &str {
        &self.0.scope
    }
    /// The unique identity.
    pub fn id(&self) -> u64 {
        self.0.id
    }
}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Buffer({}#{}, {}, {:?})",
            self.0.name, self.0.id, self.0.dtype, self.0.shape
        )
    }
}

/// A half-open range `[min, min + extent)`.
#[derive(Clone, Debug)]
pub struct Range {
    /// First value.
    pub min: PrimExpr,
    /// Number of values.
    pub extent: PrimExpr,
}

impl Range {
    /// `[min, min + extent)`.
    pub fn new(min: PrimExpr, extent: PrimExpr) -> Range {
        Range { min, extent }
    }
    /// `[0, extent)`.
    pub fn from_extent(extent: PrimExpr) -> Range {
        let zero = PrimExpr::int_of(0, extent.dtype());
        Range { min: zero, extent }
    }
}

/// A rectangular region of a buffer (`T.reads(A[i, 0:n])`).
#[derive(Clone, Debug)]
pub struct BufferRegion {
    /// The buffer.
    pub buffer: Buffer,
    /// One range per dimension.
    pub region: Vec<Range>,
}
