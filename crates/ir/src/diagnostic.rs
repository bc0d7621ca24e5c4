//! Diagnostics shared by the parser and the checker, rendered like rustc.

use crate::span::Span;

/// How serious a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Severity {
    /// The program is rejected.
    Error,
    /// The program is accepted, but something could not be proven.
    Warning,
}

/// The rule a [`Diagnostic`] reports a violation of. [`Rule::as_str`] is the name
/// printed after `error[...]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    /// The text does not parse.
    Parse,
    /// Well-formedness criterion `n` (1 to 25; 0 for an unnumbered one).
    WellFormed(u8),
    /// Normal-form criterion `n` (1 to 4; 0 for an unnumbered one).
    NormalForm(u8),
    /// A StructInfo derivation rule.
    StructInfo(StructInfoRule),
    /// A VDevice rule.
    VDevice(VDeviceRule),
    /// A rule of the TIR verifier.
    Tir(TirRule),
    /// A call the legalization left as it is.
    LegalizeSkipped,
    /// An impure packed call made pure by the lenient pass.
    LenientPurePacked,
}

/// The StructInfo derivation rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StructInfoRule {
    /// An impure call in a pure context.
    Purity,
    /// An annotation that does not match the value.
    Annotation,
    /// Arguments that do not match the callee.
    Call,
    /// An operator's inference failed.
    Op,
    /// A bad tuple index.
    TupleGetItem,
    /// A cast that can never succeed.
    MatchCast,
    /// A body that does not match the return annotation.
    Return,
    /// A condition that may not be a boolean scalar.
    IfCondition,
    /// An operator without StructInfo inference.
    UnknownOp,
}

/// The VDevice rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum VDeviceRule {
    /// Operator arguments on different devices.
    Mismatch,
    /// A device not declared in the module.
    UnknownDevice,
    /// A returned tuple that does not match the annotation.
    Return,
}

/// The rules of the TIR verifier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TirRule {
    /// A buffer indexed with the wrong number of indices.
    IndexArity,
    /// A variable used where it is not defined.
    UndefinedVar,
    /// A loop variable defined twice.
    LoopVarRedefined,
    /// A block whose iterator values do not match its iterators.
    BlockIterValues,
}

/// The family a [`Rule`] belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RuleCategory {
    /// [`Rule::Parse`].
    Parse,
    /// [`Rule::WellFormed`].
    WellFormed,
    /// [`Rule::NormalForm`].
    NormalForm,
    /// [`Rule::StructInfo`].
    StructInfo,
    /// [`Rule::VDevice`].
    VDevice,
    /// [`Rule::Tir`].
    Tir,
    /// [`Rule::LegalizeSkipped`].
    Legalize,
    /// [`Rule::LenientPurePacked`].
    Lenient,
}

impl Rule {
    /// The rule's printed name (`"well-formed/3: variable used before it is bound"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::Parse => "parse",
            Rule::WellFormed(n) => well_formed_name(n),
            Rule::NormalForm(n) => match n {
                1 => "normal-form/1: nested non-leaf expression",
                2 => "normal-form/2: SeqExpr outside a function body or If branch",
                3 => "normal-form/3: function body or If branch is not a SeqExpr",
                4 => "normal-form/4: binding blocks not consolidated",
                _ => "normal-form",
            },
            Rule::StructInfo(r) => match r {
                StructInfoRule::Purity => "struct-info/purity: impure call in a pure context",
                StructInfoRule::Annotation => "struct-info/annotation: annotation does not match the value",
                StructInfoRule::Call => "struct-info/call: arguments do not match the callee",
                StructInfoRule::Op => "struct-info/op: operator inference failed",
                StructInfoRule::TupleGetItem => "struct-info/tuple-get-item: bad tuple index",
                StructInfoRule::MatchCast => "struct-info/match-cast: cast can never succeed",
                StructInfoRule::Return => "struct-info/return: body does not match the return annotation",
                StructInfoRule::IfCondition => "struct-info/if-condition: condition may not be a boolean scalar",
                StructInfoRule::UnknownOp => "struct-info/unknown-op: operator has no StructInfo inference",
            },
            Rule::VDevice(r) => match r {
                VDeviceRule::Mismatch => "vdevice/mismatch: operator arguments on different devices",
                VDeviceRule::UnknownDevice => "vdevice/unknown-device: device not declared in the module",
                VDeviceRule::Return => "vdevice/return: returned tuple does not match the annotation",
            },
            Rule::Tir(r) => match r {
                TirRule::IndexArity => "tir/index-arity",
                TirRule::UndefinedVar => "tir/undefined-var",
                TirRule::LoopVarRedefined => "tir/loop-var-redefined",
                TirRule::BlockIterValues => "tir/block-iter-values",
            },
            Rule::LegalizeSkipped => "legalize/skipped",
            Rule::LenientPurePacked => "lenient/pure-packed",
        }
    }

    /// The rule's family.
    pub fn category(self) -> RuleCategory {
        match self {
            Rule::Parse => RuleCategory::Parse,
            Rule::WellFormed(_) => RuleCategory::WellFormed,
            Rule::NormalForm(_) => RuleCategory::NormalForm,
            Rule::StructInfo(_) => RuleCategory::StructInfo,
            Rule::VDevice(_) => RuleCategory::VDevice,
            Rule::Tir(_) => RuleCategory::Tir,
            Rule::LegalizeSkipped => RuleCategory::Legalize,
            Rule::LenientPurePacked => RuleCategory::Lenient,
        }
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The names of the well-formedness criteria, by number.
fn well_formed_name(n: u8) -> &'static str {
    match n {
        1 => "well-formed/1: dataflow variable outside its dataflow block",
        2 => "well-formed/2: variable bound more than once",
        3 => "well-formed/3: variable used before it is bound",
        4 => "well-formed/4: return annotation uses an unbound shape variable",
        5 => "well-formed/5: shape variable used before it is bound",
        6 => "well-formed/6: signature shape variable never in a binding position",
        7 => "well-formed/7: control flow or recursion in a dataflow block",
        8 => "well-formed/8: recursive function without return annotation",
        9 => "well-formed/9: operator used as a value",
        10 => "well-formed/10: annotation rank does not match its shape",
        11 => "well-formed/11: function in a dataflow block captures a dataflow variable",
        12 => "well-formed/12: no externally linked function",
        13 => "well-formed/13: global_symbol differs from the function name",
        14 => "well-formed/14: invalid tensor shape in an annotation",
        15 => "well-formed/15: invalid shape values in an annotation",
        16 => "well-formed/16: invalid PrimStructInfo value",
        17 => "well-formed/17: FuncStructInfo with both params and derive_func",
        18 => "well-formed/18: PrimValue is not a scalar constant",
        19 => "well-formed/19: PrimStructInfo with a non-numeric dtype",
        20 => "well-formed/20: unsupported data type",
        21 => "well-formed/21: relax.force_pure on an impure function",
        22 => "well-formed/22: PrimStructInfo value of another dtype",
        23 => "well-formed/23: operator call not in its normalized form",
        24 => "well-formed/24: VDevice not declared in the module",
        25 => "well-formed/25: PrimFunc uses an undefined variable",
        _ => "well-formed",
    }
}

/// One message about a program, with its location and the rule violated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// The message, short, naming what was expected or what is wrong.
    pub message: String,
    /// Where (may be [`Span::NONE`]).
    pub span: Span,
    /// The rule violated (for example [`Rule::WellFormed`]`(3)`).
    pub rule: Option<Rule>,
    /// Extra notes.
    pub notes: Vec<String>,
}

impl Diagnostic {
    /// An error at `span`.
    pub fn error(message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            span,
            rule: None,
            notes: Vec::new(),
        }
    }
    /// A warning at `span`.
    pub fn warning(message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            message: message.into(),
            span,
            rule: None,
            notes: Vec::new(),
        }
    }
    /// The same diagnostic naming `rule`.
    pub fn with_rule(mut self, rule: Rule) -> Diagnostic {
        self.rule = Some(rule);
        self
    }
    /// The same diagnostic with a note.
    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }
    /// Whether this is an error.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// Render like rustc (`error: ...` with `--> file:line:col` and a source snippet).
    pub fn render(&self, file_name: &str, source: &str, color: bool) -> String {
        use codespan_reporting::diagnostic::{Diagnostic as CsDiag, Label};
        use codespan_reporting::files::SimpleFile;
        use codespan_reporting::term::{self, termcolor};

        let file = SimpleFile::new(file_name, source);
        let mut d = match self.severity {
            Severity::Error => CsDiag::error(),
            Severity::Warning => CsDiag::warning(),
        }
        .with_message(&self.message);
        if let Some(rule) = self.rule {
            d = d.with_code(rule.as_str());
        }
        if let Some(range) = byte_range(source, self.span) {
            d = d.with_labels(vec![Label::primary((), range)]);
        }
        d = d.with_notes(self.notes.clone());
        let config = term::Config::default();
        let mut buffer = if color {
            termcolor::Buffer::ansi()
        } else {
            termcolor::Buffer::no_color()
        };
        if term::emit_to_write_style(&mut buffer, &config, &file, &d).is_err() {
            return format!(
                "{}: {} at {}:{}",
                severity_word(self.severity),
                self.message,
                file_name,
                self.span
            );
        }
        String::from_utf8_lossy(buffer.as_slice()).into_owned()
    }
}

fn severity_word(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

/// The byte range of the token starting at `span` (to the end of its identifier-like
/// run, at least one character), or `None` when the span is unknown or out of range.
pub fn byte_range(source: &str, span: Span) -> Option<std::ops::Range<usize>> {
    if span.is_none() {
        return None;
    }
    let line_start = if span.line == 1 {
        0
    } else {
        source
            .match_indices('\n')
            .nth(span.line as usize - 2)
            .map(|(i, _)| i + 1)?
    };
    let line = source[line_start..].split('\n').next().unwrap_or("");
    let col = (span.col.max(1) - 1) as usize;
    let start_in_line = line.char_indices().nth(col).map(|(i, _)| i).unwrap_or(line.len());
    let rest = &line[start_in_line..];
    let len = rest
        .char_indices()
        .find(|(_, c)| !(c.is_alphanumeric() || *c == '_' || *c == '.'))
        .map(|(i, _)| i)
        .unwrap_or(rest.len())
        .max(rest.chars().next().map(char::len_utf8).unwrap_or(0));
    Some(line_start + start_in_line..line_start + start_in_line + len)
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", severity_word(self.severity))?;
        if let Some(rule) = &self.rule {
            write!(f, "[{rule}]")?;
        }
        write!(f, ": {}", self.message)?;
        if !self.span.is_none() {
            write!(f, " (at {})", self.span)?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostic {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_location_and_snippet() {
        let src = "line one\nfoo bar_baz qux\n";
        let d = Diagnostic::error("unexpected name", Span::new(2, 5)).with_rule(Rule::Parse);
        let out = d.render("x.py", src, false);
        assert!(out.contains("error[parse]: unexpected name"), "{out}");
        assert!(out.contains("x.py:2:5"), "{out}");
        assert_eq!(byte_range(src, Span::new(2, 5)), Some(13..20));
        assert_eq!(byte_range(src, Span::NONE), None);
        assert_eq!(byte_range(src, Span::new(9, 1)), None);
    }
}
