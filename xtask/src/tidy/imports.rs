//! No import cycles: the import graph of every crate's product modules, file by file, and its strongly
//! connected components. An arrow is a path a file names (`crate::a::b`, `super::x`, `self::y`, or a child
//! declared with `mod`), resolved to the module file it reaches. Two kinds of path draw no arrow: a parent
//! naming its own descendants (it owns them: that is the tree, not a dependency), and a glob (`super::*`
//! names nothing). Test modules are left out.

use std::collections::{BTreeMap, BTreeSet};

/// A module's place in its crate: `["results", "claims"]` for results/claims/mod.rs.
pub type ModulePath = Vec<String>;

/// One crate's product sources, by module path.
pub type Crate = BTreeMap<ModulePath, String>;

/// The module path of `rel`, a file under a crate's src/ (`main.rs` and `lib.rs` are the root).
pub fn module_path(rel: &str) -> ModulePath {
    let mut segs: Vec<String> = rel.trim_end_matches(".rs").split('/').map(str::to_owned).collect();
    if segs.last().is_some_and(|s| s == "mod") || (segs.len() == 1 && (segs[0] == "main" || segs[0] == "lib")) {
        segs.pop();
    }
    segs
}

/// Which modules each module names, test modules and arrows a parent draws to its descendants left out.
pub fn import_graph(krate: &Crate) -> BTreeMap<ModulePath, BTreeSet<ModulePath>> {
    let test_modules: BTreeSet<ModulePath> = krate.iter().flat_map(|(m, text)| test_children(m, text)).collect();
    let is_test = |m: &ModulePath| (1..=m.len()).any(|n| test_modules.contains(&m[..n]));
    let mut graph = BTreeMap::new();
    for (module, text) in krate.iter().filter(|(m, _)| !is_test(m)) {
        let text = product_part(text);
        let children = declared_children(&text);
        let mut arrows = BTreeSet::new();
        for path in paths_named(&text) {
            let Some(full) = absolute(module, &children, &path) else { continue };
            let Some(target) = (0..=full.len()).rev().map(|n| full[..n].to_vec()).find(|m| krate.contains_key(m))
            else {
                continue;
            };
            if target != *module && !target.starts_with(module) && !is_test(&target) {
                arrows.insert(target);
            }
        }
        graph.insert(module.clone(), arrows);
    }
    graph
}

/// The same graph seen `depth` folders deep: every module under a folder at that depth is that folder, one node
/// (a file above it stays itself). At depth 1 `lab/` and `clients/` are two nodes, so a file of each naming the other
/// is the loop it is, though no two modules name each other; at depth 2 `results/claims/` and `results/config`
/// are. A parent naming its own children drew no arrow in `graph`, so a folder never loops with its own `mod.rs`.
pub fn folder_graph(
    graph: &BTreeMap<ModulePath, BTreeSet<ModulePath>>,
    depth: usize,
) -> BTreeMap<ModulePath, BTreeSet<ModulePath>> {
    let node = |m: &ModulePath| m[..m.len().min(depth)].to_vec();
    let mut folders: BTreeMap<ModulePath, BTreeSet<ModulePath>> = BTreeMap::new();
    for (module, targets) in graph {
        let from = node(module);
        let arrows = folders.entry(from.clone()).or_default();
        // A node naming one of its own descendants is the tree, not a dependency.
        arrows.extend(
            targets.iter().map(node).filter(|to| *to != from && !to.starts_with(&from) && !from.starts_with(to)),
        );
    }
    folders
}

/// The strongly connected components of more than one module (Tarjan), each sorted.
pub fn cycles(graph: &BTreeMap<ModulePath, BTreeSet<ModulePath>>) -> Vec<Vec<ModulePath>> {
    struct Walk<'g> {
        graph: &'g BTreeMap<ModulePath, BTreeSet<ModulePath>>,
        index: BTreeMap<&'g ModulePath, usize>,
        low: BTreeMap<&'g ModulePath, usize>,
        stack: Vec<&'g ModulePath>,
        found: Vec<Vec<ModulePath>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, v: &'g ModulePath) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            for w in self.graph.get(v).into_iter().flatten() {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    self.low.insert(v, self.low[v].min(self.low[w]));
                } else if self.stack.contains(&w) {
                    self.low.insert(v, self.low[v].min(self.index[w]));
                }
            }
            if self.low[v] == self.index[v] {
                let at = self.stack.iter().rposition(|m| *m == v).unwrap();
                let mut component: Vec<ModulePath> = self.stack.drain(at..).cloned().collect();
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk { graph, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), found: Vec::new() };
    for v in graph.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.found
}

/// The file without its trailing `#[cfg(test)] mod tests { ... }` and without line comments.
fn product_part(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let next = lines.peek().map(|l| l.trim_start()).unwrap_or_default();
        if line.trim() == "#[cfg(test)]" && next.contains("mod tests") && next.ends_with('{') {
            break;
        }
        out.push_str(line.split("//").next().unwrap_or_default());
        out.push('\n');
    }
    out
}

/// Children declared `#[cfg(test)] mod name;`.
fn test_children(module: &ModulePath, text: &str) -> Vec<ModulePath> {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    lines
        .windows(2)
        .filter(|w| w[0] == "#[cfg(test)]")
        .filter_map(|w| mod_declaration(w[1]))
        .map(|name| [module.clone(), vec![name]].concat())
        .collect()
}

/// Children declared with `mod name;` (any visibility).
fn declared_children(text: &str) -> BTreeSet<String> {
    text.lines().filter_map(|l| mod_declaration(l.trim())).collect()
}

fn mod_declaration(line: &str) -> Option<String> {
    let rest = line.strip_prefix("pub ").or_else(|| line.split_once(") ").map(|(_, r)| r)).unwrap_or(line);
    let name = rest.strip_prefix("mod ")?.strip_suffix(';')?;
    name.chars().all(|c| c.is_alphanumeric() || c == '_').then(|| name.to_owned())
}

/// `path` as a path from the crate root, or None when it does not start in this crate.
fn absolute(module: &ModulePath, children: &BTreeSet<String>, path: &[String]) -> Option<ModulePath> {
    if path.last().is_some_and(|s| s == "*") {
        return None;
    }
    let (first, rest) = path.split_first()?;
    let mut base = match first.as_str() {
        "crate" => Vec::new(),
        "self" => module.clone(),
        "super" => module[..module.len().checked_sub(1)?].to_vec(),
        name if children.contains(name) => [module.clone(), vec![name.to_owned()]].concat(),
        _ => return None,
    };
    let mut rest = rest;
    while rest.first().is_some_and(|s| s == "super") {
        base.pop()?;
        rest = &rest[1..];
    }
    Some([base, rest.to_vec()].concat())
}

#[derive(Debug, PartialEq)]
enum Token {
    Ident(String),
    Sep,
    Open,
    Close,
    Comma,
    Star,
    Other,
}

fn tokens(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Token::Ident(chars[start..i].iter().collect()));
            continue;
        }
        out.push(match c {
            ':' if chars.get(i + 1) == Some(&':') => {
                i += 1;
                Token::Sep
            }
            '{' => Token::Open,
            '}' => Token::Close,
            ',' => Token::Comma,
            '*' => Token::Star,
            c if c.is_whitespace() => {
                i += 1;
                continue;
            }
            _ => Token::Other,
        });
        i += 1;
    }
    out
}

/// Every path of two or more segments the text names, `use` groups expanded (`a::{b, c::d}` is `a::b` and
/// `a::c::d`; `a::{self}` is `a`).
fn paths_named(text: &str) -> Vec<Vec<String>> {
    let toks = tokens(text);
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let starts = matches!(toks[i], Token::Ident(_))
            && toks.get(i + 1) == Some(&Token::Sep)
            && (i == 0 || toks[i - 1] != Token::Sep);
        if starts {
            i = path_at(&toks, i, Vec::new(), &mut out);
        } else {
            i += 1;
        }
    }
    out
}

/// Reads the path (or use tree) starting at `i` under `prefix` into `out`; returns the index after it.
fn path_at(toks: &[Token], mut i: usize, mut prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    loop {
        match toks.get(i) {
            Some(Token::Ident(s)) if s == "self" && !prefix.is_empty() => i += 1,
            Some(Token::Ident(s)) => {
                prefix.push(s.clone());
                i += 1;
            }
            Some(Token::Star) => {
                prefix.push("*".into());
                i += 1;
            }
            Some(Token::Open) => {
                i += 1;
                while i < toks.len() && toks[i] != Token::Close {
                    let next = if toks[i] == Token::Comma { i + 1 } else { path_at(toks, i, prefix.clone(), out) };
                    // Anything a use tree does not hold (a comment, a string) is stepped over, never looped on.
                    i = next.max(i + 1);
                }
                return i + 1;
            }
            _ => break,
        }
        if toks.get(i) != Some(&Token::Sep) {
            break;
        }
        i += 1;
    }
    // `x as y`: the alias names nothing more.
    if matches!(toks.get(i), Some(Token::Ident(s)) if s == "as") {
        i += 2;
    }
    if !prefix.is_empty() {
        out.push(prefix);
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn krate(files: &[(&str, &str)]) -> Crate {
        files.iter().map(|(rel, text)| (module_path(rel), (*text).to_owned())).collect()
    }

    fn names(c: &[ModulePath]) -> Vec<String> {
        c.iter().map(|m| m.join("::")).collect()
    }

    #[test]
    fn two_siblings_that_name_each_other_are_a_cycle() {
        let k = krate(&[
            ("main.rs", "mod a;\nmod b;\n"),
            ("a.rs", "use crate::b::{self, Thing as T};\nfn f() { b::g() }\n"),
            ("b.rs", "pub fn g() { super::a::h() }\n"),
        ]);
        assert_eq!(cycles(&import_graph(&k)).iter().map(|c| names(c)).collect::<Vec<_>>(), vec![vec!["a", "b"]]);
    }

    #[test]
    fn a_parent_naming_its_children_a_glob_and_test_code_draw_no_arrow() {
        let k = krate(&[
            ("main.rs", "mod m;\n"),
            ("m/mod.rs", "mod judge;\n#[cfg(test)]\nmod fixtures;\npub struct Claim;\nfn f() { judge::x() }\n"),
            ("m/judge.rs", "use super::*;\nuse super::Claim;\n// crate::m::fixtures is only a comment\n"),
            ("m/fixtures.rs", "use crate::m::judge::x;\n"),
            ("other.rs", "fn g() {}\n#[cfg(test)]\nmod tests {\n    use crate::m::judge;\n}\n"),
        ]);
        let graph = import_graph(&k);
        assert!(cycles(&graph).is_empty(), "{graph:?}");
        assert_eq!(names(&graph[&module_path("m/judge.rs")].iter().cloned().collect::<Vec<_>>()), vec!["m"]);
        assert!(!graph.contains_key(&module_path("m/fixtures.rs")), "a test module is no room");
        assert!(graph[&module_path("other.rs")].is_empty(), "test code draws no arrow");
    }

    #[test]
    fn a_loop_between_two_folders_is_found_at_their_depth_though_no_two_modules_name_each_other() {
        let k = krate(&[
            ("main.rs", "mod lab;\nmod clients;\nmod results;\n"),
            ("lab/mod.rs", "mod runner;\nmod harness;\n"),
            ("lab/runner.rs", "fn f() { crate::clients::prepare() }\n"),
            ("lab/harness.rs", "pub fn cargo() {}\n"),
            ("clients/mod.rs", "mod bench;\npub fn prepare() {}\n"),
            ("clients/bench.rs", "fn g() { crate::lab::harness::cargo() }\n"),
            ("results/mod.rs", "mod claims;\nmod config;\n"),
            ("results/config.rs", "use super::claims::Claim;\n"),
            ("results/claims/mod.rs", "mod judge;\npub struct Claim;\n"),
            ("results/claims/judge.rs", "use crate::results::config::X;\n"),
        ]);
        let graph = import_graph(&k);
        assert!(cycles(&graph).is_empty(), "no two modules name each other: {graph:?}");
        let at = |depth| cycles(&folder_graph(&graph, depth)).iter().map(|c| names(c)).collect::<Vec<_>>();
        assert_eq!(at(1), vec![vec!["clients", "lab"]]);
        // Two folders deeper the files that carry the first loop are apart; the second is now seen.
        assert_eq!(at(2), vec![vec!["results::claims", "results::config"]]);
    }

    #[test]
    fn a_three_module_loop_through_nested_groups_is_found() {
        // Not a use tree: stepped over, not looped on.
        assert!(paths_named("let s = format!(\"x::{:?}\", y);").iter().all(|p| p[0] == "x"));
        let k = krate(&[
            ("lib.rs", "pub mod x;\n"),
            ("x/mod.rs", "pub mod p;\npub mod q;\npub mod r;\n"),
            ("x/p.rs", "use super::{q::{self}, r};\n"),
            ("x/q.rs", "use crate::x::r::Z;\n"),
            ("x/r.rs", "fn f() -> super::super::x::p::Y { Y }\n"),
        ]);
        assert_eq!(
            cycles(&import_graph(&k)).iter().map(|c| names(c)).collect::<Vec<_>>(),
            vec![vec!["x::p", "x::q", "x::r"]]
        );
    }
}
