//! A line diff of a tool call's `diff` content (`oldText` → `newText`), as the page shows it.
//!
//! The common head and tail are trimmed first; what is left between them is diffed with a
//! longest-common-subsequence table when that table is small enough and the report's budget for
//! tables is not spent, else shown as all of the old lines removed and all of the new ones added
//! (still correct, just less precise): a hostile recording cannot make the report take quadratic
//! time or memory, neither with one huge diff nor with many large ones.

/// One line of the diff: kept, removed or added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Same,
    Removed,
    Added,
}

impl Op {
    /// The marker the page shows (and its JSON carries).
    pub(crate) fn mark(self) -> &'static str {
        match self {
            Op::Same => " ",
            Op::Removed => "-",
            Op::Added => "+",
        }
    }
}

/// The largest LCS table (cells) computed; past it the middle is shown as removed + added.
const MAX_CELLS: usize = 4_000_000;
/// The cells left for the tables of one report: 2^30 to start with (a few seconds of work).
#[derive(Debug)]
pub(crate) struct Budget(usize);

impl Default for Budget {
    fn default() -> Self {
        Budget(1 << 30)
    }
}

/// The lines of `old` and `new` with what happened to each, in reading order; a table's cells
/// are taken from `budget`.
pub(crate) fn lines<'a>(old: &'a str, new: &'a str, budget: &mut Budget) -> Vec<(Op, &'a str)> {
    let a: Vec<&str> = split(old);
    let b: Vec<&str> = split(new);
    let head = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (am, bm) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);
    let mut out: Vec<(Op, &str)> = a[..head].iter().map(|l| (Op::Same, *l)).collect();
    let cells = am.len().saturating_mul(bm.len());
    if cells <= MAX_CELLS && cells <= budget.0 {
        budget.0 -= cells;
        out.extend(lcs(am, bm));
    } else {
        out.extend(am.iter().map(|l| (Op::Removed, *l)));
        out.extend(bm.iter().map(|l| (Op::Added, *l)));
    }
    out.extend(a[a.len() - tail..].iter().map(|l| (Op::Same, *l)));
    out
}

/// Lines without their `\n`; an empty text has no lines (a new file's `oldText`).
fn split(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    s.strip_suffix('\n').unwrap_or(s).split('\n').collect()
}

fn lcs<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<(Op, &'a str)> {
    let w = b.len() + 1;
    // len[i * w + j]: the LCS length of a[i..] and b[j..].
    let mut len = vec![0u32; (a.len() + 1) * w];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            len[i * w + j] = if a[i] == b[j] {
                len[(i + 1) * w + j + 1] + 1
            } else {
                len[(i + 1) * w + j].max(len[i * w + j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::with_capacity(a.len() + b.len());
    while i < a.len() && j < b.len() {
        if a[i] == b[j] {
            out.push((Op::Same, a[i]));
            i += 1;
            j += 1;
        } else if len[(i + 1) * w + j] >= len[i * w + j + 1] {
            out.push((Op::Removed, a[i]));
            i += 1;
        } else {
            out.push((Op::Added, b[j]));
            j += 1;
        }
    }
    out.extend(a[i..].iter().map(|l| (Op::Removed, *l)));
    out.extend(b[j..].iter().map(|l| (Op::Added, *l)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(old: &str, new: &str) -> String {
        lines(old, new, &mut Budget::default())
            .iter()
            .map(|(op, l)| format!("{}{l}\n", op.mark()))
            .collect()
    }

    #[test]
    fn a_changed_line_is_removed_then_added_between_kept_lines() {
        assert_eq!(show("a\nb\nc\n", "a\nB\nc\n"), " a\n-b\n+B\n c\n");
        assert_eq!(show("", "new\n"), "+new\n");
        assert_eq!(show("gone\n", ""), "-gone\n");
        assert_eq!(show("x\ny\n", "y\nz\n"), "-x\n y\n+z\n");
    }

    /// Too large for the table: still every line, old ones removed, new ones added.
    #[test]
    fn a_huge_middle_is_shown_whole_without_the_table() {
        let old: String = (0..3000).map(|i| format!("o{i}\n")).collect();
        let new: String = (0..3000).map(|i| format!("n{i}\n")).collect();
        let d = lines(&old, &new, &mut Budget::default());
        assert_eq!(d.len(), 6000);
        assert!(d[..3000].iter().all(|(op, _)| *op == Op::Removed));
        assert!(d[3000..].iter().all(|(op, _)| *op == Op::Added));
    }

    /// Once the budget is spent, diffs are still whole, just not aligned.
    #[test]
    fn a_spent_budget_shows_removed_then_added() {
        let mut budget = Budget(1);
        assert_eq!(lines("a\nb\n", "a\nc\n", &mut budget).len(), 3);
        assert_eq!(budget.0, 0);
        let d = lines("x\ny\n", "y\nz\n", &mut budget);
        let marks: String = d.iter().map(|(op, _)| op.mark()).collect();
        assert_eq!(marks, "--++");
    }
}
