//! Reading a kernel's body out of the PTX, as far as [`super::analyse`] needs it: its
//! statements and the labels between them, which registers hold an offset from which
//! base, and how many trailing zero bits an address is known to have.

use std::collections::HashMap;

use super::super::analyse::Direction;

/// One PTX statement: its opcode and its operands (the predicate dropped).
pub(super) struct Statement<'a> {
    pub(super) opcode: &'a str,
    pub(super) operands: Vec<&'a str>,
}

/// The statements of `kernel`'s body and the labels between them (`None` marks a
/// label), or `None` if `ptx` does not define it.
pub(super) fn body<'a>(ptx: &'a str, kernel: &str) -> Option<Vec<Option<Statement<'a>>>> {
    let text = crate::ptx::entry_body(ptx, kernel)?;
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split("//").next().unwrap_or("");
        // Inline asm blocks put `{ .reg ...; a; b; }` on a line: the scope braces
        // open or close a piece, where no statement starts (vector operands keep theirs).
        for piece in line.split(';') {
            let piece = piece.trim().trim_start_matches(['{', '}', ' ', '\t']);
            if piece.is_empty() || piece.starts_with('.') {
                continue;
            }
            if let Some(label) = piece.strip_suffix(':')
                && !label.contains(char::is_whitespace)
            {
                out.push(None);
                continue;
            }
            let piece = match piece.strip_prefix('@') {
                Some(p) => p
                    .split_once(char::is_whitespace)
                    .map_or("", |(_, rest)| rest.trim()),
                None => piece,
            };
            let (opcode, rest) = piece.split_once(char::is_whitespace).unwrap_or((piece, ""));
            out.push(Some(Statement {
                opcode,
                operands: operands(rest),
            }));
        }
    }
    Some(out)
}

/// Splits operands at the commas outside brackets and braces.
pub(super) fn operands(text: &str) -> Vec<&str> {
    let (mut out, mut depth, mut from) = (Vec::new(), 0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '[' | '{' => depth += 1,
            ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(text[from..i].trim());
                from = i + 1;
            }
            _ => {}
        }
    }
    if !text[from..].trim().is_empty() {
        out.push(text[from..].trim());
    }
    out
}

/// The shared arrays a PTX module declares (`.shared .align N ... NAME[...]`), with
/// their alignment's trailing zero bits.
pub(super) fn shared_symbols(ptx: &str) -> HashMap<&str, u32> {
    ptx.lines()
        .map(|l| l.split("//").next().unwrap_or("").trim())
        .filter(|l| l.starts_with(".shared") || l.starts_with(".extern .shared"))
        .filter_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let align = words
                .iter()
                .position(|w| *w == ".align")
                .and_then(|i| words.get(i + 1)?.parse::<u64>().ok())
                .map_or(0, u64::trailing_zeros);
            Some((words.last()?.split('[').next()?, align))
        })
        .collect()
}

/// Opcodes that write no register.
pub(super) fn defines(opcode: &str) -> bool {
    let base = opcode.split('.').next().unwrap_or("");
    !matches!(
        base,
        "st" | "bar"
            | "barrier"
            | "bra"
            | "ret"
            | "exit"
            | "cp"
            | "membar"
            | "fence"
            | "red"
            | "prefetch"
            | "trap"
    )
}

/// Statements after which ptxas keeps no shared access in the same schedule: the end
/// of a basic block, a barrier, a fence, a wait for asynchronous copies.
pub(super) fn ends_block(opcode: &str) -> bool {
    [
        "bra",
        "ret",
        "exit",
        "bar.",
        "barrier.",
        "membar",
        "fence",
        "cp.async.wait",
    ]
    .iter()
    .any(|p| opcode == *p || opcode.starts_with(p))
}

/// How a register is defined, as far as addresses go.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Def<'a> {
    /// `add`/`sub` of an immediate to a register, or `mov` of one.
    Offset(&'a str, i64),
    /// `mov` of a shared array's address.
    Symbol(&'a str),
    Other,
}

pub(super) fn def_of<'a>(s: &Statement<'a>, symbols: &HashMap<&str, u32>) -> Def<'a> {
    let integer = |x: &str| x.parse::<i64>().ok();
    let ops = &s.operands;
    let int_op = ["s32", "u32", "s64", "u64", "b32", "b64"]
        .iter()
        .any(|t| s.opcode.ends_with(t));
    if !int_op || ops.len() < 2 {
        return Def::Other;
    }
    if s.opcode.starts_with("mov.") {
        return if symbols.contains_key(ops[1]) {
            Def::Symbol(ops[1])
        } else if ops[1].starts_with('%') {
            Def::Offset(ops[1], 0)
        } else {
            Def::Other
        };
    }
    if ops.len() != 3 {
        return Def::Other;
    }
    if s.opcode.starts_with("add.") {
        match (integer(ops[1]), integer(ops[2])) {
            (None, Some(k)) if ops[1].starts_with('%') => Def::Offset(ops[1], k),
            (Some(k), None) if ops[2].starts_with('%') => Def::Offset(ops[2], k),
            _ => Def::Other,
        }
    } else if s.opcode.starts_with("sub.") {
        match integer(ops[2]) {
            Some(k) if ops[1].starts_with('%') => Def::Offset(ops[1], -k),
            _ => Def::Other,
        }
    } else {
        Def::Other
    }
}

/// Trailing zero bits of an immediate operand (64 for 0), or `None` if it is none.
pub(super) fn immediate_zeros(operand: &str) -> Option<u32> {
    let k = operand.parse::<i64>().ok()?;
    Some(if k == 0 { 64 } else { k.trailing_zeros() })
}

/// The trailing zero bits each register is known to have wherever it is read: the
/// greatest fixpoint over every definition in the function (an address whose base
/// has 4 is 16-byte aligned). Registers nothing here understands have none.
pub(super) fn known_zeros<'a>(
    statements: &[Option<Statement<'a>>],
    symbols: &HashMap<&str, u32>,
) -> HashMap<&'a str, u32> {
    let defining = || statements.iter().flatten().filter(|s| defines(s.opcode));
    let mut tz: HashMap<&str, u32> = HashMap::new();
    for s in defining() {
        if let Some(dest) = s.operands.first() {
            for reg in dest.trim_matches(['{', '}']).split(',').map(str::trim) {
                tz.insert(reg, 64);
            }
        }
    }
    loop {
        let mut changed = false;
        for s in defining() {
            let ops = &s.operands;
            let of = |o: &str, tz: &HashMap<&str, u32>| -> u32 {
                if let Some(k) = immediate_zeros(o) {
                    k
                } else if let Some(&a) = symbols.get(o) {
                    a
                } else {
                    tz.get(o).copied().unwrap_or(0)
                }
            };
            let arg = |i: usize, tz: &HashMap<&str, u32>| ops.get(i).map_or(0, |o| of(o, tz));
            let op = s.opcode;
            let value = if op.starts_with("mov.") || op.starts_with("cvt.") {
                arg(1, &tz)
            } else if op.starts_with("add.") || op.starts_with("sub.") || op.starts_with("or.") {
                if op.contains(".f") {
                    0
                } else {
                    arg(1, &tz).min(arg(2, &tz))
                }
            } else if op.starts_with("and.") {
                arg(1, &tz).max(arg(2, &tz))
            } else if op.starts_with("shl.") {
                ops.get(2)
                    .and_then(|k| k.parse::<u32>().ok())
                    .map_or(0, |k| arg(1, &tz).saturating_add(k).min(64))
            } else if op.starts_with("mul.lo.") || op.starts_with("mul.wide.") {
                (arg(1, &tz) + arg(2, &tz)).min(64)
            } else if op.starts_with("mad.lo.") || op.starts_with("mad.wide.") {
                (arg(1, &tz) + arg(2, &tz)).min(64).min(arg(3, &tz))
            } else {
                0
            };
            let Some(dest) = ops.first() else { continue };
            for reg in dest.trim_matches(['{', '}']).split(',').map(str::trim) {
                let t = tz.entry(reg).or_insert(64);
                if value < *t {
                    *t = value;
                    changed = true;
                }
            }
        }
        if !changed {
            return tz;
        }
    }
}

/// What an address is: a root (a register's value where the chain of constant
/// offsets stops, a shared symbol, or a value defined in the block) plus bytes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Root<'a> {
    Register(&'a str),
    Symbol(&'a str),
    /// A value defined in the block by the register named.
    Fresh(usize, &'a str),
}

/// A register's value in terms of a root, through definitions made once in the
/// whole function (so the value is the same wherever it is read).
pub(super) fn resolve<'a>(
    reg: &'a str,
    defs: &HashMap<&'a str, Vec<Def<'a>>>,
    depth: u32,
) -> (Root<'a>, i64) {
    match defs.get(reg).map(Vec::as_slice) {
        Some([Def::Symbol(s)]) => (Root::Symbol(s), 0),
        Some([Def::Offset(src, k)]) if depth < 64 && defs.get(src).is_some_and(|d| d.len() == 1) => {
            let (root, off) = resolve(src, defs, depth + 1);
            (root, off + k)
        }
        _ => (Root::Register(reg), 0),
    }
}

/// The base register (or symbol) and constant offset of a memory operand `[x+k]`.
pub(super) fn address(operand: &str) -> Option<(&str, i64)> {
    let inner = operand.strip_prefix('[')?.strip_suffix(']')?.trim();
    match inner.split_once('+') {
        Some((base, k)) => Some((base.trim(), k.trim().parse().ok()?)),
        None => Some((inner, 0)),
    }
}

/// A 4-byte scalar shared access: its direction, or `None` for anything else.
pub(super) fn scalar_shared(opcode: &str) -> Option<Direction> {
    let op = if opcode.starts_with("ld.shared.") {
        Direction::Load
    } else if opcode.starts_with("st.shared.") {
        Direction::Store
    } else {
        return None;
    };
    let vector = opcode.contains(".v2") || opcode.contains(".v4");
    let word = ["f32", "u32", "s32", "b32"].iter().any(|t| opcode.ends_with(t));
    (word && !vector).then_some(op)
}
