//! TVMScript texts of deep programs for tests (shared by the checker, engine and cli
//! tests through `#[path]`).
#![allow(dead_code)]

/// A PrimFunc whose body is `n` chained let bindings (`x{i} = x{i-1} + 1`).
pub fn chained_lets(n: usize) -> String {
    let mut s = String::from("@T.prim_func\ndef f(a: T.Buffer((1,), \"int32\")):\n    x0 = a[0]\n");
    for i in 1..n {
        s.push_str(&format!("    x{i} = x{} + 1\n", i - 1));
    }
    s.push_str(&format!("    a[0] = x{}\n", n - 1));
    s
}

/// Lines defining `v{depth}` (indented by `indent` levels): `depth` nested `if`s
/// around the recursive call `Module.{callee}(n - 1)` (or `n` at 0).
pub fn nested_ifs(depth: usize, indent: usize, callee: &str, out: &mut String) {
    let pad = "    ".repeat(indent);
    if depth == 0 {
        out.push_str(&format!("{pad}c = R.greater(n, R.const(0, \"int64\"))\n{pad}if c:\n"));
        out.push_str(&format!(
            "{pad}    m = R.subtract(n, R.const(1, \"int64\"))\n{pad}    v0 = Module.{callee}(m)\n"
        ));
        out.push_str(&format!("{pad}else:\n{pad}    v0 = n\n"));
        return;
    }
    out.push_str(&format!("{pad}if t:\n"));
    nested_ifs(depth - 1, indent + 1, callee, out);
    out.push_str(&format!(
        "{pad}    v{depth} = v{}\n{pad}else:\n{pad}    v{depth} = n\n",
        depth - 1
    ));
}

/// A module whose function `name(n)` recurses `n` times, each call inside `depth`
/// nested `if`s.
pub fn recursion_in_nested_ifs(name: &str, depth: usize) -> String {
    let mut text = format!(
        "@I.ir_module\nclass Module:\n  @R.function\n  def {name}(n: R.Tensor((), \"int64\")) -> R.Tensor((), \"int64\"):\n    t = R.const(True, \"bool\")\n"
    );
    nested_ifs(depth, 1, name, &mut text);
    text.push_str(&format!("    return v{depth}\n"));
    text
}
