//! The parser's operator schema (`relax_ir::text::ops`) and the operator
//! registry hold exactly the same operators, and the registry's ids and
//! typed attributes agree with it.

use std::collections::BTreeSet;

use relax_checker::op::{OpId, OPERATORS};
use relax_ir::text::ops::{lookup, names, SPECIAL_OPS};

#[test]
fn schema_and_registry_hold_the_same_operators() {
    let mut schema: BTreeSet<String> = names().into_iter().filter_map(lookup).map(|s| s.op_name()).collect();
    schema.extend(SPECIAL_OPS.iter().map(|n| format!("relax.{n}")));
    let registry: BTreeSet<String> = OPERATORS.iter().map(|o| o.def.name.to_string()).collect();
    let only_schema: Vec<_> = schema.difference(&registry).collect();
    let only_registry: Vec<_> = registry.difference(&schema).collect();
    assert!(
        only_schema.is_empty() && only_registry.is_empty(),
        "in the parser's schema only: {only_schema:?}; in the registry only: {only_registry:?}"
    );
}

#[test]
fn ids_are_interned_once() {
    for o in OPERATORS.iter() {
        assert_eq!(OpId::of(o.def.name), Some(o.id), "{}", o.def.name);
        assert_eq!(o.id.name(), o.def.name);
    }
    assert_eq!(OpId::of("relax.no_such_op"), None);
}
