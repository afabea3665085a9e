//! Globs on names and ids: what `tools.allow`/`tools.deny` and `always_load` are written in.

/// `*` matches any run of characters, `?` one; everything else itself.
pub fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut i, mut j, mut star, mut mark) = (0usize, 0usize, None::<usize>, 0usize);
    while j < t.len() {
        if i < p.len() && (p[i] == '?' || (p[i] != '*' && p[i] == t[j])) {
            (i, j) = (i + 1, j + 1);
        } else if i < p.len() && p[i] == '*' {
            (star, mark, i) = (Some(i), j, i + 1);
        } else if let Some(s) = star {
            (i, mark) = (s + 1, mark + 1);
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
}
