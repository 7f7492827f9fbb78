//! The rate update of STRIDE's controller uses only shifts, adds, subtracts and compares (the
//! hardware depends on it, spec §8.4). This test parses `src/cc/stride.rs` and walks every
//! function the update calls, from the four event handlers down: a multiply, divide or
//! remainder anywhere on that path, or a call it cannot see into, fails it.

use std::collections::{BTreeSet, HashMap};
use syn::visit::Visit;

/// The event handlers of the update path.
const ROOTS: &[&str] = &[
    "on_sample",
    "on_sample_at",
    "nack",
    "nack_at",
    "handshake",
    "timeout",
];

/// Standard methods known to need no multiplier or divider.
const ALLOWED: &[&str] = &[
    "saturating_add",
    "wrapping_add",
    "wrapping_sub",
    "saturating_sub",
    // The competitive mode's verdict (a tuple variant, not a call).
    "Increase",
    "clamp",
    "max",
    "min",
    "leading_zeros",
    "from",
];

/// The functions of `src` (inherent methods and free functions) by name.
fn functions(src: &str) -> HashMap<String, syn::Block> {
    let file = syn::parse_file(src).expect("parse");
    let mut out = HashMap::new();
    for item in file.items {
        match item {
            syn::Item::Fn(f) => {
                out.insert(f.sig.ident.to_string(), *f.block);
            }
            syn::Item::Impl(i) if i.trait_.is_none() => {
                for it in i.items {
                    if let syn::ImplItem::Fn(f) = it {
                        out.insert(f.sig.ident.to_string(), f.block);
                    }
                }
            }
            _ => {}
        }
    }
    out
}

#[derive(Default)]
struct Scan {
    calls: BTreeSet<String>,
    bad: Vec<String>,
}

impl<'a> Visit<'a> for Scan {
    fn visit_bin_op(&mut self, op: &'a syn::BinOp) {
        use syn::BinOp::*;
        if matches!(
            op,
            Mul(_) | Div(_) | Rem(_) | MulAssign(_) | DivAssign(_) | RemAssign(_)
        ) {
            self.bad.push(format!("operator {}", quote_op(op)));
        }
    }
    fn visit_expr_method_call(&mut self, m: &'a syn::ExprMethodCall) {
        self.calls.insert(m.method.to_string());
        syn::visit::visit_expr_method_call(self, m);
    }
    fn visit_expr_call(&mut self, c: &'a syn::ExprCall) {
        if let syn::Expr::Path(p) = &*c.func {
            let last = p.path.segments.last().expect("segment").ident.to_string();
            self.calls.insert(last);
        } else {
            self.bad.push("a call through an expression".into());
        }
        syn::visit::visit_expr_call(self, c);
    }
    fn visit_macro(&mut self, m: &'a syn::Macro) {
        self.bad.push(format!(
            "macro {:?}",
            m.path.segments.last().map(|s| s.ident.to_string())
        ));
    }
}

fn quote_op(op: &syn::BinOp) -> &'static str {
    use syn::BinOp::*;
    match op {
        Mul(_) | MulAssign(_) => "*",
        Div(_) | DivAssign(_) => "/",
        _ => "%",
    }
}

/// Every violation on the path from `roots` through the functions of `src`, and the functions
/// visited.
fn check(src: &str, roots: &[&str]) -> (Vec<String>, BTreeSet<String>) {
    let fns = functions(src);
    let mut todo: Vec<String> = roots.iter().map(|r| r.to_string()).collect();
    let mut seen = BTreeSet::new();
    let mut bad = Vec::new();
    while let Some(f) = todo.pop() {
        if !seen.insert(f.clone()) {
            continue;
        }
        let Some(body) = fns.get(&f) else {
            bad.push(format!("{f}: not defined in the file"));
            continue;
        };
        let mut s = Scan::default();
        s.visit_block(body);
        bad.extend(s.bad.into_iter().map(|b| format!("{f}: {b}")));
        for c in s.calls {
            if fns.contains_key(&c) {
                todo.push(c);
            } else if !ALLOWED.contains(&c.as_str()) {
                bad.push(format!("{f}: calls {c}, which this check cannot see into"));
            }
        }
    }
    (bad, seen)
}

#[test]
fn the_rate_update_uses_no_multiply_divide_or_remainder() {
    // Algorithm 1 and the competitive mode it calls into (spec §8.7).
    let mut src = String::new();
    for f in ["stride.rs", "compete.rs"] {
        let path = format!("{}/src/cc/{f}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).expect("read the controller's source");
        // One file to parse: inner doc comments may only open it.
        for line in text.lines().filter(|l| !l.starts_with("//!")) {
            src.push_str(line);
            src.push('\n');
        }
    }
    let (bad, seen) = check(&src, ROOTS);
    assert!(
        bad.is_empty(),
        "beyond shift/add/subtract/compare: {bad:#?}"
    );
    // The walk reached the helpers the handlers call.
    for f in [
        "wdiff",
        "stt_min",
        "clamp",
        "sample",
        "increase",
        "nack_cuts",
    ] {
        assert!(seen.contains(f), "{f} not visited: {seen:?}");
    }
}

#[test]
fn the_check_finds_a_multiply_hidden_in_a_helper_or_a_library_call() {
    let src = "impl S { fn on_sample(&mut self) { self.r = step(self.r); } }
               fn step(r: u32) -> u32 { r + (r * 3 >> 2) }";
    let (bad, _) = check(src, &["on_sample"]);
    assert!(
        bad.iter().any(|b| b.contains("step: operator *")),
        "{bad:?}"
    );
    let src = "impl S { fn nack(&mut self) { self.r = self.r.wrapping_mul(7); } }";
    let (bad, _) = check(src, &["nack"]);
    assert!(bad.iter().any(|b| b.contains("wrapping_mul")), "{bad:?}");
    let src = "impl S { fn timeout(&mut self) { self.r %= 3; } }";
    assert!(!check(src, &["timeout"]).0.is_empty());
}
