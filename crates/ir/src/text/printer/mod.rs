//! TVMScript printer emitting the TVM 0.27 dialect.

pub mod consts;
pub mod prim_expr;
mod relax;
pub mod tir;

pub use consts::format_float;

use super::Program;
use crate::attrs::{AttrValue, Attrs};
use crate::module::{IRModule, VDevice};
use crate::relax::StructInfo;
use crate::tir::PrimExpr;

/// Print a program as TVM 0.27 prints it.
pub fn print_program(program: &Program) -> String {
    match program {
        Program::Module(m) => relax::print_module(m),
        Program::Function { name, func } => relax::print_standalone(name, func),
        Program::PrimFunc { name, func } => {
            let mut body = String::new();
            tir::print_prim_func(name, func, 0, &mut body);
            let mut out = String::new();
            out.push_str("# from tvm.script import tirx as T\n# from tvm.tirx.layout import Axis\n\n");
            out.push_str(&body);
            out.trim_end_matches('\n').to_string()
        }
    }
}

/// Print a StructInfo as TVM 0.27 prints it inside `module` (VDevice indices resolve
/// against the module's `global_infos`; `-1` without a module).
pub fn print_struct_info(sinfo: &StructInfo, module: Option<&IRModule>) -> String {
    relax::Printer::new(module).sinfo(sinfo)
}

/// The `"kind:index:scope"` spelling of a VDevice: `index` counts the module's
/// VDevices of the same target kind (`-1` when the VDevice is not in the module).
pub fn vdevice_spec(vd: &VDevice, module: Option<&IRModule>) -> String {
    let kind = &vd.target.kind;
    let idx = module
        .and_then(|m| {
            m.vdevices()
                .into_iter()
                .filter(|v| &v.target.kind == kind)
                .position(|v| v.target == vd.target && v.vdevice_id == vd.vdevice_id)
        })
        .map(|i| i as i64)
        .unwrap_or(-1);
    format!("{kind}:{idx}:{}", vd.memory_scope)
}

/// The TVMScript spelling of an attribute value, for the Relax and TIR printers:
/// `prim` prints a PrimExpr in the printer's context, `map` a nested dictionary.
fn attr_value(v: &AttrValue, prim: &dyn Fn(&PrimExpr) -> String, map: &dyn Fn(&Attrs) -> String) -> String {
    match v {
        AttrValue::None => "None".to_string(),
        AttrValue::Bool(b) => if *b { "True" } else { "False" }.to_string(),
        AttrValue::Int(i) => i.to_string(),
        // `inf` would not re-parse; `1e999` is read back as infinity.
        AttrValue::Float(f) if f.is_infinite() => if *f > 0.0 { "1e999" } else { "-1e999" }.to_string(),
        AttrValue::Float(f) => format_float(*f),
        AttrValue::Str(s) => prim_expr::quote(s),
        AttrValue::DataType(d) => prim_expr::quote(&d.to_string()),
        AttrValue::PrimExpr(p) => prim(p),
        AttrValue::List(l) => {
            let items: Vec<String> = l.iter().map(|x| attr_value(x, prim, map)).collect();
            format!("[{}]", items.join(", "))
        }
        AttrValue::Map(m) => map(m),
    }
}
