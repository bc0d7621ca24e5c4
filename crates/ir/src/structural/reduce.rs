//! What the structural walk reports, and the reducers that consume it: a hasher
//! (one walk), a recorder (the left side of a comparison) and a comparer (the right
//! side, checked event by event against the recording).
//!
//! Events carry their explanation (field names, variable names) in [`Note`]s, which
//! take no part in equality or hashing: only the structure and the values do.

use std::fmt;
use std::hash::{Hash, Hasher};

use super::Mismatch;
use crate::dtype::DataType;
use crate::module::VDevice;

/// The result of one step of a walk: `Err` stops it at the first difference.
pub(super) type R = Result<(), Mismatch>;

/// Explanatory data: equal to every other note and never hashed.
#[derive(Clone, Copy)]
pub(super) struct Note<T>(pub T);

impl<T> PartialEq for Note<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<T> Hash for Note<T> {
    fn hash<H: Hasher>(&self, _: &mut H) {}
}

impl<T: fmt::Debug> fmt::Debug for Note<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A leaf value. Floats compare and hash by their bits (`0.0` differs from `-0.0`,
/// a NaN equals itself).
#[derive(Clone, Copy, PartialEq, Hash)]
pub(super) enum Atom<'a> {
    Bool(bool),
    Int(i64),
    FloatBits(u64),
    Str(&'a str),
    OptStr(Option<&'a str>),
    DType(DataType),
    OptDType(Option<DataType>),
    Ints(&'a [i64]),
    Bytes(&'a [u8]),
    /// A virtual device: compared with its `PartialEq`, hashed without the target
    /// configuration.
    VDevice(Device<'a>),
    /// A field-less enum: its discriminant, shown with `Debug`.
    Code(u64, Note<&'a dyn fmt::Debug>),
}

impl fmt::Debug for Atom<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Atom::Bool(x) => write!(f, "{x}"),
            Atom::Int(x) => write!(f, "{x}"),
            Atom::FloatBits(x) => write!(f, "{}", f64::from_bits(*x)),
            Atom::Str(x) => write!(f, "{x:?}"),
            Atom::OptStr(x) => write!(f, "{x:?}"),
            Atom::DType(x) => write!(f, "{x}"),
            Atom::OptDType(x) => write!(f, "{x:?}"),
            Atom::Ints(x) => write!(f, "{x:?}"),
            Atom::Bytes(x) => write!(f, "{} bytes", x.len()),
            Atom::VDevice(Device(x)) => write!(f, "{x:?}"),
            Atom::Code(_, x) => write!(f, "{x:?}"),
        }
    }
}

/// An optional virtual device (see [`Atom::VDevice`]).
#[derive(Clone, Copy, PartialEq)]
pub(super) struct Device<'a>(pub Option<&'a VDevice>);

impl Hash for Device<'_> {
    fn hash<H: Hasher>(&self, h: &mut H) {
        if let Some(v) = self.0 {
            v.target.kind.hash(h);
            v.vdevice_id.hash(h);
            v.memory_scope.hash(h);
        }
        self.0.is_some().hash(h);
    }
}

/// The kinds of variables, each with its own mapping.
#[derive(Clone, Copy, Debug)]
pub(super) enum Space {
    Relax = 0,
    Tir = 1,
    Buffer = 2,
}

/// A variable's identity: compared, never hashed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Ident(pub u64);

impl Hash for Ident {
    fn hash<H: Hasher>(&self, _: &mut H) {}
}

/// How a walk meets a variable; indices count the variables of a space in the order
/// the walk first meets them.
#[derive(Clone, Copy, Debug, PartialEq, Hash)]
pub(super) enum Seen {
    /// Met before, with this index.
    Before(u64),
    /// Met for the first time, as a definition (its fields follow).
    First(u64),
    /// Met for the first time as a free variable compared by identity.
    Free(u64, Ident),
}

/// Where a variable is met, for messages.
#[derive(Clone, Copy, Debug)]
pub(super) struct VarNote<'a> {
    pub space: Space,
    pub def: bool,
    pub name: &'a str,
}

/// One step of a walk.
#[derive(Debug, PartialEq, Hash)]
pub(super) enum Event<'a> {
    /// Which variant of a sum type (`what` names the type).
    Kind {
        what: Note<&'static str>,
        name: &'static str,
    },
    /// The length of the list `seg`.
    Len { seg: Note<&'static str>, n: usize },
    /// Whether the optional field `seg` is present.
    Present { seg: Note<&'static str>, some: bool },
    /// A leaf value.
    Atom { what: Note<&'static str>, atom: Atom<'a> },
    /// The sorted keys of a map; its entries follow in that order.
    Keys {
        what: Note<&'static str>,
        keys: Vec<&'a str>,
    },
    /// A variable.
    Var { seen: Seen, note: Note<VarNote<'a>> },
}

/// A step into a field, for mismatch paths.
#[derive(Clone, Copy, Debug)]
pub(super) enum Seg<'a> {
    /// `name`.
    Field(&'static str),
    /// `name[i]`.
    Index(&'static str, usize),
    /// `["key"]` with an empty prefix, else `prefix[key]`.
    Entry(&'static str, &'a str),
}

/// A consumer of walk events.
pub(super) trait Reducer<'a> {
    /// Take one event; `Err` stops the walk.
    fn event(&mut self, e: Event<'a>) -> R;
    /// The walk steps into a field.
    fn enter(&mut self, _seg: Seg<'a>) {}
    /// The walk leaves the field it last entered.
    fn leave(&mut self) {}
}

/// The structural hasher: every event mixed into a 64-bit state.
#[derive(Default)]
pub(super) struct StructHasher(u64);

const K: u64 = 0x517c_c1b7_2722_0a95;

impl Hasher for StructHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut buf = [0u8; 8];
            buf[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(buf));
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(K);
    }
    fn write_u8(&mut self, x: u8) {
        self.write_u64(x as u64);
    }
    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
    fn write_isize(&mut self, x: isize) {
        self.write_u64(x as u64);
    }
    fn write_i64(&mut self, x: i64) {
        self.write_u64(x as u64);
    }
    fn finish(&self) -> u64 {
        // fmix64 avalanche.
        let mut x = self.0;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        x ^ (x >> 33)
    }
}

impl<'a> Reducer<'a> for StructHasher {
    fn event(&mut self, e: Event<'a>) -> R {
        e.hash(self);
        Ok(())
    }
}

/// Every byte written to the structural hasher, in order (see
/// `StructuralEqual::fingerprint_prim_func`).
#[derive(Default)]
pub(super) struct ByteRecorder(pub Vec<u8>);

impl Hasher for ByteRecorder {
    fn write(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }
    fn finish(&self) -> u64 {
        0
    }
}

impl<'a> Reducer<'a> for ByteRecorder {
    fn event(&mut self, e: Event<'a>) -> R {
        e.hash(self);
        Ok(())
    }
}

/// Records the left side of a comparison.
#[derive(Default)]
pub(super) struct Recorder<'a>(pub Vec<Event<'a>>);

impl<'a> Reducer<'a> for Recorder<'a> {
    fn event(&mut self, e: Event<'a>) -> R {
        self.0.push(e);
        Ok(())
    }
}

/// Checks the right side's walk against the recorded left side, keeping the path
/// for the first difference.
pub(super) struct Comparer<'a, 'b> {
    left: std::vec::IntoIter<Event<'a>>,
    path: Vec<Seg<'b>>,
}

impl<'a, 'b> Comparer<'a, 'b> {
    pub(super) fn new(left: Vec<Event<'a>>) -> Self {
        Comparer {
            left: left.into_iter(),
            path: Vec::new(),
        }
    }
    fn fail(&self, reason: String) -> Mismatch {
        let mut path = String::new();
        for seg in &self.path {
            let s = match seg {
                Seg::Field(name) => name.to_string(),
                Seg::Index(name, i) => format!("{name}[{i}]"),
                Seg::Entry("", key) => format!("[{key:?}]"),
                Seg::Entry(prefix, key) => format!("{prefix}[{key}]"),
            };
            if !path.is_empty() && !s.starts_with('[') {
                path.push('.');
            }
            path.push_str(&s);
        }
        Mismatch { path, reason }
    }
    /// After the right side's walk: the left side must be used up.
    pub(super) fn finish(mut self) -> R {
        match self.left.next() {
            None => Ok(()),
            Some(e) => Err(self.fail(format!("the left side goes on with {e:?}"))),
        }
    }
}

impl<'a, 'b> Reducer<'b> for Comparer<'a, 'b> {
    fn event(&mut self, b: Event<'b>) -> R {
        match self.left.next() {
            Some(a) if a == b => Ok(()),
            Some(a) => Err(self.fail(reason(&a, &b))),
            None => Err(self.fail(format!("the right side goes on with {b:?}"))),
        }
    }
    fn enter(&mut self, seg: Seg<'b>) {
        self.path.push(seg);
    }
    fn leave(&mut self) {
        self.path.pop();
    }
}

/// Why two different events differ.
fn reason(a: &Event<'_>, b: &Event<'_>) -> String {
    use Event as E;
    match (a, b) {
        (E::Kind { what, name: x }, E::Kind { name: y, .. }) => format!("{} {x} vs {y}", what.0),
        (E::Len { seg, n: x }, E::Len { n: y, .. }) => format!("{}: length {x} vs {y}", seg.0),
        (E::Present { seg, some }, E::Present { .. }) => {
            let side = |p: bool| if p { "present" } else { "absent" };
            format!("{}: {} vs {}", seg.0, side(*some), side(!*some))
        }
        (
            E::Atom {
                what,
                atom: Atom::Bytes(_),
            },
            E::Atom { .. },
        ) => format!("{} differs", what.0),
        (E::Atom { what, atom: x }, E::Atom { atom: y, .. }) => format!("{}: {x:?} vs {y:?}", what.0),
        (E::Keys { what, keys: x }, E::Keys { keys: y, .. }) => match x.iter().find(|k| !y.contains(k)) {
            Some(k) if x.len() == y.len() => format!("{}: `{k}` missing on the right", what.0),
            _ => format!("{}: {x:?} vs {y:?}", what.0),
        },
        (E::Var { seen: x, note: n }, E::Var { seen: y, note: m }) => {
            let space = match n.0.space {
                Space::Relax => "variable",
                Space::Tir => "TIR variable",
                Space::Buffer => "buffer",
            };
            let (a, b) = (n.0.name, m.0.name);
            match (x, y) {
                (Seen::Free(..), Seen::Free(..)) => format!("free {space}s {a} vs {b}"),
                _ if n.0.def => format!("{space} {a} defined against {b}"),
                _ => format!("{space} {a} vs {b}"),
            }
        }
        _ => format!("different structure: {a:?} vs {b:?}"),
    }
}
