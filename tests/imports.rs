//! No import circle of more than three files inside any crate (#48's rule, kept since): no
//! group of more than three files that reach each other through their imports, which bounds
//! every circle to three. Read from every `crate::` and `super::` path of each source file,
//! `use` groups included, test modules too. Files that import each other in a larger circle cannot be read, changed or
//! split one at a time; this fails naming the files and the imports that close the circle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::docs::repo;

/// A module of a crate, as the path from the crate root (`["store", "postgres"]`); the root
/// itself is empty.
type Module = Vec<String>;

/// Every `.rs` file under `src`, by its module path.
fn modules(src: &Path) -> BTreeMap<Module, PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("source dir reads").flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(src, &mut files);
    files
        .into_iter()
        .map(|file| {
            let rel = file.strip_prefix(src).expect("under src").with_extension("");
            let mut module: Module = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
            if matches!(module.last().map(String::as_str), Some("mod" | "lib" | "main")) {
                module.pop();
            }
            (module, file)
        })
        .collect()
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The paths a `use`-style tail names: `a::b` gives `[a, b]`; `a::{b, c::{d, e}}` gives
/// `[a, b]`, `[a, c, d]` and `[a, c, e]`. Reads from the start of `text`.
fn paths_in(text: &str) -> Vec<Vec<String>> {
    fn parse(text: &str, at: &mut usize, prefix: &[String], out: &mut Vec<Vec<String>>) {
        let mut path = prefix.to_vec();
        let mut itself = false;
        loop {
            let rest = &text[*at..];
            if rest.starts_with('{') {
                *at += 1;
                loop {
                    let rest = &text[*at..];
                    let trimmed = rest.trim_start_matches([' ', '\n', '\t', '\r', ',']);
                    *at += rest.len() - trimmed.len();
                    if trimmed.starts_with('}') || trimmed.is_empty() {
                        *at += usize::from(!trimmed.is_empty());
                        return;
                    }
                    parse(text, at, &path, out);
                    // What follows an item before the next one: ` as name`, a glob's `*`.
                    let rest = &text[*at..];
                    *at += rest.find([',', '}']).unwrap_or(rest.len());
                }
            }
            let ident: String = rest.chars().take_while(|c| is_ident(*c)).collect();
            if ident.is_empty() {
                break;
            }
            *at += ident.len();
            if ident == "self" {
                itself = true;
            } else {
                path.push(ident);
            }
            if text[*at..].starts_with("::") {
                *at += 2;
            } else {
                break;
            }
        }
        if itself || path.len() > prefix.len() {
            out.push(path);
        }
    }
    let mut out = Vec::new();
    parse(text, &mut 0, &[], &mut out);
    out
}

/// The modules of `files` that `module`'s source names through `crate::` or `super::`.
fn imports(module: &Module, source: &str, files: &BTreeMap<Module, PathBuf>) -> BTreeSet<Module> {
    let code: String = source.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n");
    let resolve = |path: Vec<String>| -> Option<Module> {
        (0..=path.len()).rev().map(|n| path[..n].to_vec()).find(|m| files.contains_key(m))
    };
    let mut found = BTreeSet::new();
    for (at, _) in code.match_indices("crate::").chain(code.match_indices("super::")) {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| is_ident(c) || c == ':') {
            continue; // the tail of `super::super::`, or `$crate::`
        }
        let mut base: Module = Vec::new();
        let mut rest = &code[at..];
        if rest.starts_with("crate::") {
            rest = &rest["crate::".len()..];
        } else {
            base = module.clone();
            while let Some(tail) = rest.strip_prefix("super::") {
                base.pop();
                rest = tail;
            }
        }
        for tail in paths_in(rest) {
            let path: Vec<String> = base.iter().cloned().chain(tail).collect();
            if let Some(target) = resolve(path).filter(|t| t != module) {
                found.insert(target);
            }
        }
    }
    found
}

/// The groups of modules that reach each other through imports (strongly connected
/// components, Tarjan's), of more than one module.
fn circles(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, (usize, usize)>,
        stack: Vec<&'a Module>,
        next: usize,
        out: Vec<Vec<Module>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a Module) {
            self.index.insert(v, (self.next, self.next));
            self.next += 1;
            self.stack.push(v);
            for w in self.edges.get(v).into_iter().flatten() {
                match self.index.get(w).copied() {
                    None => {
                        self.visit(w);
                        let low = self.index[w].1.min(self.index[v].1);
                        self.index.get_mut(v).expect("visited").1 = low;
                    }
                    Some((i, _)) if self.stack.contains(&w) => {
                        let low = i.min(self.index[v].1);
                        self.index.get_mut(v).expect("visited").1 = low;
                    }
                    Some(_) => {}
                }
            }
            let (i, low) = self.index[v];
            if i == low {
                let at = self.stack.iter().rposition(|m| *m == v).expect("on the stack");
                let group: Vec<Module> = self.stack.split_off(at).into_iter().cloned().collect();
                if group.len() > 1 {
                    self.out.push(group);
                }
            }
        }
    }
    let mut walk = Walk { edges, index: BTreeMap::new(), stack: Vec::new(), next: 0, out: Vec::new() };
    for v in edges.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.out
}

/// Each group of more than three files of the crate at `src` that import each other, with the
/// imports inside it.
fn circles_over_three(src: &Path) -> Vec<String> {
    let files = modules(src);
    let edges: BTreeMap<Module, BTreeSet<Module>> = files
        .iter()
        .map(|(module, file)| {
            let source = std::fs::read_to_string(file).expect("source reads");
            (module.clone(), imports(module, &source, &files))
        })
        .collect();
    let name = |m: &Module| if m.is_empty() { "lib".to_owned() } else { m.join("/") };
    circles(&edges)
        .into_iter()
        .filter(|group| group.len() > 3)
        .map(|group| {
            let arrows: Vec<String> = group
                .iter()
                .flat_map(|a| {
                    edges[a].iter().filter(|b| group.contains(b)).map(move |b| format!("{} -> {}", name(a), name(b)))
                })
                .collect();
            let crate_dir = src.strip_prefix(repo()).unwrap_or(src);
            format!("{}: {} files: {}", crate_dir.display(), group.len(), arrows.join(", "))
        })
        .collect()
}

#[test]
fn no_crate_has_files_importing_each_other_in_a_circle_of_more_than_three() {
    let mut sources = vec![repo().join("src")];
    let crates = std::fs::read_dir(repo().join("crates")).expect("crates/ reads");
    sources.extend(crates.flatten().map(|c| c.path().join("src")).filter(|p| p.is_dir()));
    assert!(sources.len() >= 10, "only {} crates found", sources.len());
    let found: Vec<String> = sources.iter().flat_map(|src| circles_over_three(src)).collect();
    assert!(found.is_empty(), "files that import each other in a circle of more than three:\n{}", found.join("\n"));
}

#[test]
fn the_import_reader_finds_a_four_file_circle_and_its_paths() {
    assert_eq!(paths_in("a::b;"), [["a", "b"]]);
    assert_eq!(
        paths_in("a::{b, c::{d, self}, e as f};"),
        vec![vec!["a", "b"], vec!["a", "c", "d"], vec!["a", "c"], vec!["a", "e"]]
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path();
    std::fs::create_dir_all(src.join("d")).expect("dirs");
    let write = |name: &str, text: &str| std::fs::write(src.join(name), text).expect("writes");
    write("lib.rs", "mod a; mod b; mod c; mod d;");
    write("a.rs", "use crate::b::X; // crate::d::gone\n");
    write("b.rs", "use crate::{c::Y, a};");
    write("c.rs", "fn f() { crate::d::e::g(); }");
    write("d/mod.rs", "mod e;");
    write("d/e.rs", "use super::super::a::Z;");
    let found = circles_over_three(src);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("4 files") && found[0].contains("d/e -> a"), "{found:?}");
    write("d/e.rs", "use crate::c;");
    assert!(circles_over_three(src).is_empty(), "two pairs (a, b and c, d/e) and an arrow between them");
}
