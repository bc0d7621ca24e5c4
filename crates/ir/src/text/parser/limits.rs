//! Bounds on the nesting of the source text, checked on the token stream before the
//! syntax tree is built: the translation of the tree to IR, and every later pass over
//! the IR, recurse over expression depth, so an unbounded depth would overflow the stack.

use rustpython_parser::lexer::lex;
use rustpython_parser::text_size::TextSize;
use rustpython_parser::{Mode, Tok};

/// The deepest expression nesting the parser accepts: brackets plus operators along one
/// path of an expression (`-(-(x))`, `a + b + c`, `x.a.b`, `x[0][0]` all count).
pub const MAX_EXPR_DEPTH: usize = 256;

/// The largest rank an `ndim=` annotation may state.
pub const MAX_NDIM: i64 = 1 << 16;

/// The deepest statement nesting (indentation levels) the parser accepts.
pub const MAX_BLOCK_DEPTH: usize = 100;

/// The deepest TIR statement tree the parser builds: nested bodies plus the
/// statements that scope over the rest of their list (`x = v` let bindings,
/// `assert`, `T.attr`, thread launches, allocations), so a chain of 10,000 `let`s
/// is a diagnostic rather than a tree that every later pass (and `Clone`, `Drop`)
/// recurses 10,000 deep over.
pub const MAX_STMT_DEPTH: usize = 256;

/// Check the nesting bounds; `Err((byte offset, message))` at the first token past a bound.
/// Lexical errors are left to the parser, which reports them.
pub(crate) fn check_nesting(source: &str) -> Result<(), (usize, String)> {
    // One frame per open bracket: the operator count of the current element of that frame.
    let mut frames: Vec<usize> = vec![0];
    let mut depth = 0usize; // the sum of `frames`
    let mut indent = 0usize;
    for tok in lex(source, Mode::Module) {
        let Ok((tok, range)) = tok else {
            return Ok(());
        };
        let at = |r: TextSize| r.to_usize();
        match tok {
            Tok::Name { .. }
            | Tok::Int { .. }
            | Tok::Float { .. }
            | Tok::Complex { .. }
            | Tok::String { .. }
            | Tok::None
            | Tok::True
            | Tok::False
            | Tok::Ellipsis
            | Tok::EndOfFile => {}
            Tok::Newline | Tok::Semi => {
                frames.truncate(1);
                frames[0] = 0;
                depth = 0;
            }
            Tok::Indent => {
                indent += 1;
                if indent > MAX_BLOCK_DEPTH {
                    return Err((
                        at(range.start()),
                        format!("blocks nested more than {MAX_BLOCK_DEPTH} levels deep"),
                    ));
                }
            }
            Tok::Dedent => indent = indent.saturating_sub(1),
            Tok::Comma => {
                if let Some(top) = frames.last_mut() {
                    depth -= *top;
                    *top = 0;
                }
            }
            Tok::Rpar | Tok::Rsqb | Tok::Rbrace => {
                if frames.len() > 1 {
                    if let Some(top) = frames.pop() {
                        depth -= top;
                    }
                }
            }
            Tok::Lpar | Tok::Lsqb | Tok::Lbrace => {
                bump(&mut frames, &mut depth);
                frames.push(0);
            }
            _ => bump(&mut frames, &mut depth),
        }
        if depth > MAX_EXPR_DEPTH {
            return Err((
                at(range.start()),
                format!("expression nested more than {MAX_EXPR_DEPTH} levels deep (brackets and operators)"),
            ));
        }
    }
    Ok(())
}

fn bump(frames: &mut [usize], depth: &mut usize) {
    if let Some(top) = frames.last_mut() {
        *top += 1;
        *depth += 1;
    }
}
