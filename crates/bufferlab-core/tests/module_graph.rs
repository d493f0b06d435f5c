//! The crate's modules form a layered graph: no module reaches, through the paths it names, a
//! module that reaches it back. A cycle is reported with the lines that make each of its edges.
//!
//! The graph is read from the sources, not from the compiler: one node per source file (the
//! module it defines, inline modules such as `mod tests` included), one edge per path the file
//! names into another file's module, whether in a `use` or inline in the code:
//! `crate::net::packet::Packet`, `super::GRANULARITY`, `super::super::loopback::Fate`, and the
//! paths that start with a child module's name (`pub use bbr::Bbr`). A name a module re-exports
//! from one of its descendants (`pub use error::EngineError` in the crate root, a facade) is
//! followed to the module that defines it, so that `crate::EngineError` is an edge to the module
//! of the error, not to the crate root that only re-exports it. A name re-exported from
//! elsewhere (a sibling's) is not: the path depends on the module it goes through.
//!
//! Runs without Cargo too (`CARGO_MANIFEST_DIR=$PWD rustc --edition 2021 --test` on this file),
//! which is quick while moving code between modules.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// A module's path inside the crate: `[]` is the crate root, `["net", "packet"]` is `net::packet`.
type ModulePath = Vec<String>;

fn display(module: &[String]) -> String {
    if module.is_empty() {
        "crate".to_string()
    } else {
        module.join("::")
    }
}

/// One source file: the module it defines and its text.
struct SourceFile {
    module: ModulePath,
    /// The file's path, relative to `src/`, for messages.
    name: String,
    text: String,
}

/// The module a file defines: `lib.rs` the root, `a/mod.rs` and `a.rs` the module `a`.
fn module_of(relative: &str) -> ModulePath {
    let without_extension = relative.strip_suffix(".rs").expect("a .rs file");
    let mut parts: Vec<String> = without_extension.split('/').map(str::to_string).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

fn read_sources(dir: &Path, root: &Path, out: &mut Vec<SourceFile>) {
    for entry in fs::read_dir(dir).expect("readable source directory") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            read_sources(&path, root, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let name = path.strip_prefix(root).expect("under src").to_string_lossy().replace('\\', "/");
            let text = fs::read_to_string(&path).expect("readable source file");
            out.push(SourceFile { module: module_of(&name), name, text });
        }
    }
}

/// The text with comments, string and character literals blanked out (newlines kept), so that
/// a path in a doc comment or an error message is not read as an edge.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !is_ident(chars.get(i.wrapping_sub(1))) {
            // A raw string: r"…", r#"…"#.
            let mut hashes = 0;
            let mut j = i + 1;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            while j < chars.len() && !(chars[j] == '"' && (0..hashes).all(|h| chars.get(j + 1 + h) == Some(&'#'))) {
                j += 1;
            }
            let end = (j + 1 + hashes).min(chars.len());
            chars[i..end].iter().for_each(|&c| out.push(blank(c)));
            i = end;
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                let step = if chars[i] == '\\' { 2 } else { 1 };
                chars[i..(i + step).min(chars.len())].iter().for_each(|&c| out.push(blank(c)));
                i += step;
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' && (next == Some('\\') || chars.get(i + 2) == Some(&'\'')) {
            // A character literal ('x', '\n', '\''); a lifetime ('a) has no closing quote.
            let mut j = i + 2;
            while j < chars.len() && chars[j] != '\'' {
                j += 1;
            }
            (i..=j.min(chars.len() - 1)).for_each(|_| out.push(' '));
            i = j + 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn is_ident(c: Option<&char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || *c == '_')
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    PathSeparator,
    Open,
    Close,
    Comma,
    Semicolon,
    Star,
    Other,
}

/// The tokens of blanked code, each with its line number.
fn tokens(code: &str) -> Vec<(Token, usize)> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while is_ident(chars.get(i)) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            out.push((Token::Ident(word.trim_start_matches("r#").to_string()), line));
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push((Token::PathSeparator, line));
            i += 2;
        } else {
            let token = match c {
                '{' => Token::Open,
                '}' => Token::Close,
                ',' => Token::Comma,
                ';' => Token::Semicolon,
                '*' => Token::Star,
                _ => Token::Other,
            };
            out.push((token, line));
            i += 1;
        }
    }
    out
}

/// A path a file names, before resolution: its segments (`crate`, `super`, `self`, names, `*`)
/// and the module it is written in (the file's module and any inline modules around it).
#[derive(Debug)]
struct NamedPath {
    written_in: ModulePath,
    segments: Vec<String>,
    line: usize,
    /// A `pub use`: the module re-exports the last segment under its own name.
    reexport: bool,
}

/// Expands a use tree (`a::{b, c::{d, self}, e::*}`) starting at `tokens[*at]` into its paths.
fn use_tree(tokens: &[(Token, usize)], at: &mut usize, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let mut path = prefix.to_vec();
    // `a::{self, b}`: the group's own prefix is one of its paths.
    let mut names_prefix = false;
    while let Some((token, _)) = tokens.get(*at) {
        match token {
            Token::Ident(word) if word == "as" => {
                *at += 2; // `as name`: the path is the same, only the local name differs.
            }
            Token::Ident(word) if word == "self" && !prefix.is_empty() && path.len() == prefix.len() => {
                names_prefix = true;
                *at += 1;
            }
            Token::Ident(word) => {
                path.push(word.clone());
                *at += 1;
            }
            Token::Star => {
                path.push("*".to_string());
                *at += 1;
            }
            Token::PathSeparator => *at += 1,
            Token::Open => {
                *at += 1;
                loop {
                    use_tree(tokens, at, &path, out);
                    match tokens.get(*at).map(|t| &t.0) {
                        Some(Token::Comma) => *at += 1,
                        Some(Token::Close) => {
                            *at += 1;
                            return;
                        }
                        _ => return,
                    }
                }
            }
            _ => break,
        }
    }
    if path.len() > prefix.len() || names_prefix {
        out.push(path);
    }
}

/// Every path a file names: its `use` trees and the `crate::`, `super::`, `self::` and
/// child-module paths in its code.
fn named_paths(file: &SourceFile, children: &BTreeSet<String>) -> Vec<NamedPath> {
    let tokens = tokens(&code_only(&file.text));
    let mut out = Vec::new();
    // Inline modules around the current token: their names and the brace depth they close at.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let written_in = |inline: &[(String, usize)]| {
        let mut module = file.module.clone();
        module.extend(inline.iter().map(|(name, _)| name.clone()));
        module
    };
    let mut i = 0;
    while i < tokens.len() {
        let (token, line) = &tokens[i];
        let word = match token {
            Token::Open => {
                depth += 1;
                i += 1;
                continue;
            }
            Token::Close => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth -= 1;
                i += 1;
                continue;
            }
            Token::Ident(word) => word,
            _ => {
                i += 1;
                continue;
            }
        };
        let after_separator = i > 0 && tokens[i - 1].0 == Token::PathSeparator;
        if word == "mod" {
            if let (Some((Token::Ident(name), _)), Some((Token::Open, _))) = (tokens.get(i + 1), tokens.get(i + 2)) {
                inline.push((name.clone(), depth + 1));
            }
            i += 1;
        } else if word == "use" {
            let reexport = i > 0 && matches!(&tokens[i - 1].0, Token::Ident(w) if w == "pub")
                || i > 3 && matches!(&tokens[i - 4].0, Token::Ident(w) if w == "pub");
            i += 1;
            let mut paths = Vec::new();
            use_tree(&tokens, &mut i, &[], &mut paths);
            for segments in paths {
                out.push(NamedPath { written_in: written_in(&inline), segments, line: *line, reexport });
            }
        } else if !after_separator
            && tokens.get(i + 1).map(|t| &t.0) == Some(&Token::PathSeparator)
            && (matches!(word.as_str(), "crate" | "super" | "self") || inline.is_empty() && children.contains(word))
        {
            let mut segments = vec![word.clone()];
            i += 1;
            while let (Some((Token::PathSeparator, _)), Some((Token::Ident(next), _))) =
                (tokens.get(i), tokens.get(i + 1))
            {
                segments.push(next.clone());
                i += 2;
            }
            out.push(NamedPath { written_in: written_in(&inline), segments, line: *line, reexport: false });
        } else {
            i += 1;
        }
    }
    out
}

/// An edge of the module graph, with the line that makes it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Edge {
    from: String,
    to: String,
    file: String,
    line: usize,
}

/// The modules' graph: each file's edges to the other files' modules.
struct ModuleGraph {
    modules: BTreeSet<ModulePath>,
    edges: BTreeSet<Edge>,
}

impl ModuleGraph {
    fn from_sources(files: &[SourceFile]) -> ModuleGraph {
        let modules: BTreeSet<ModulePath> = files.iter().map(|f| f.module.clone()).collect();
        let children_of = |module: &ModulePath| -> BTreeSet<String> {
            let children = modules.iter().filter(|m| m.len() == module.len() + 1 && m.starts_with(module));
            children.map(|m| m.last().expect("a child has a name").clone()).collect()
        };
        let paths: Vec<(&SourceFile, Vec<NamedPath>)> =
            files.iter().map(|f| (f, named_paths(f, &children_of(&f.module)))).collect();
        // What each module re-exports: the local name and the absolute path it stands for.
        let mut reexports: BTreeMap<ModulePath, BTreeMap<String, Vec<String>>> = BTreeMap::new();
        for (file, named) in &paths {
            for path in named.iter().filter(|p| p.reexport) {
                if let Some(absolute) = absolute(path, &children_of(&path.written_in)) {
                    if let Some(name) = absolute.last().filter(|n| *n != "*") {
                        reexports.entry(file.module.clone()).or_default().insert(name.clone(), absolute.clone());
                    }
                }
            }
        }
        let mut edges = BTreeSet::new();
        for (file, named) in &paths {
            for path in named {
                let Some(absolute) = absolute(path, &children_of(&path.written_in)) else { continue };
                let target = defining_module(&absolute, &modules, &reexports, 8);
                if target != file.module {
                    let (from, to) = (display(&file.module), display(&target));
                    edges.insert(Edge { from, to, file: file.name.clone(), line: path.line });
                }
            }
        }
        ModuleGraph { modules, edges }
    }

    /// The cycles: the strongly connected components of more than one module (Tarjan's
    /// algorithm), each with the edges inside it.
    fn cycles(&self) -> Vec<(Vec<String>, Vec<Edge>)> {
        let names: Vec<String> = self.modules.iter().map(|m| display(m)).collect();
        let index: BTreeMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (n.as_str(), i)).collect();
        let mut successors = vec![BTreeSet::new(); names.len()];
        for edge in &self.edges {
            successors[index[edge.from.as_str()]].insert(index[edge.to.as_str()]);
        }
        let mut tarjan = Tarjan {
            successors: &successors,
            order: vec![None; names.len()],
            low: vec![0; names.len()],
            stack: Vec::new(),
            on_stack: vec![false; names.len()],
            next: 0,
            components: Vec::new(),
        };
        for v in 0..names.len() {
            if tarjan.order[v].is_none() {
                tarjan.visit(v);
            }
        }
        let mut cycles = Vec::new();
        for component in tarjan.components.into_iter().filter(|c| c.len() > 1) {
            let members: BTreeSet<&str> = component.iter().map(|&v| names[v].as_str()).collect();
            let inside =
                self.edges.iter().filter(|e| members.contains(e.from.as_str()) && members.contains(e.to.as_str()));
            cycles.push((members.iter().map(|m| m.to_string()).collect(), inside.cloned().collect()));
        }
        cycles.sort();
        cycles
    }
}

/// A named path made absolute (from the crate root), or `None` for a path outside the crate.
fn absolute(path: &NamedPath, children: &BTreeSet<String>) -> Option<Vec<String>> {
    let mut segments = path.segments.iter().peekable();
    let mut module = match segments.peek().map(|s| s.as_str()) {
        Some("crate") => {
            segments.next();
            Vec::new()
        }
        Some("self" | "super") => path.written_in.clone(),
        Some(first) if children.contains(first) => path.written_in.clone(),
        _ => return None,
    };
    while let Some(segment) = segments.next_if(|s| matches!(s.as_str(), "self" | "super")) {
        if segment == "super" {
            module.pop()?;
        }
    }
    module.extend(segments.cloned());
    Some(module)
}

/// The file module that defines what an absolute path names: the longest prefix of the path
/// that is a file's module, followed through that module's re-exports of its descendants' names
/// when the next name is one (at most `hops_left` times, so that a malformed re-export cannot
/// loop).
fn defining_module(
    absolute: &[String],
    modules: &BTreeSet<ModulePath>,
    reexports: &BTreeMap<ModulePath, BTreeMap<String, Vec<String>>>,
    hops_left: usize,
) -> ModulePath {
    let module: ModulePath = (0..=absolute.len())
        .rev()
        .map(|n| absolute[..n].to_vec())
        .find(|prefix| modules.contains(prefix))
        .expect("the crate root is a module");
    let rest = &absolute[module.len()..];
    match rest.first().and_then(|name| reexports.get(&module)?.get(name)) {
        // Only a facade is seen through: a module re-exporting from its own descendants. A path
        // through a sibling's re-export depends on that sibling.
        Some(alias) if hops_left > 0 && alias.starts_with(&module) => {
            let followed: Vec<String> = alias.iter().chain(&rest[1..]).cloned().collect();
            defining_module(&followed, modules, reexports, hops_left - 1)
        }
        _ => module,
    }
}

struct Tarjan<'a> {
    successors: &'a [BTreeSet<usize>],
    order: Vec<Option<usize>>,
    low: Vec<usize>,
    stack: Vec<usize>,
    on_stack: Vec<bool>,
    next: usize,
    components: Vec<Vec<usize>>,
}

impl Tarjan<'_> {
    fn visit(&mut self, v: usize) {
        self.order[v] = Some(self.next);
        self.low[v] = self.next;
        self.next += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        for &w in self.successors[v].iter() {
            match self.order[w] {
                None => {
                    self.visit(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(order) if self.on_stack[w] => self.low[v] = self.low[v].min(order),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.order[v] {
            let mut component = Vec::new();
            loop {
                let w = self.stack.pop().expect("v is on the stack");
                self.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            self.components.push(component);
        }
    }
}

fn report(cycles: &[(Vec<String>, Vec<Edge>)]) -> String {
    let mut text = String::new();
    for (members, edges) in cycles {
        text += &format!("cycle between {}:\n", members.join(", "));
        for edge in edges {
            text += &format!("  {} -> {}  ({}:{})\n", edge.from, edge.to, edge.file, edge.line);
        }
    }
    text
}

fn crate_sources() -> Vec<SourceFile> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    read_sources(&src, &src, &mut files);
    files.sort_by(|a, b| a.name.cmp(&b.name));
    files
}

#[test]
fn no_module_reaches_a_module_that_reaches_it_back() {
    let graph = ModuleGraph::from_sources(&crate_sources());
    if std::env::var_os("BUFFERLAB_PRINT_MODULE_GRAPH").is_some() {
        graph.edges.iter().for_each(|e| println!("{} -> {}  ({}:{})", e.from, e.to, e.file, e.line));
    }
    let cycles = graph.cycles();
    assert!(
        cycles.is_empty(),
        "the module graph has cycles; move what both sides share into a module below them\n{}",
        report(&cycles)
    );
}

fn source(name: &str, text: &str) -> SourceFile {
    SourceFile { module: module_of(name), name: name.to_string(), text: text.to_string() }
}

#[test]
fn a_path_back_to_an_importing_module_is_a_cycle() {
    let files = [
        source("lib.rs", "pub mod a;\npub mod b;\n"),
        source("a.rs", "use crate::b::Thing;\npub struct Other;\n"),
        source("b.rs", "pub struct Thing;\nfn f() { let _ = super::a::Other; }\n"),
    ];
    let cycles = ModuleGraph::from_sources(&files).cycles();
    assert_eq!(cycles.len(), 1);
    assert_eq!(cycles[0].0, ["a", "b"]);
}

#[test]
fn a_reexport_is_followed_to_the_defining_module() {
    // `crate::Error` names the root only as an alias: the edge goes to `error`, and the root's
    // use of `b` closes no cycle.
    let files = [
        source("lib.rs", "pub mod b;\nmod error;\npub use error::Error;\npub fn run() { b::go(); }\n"),
        source("error.rs", "pub struct Error;\n"),
        source("b.rs", "use crate::Error;\npub fn go() -> Result<(), Error> { Ok(()) }\n"),
    ];
    let graph = ModuleGraph::from_sources(&files);
    assert!(graph.cycles().is_empty(), "{}", report(&graph.cycles()));
    assert!(graph.edges.iter().any(|e| e.from == "b" && e.to == "error"));
}

#[test]
fn paths_in_comments_strings_and_test_modules_are_told_apart() {
    let files = [
        source("lib.rs", "pub mod a;\npub mod b;\n"),
        source("a.rs", "//! see crate::b::Thing\nfn f() -> &'static str { \"crate::b\" }\nmod tests { use super::super::b::Thing; }\n"),
        source("b.rs", "pub struct Thing;\nuse crate::a as _;\n"),
    ];
    let graph = ModuleGraph::from_sources(&files);
    let from_a: Vec<&Edge> = graph.edges.iter().filter(|e| e.from == "a").collect();
    assert_eq!(from_a.len(), 1, "{from_a:?}");
    assert_eq!((from_a[0].to.as_str(), from_a[0].line), ("b", 3));
    assert_eq!(graph.cycles().len(), 1);
}

#[test]
fn a_siblings_reexport_is_no_way_around_it() {
    // `b` reaches `shared` through `a`'s re-export: that is an edge to `a`, which uses `b`.
    let files = [
        source("lib.rs", "pub mod a;\npub mod b;\npub mod shared;\n"),
        source("shared.rs", "pub struct Thing;\n"),
        source("a.rs", "pub use crate::shared::Thing;\nfn f() { crate::b::go(); }\n"),
        source("b.rs", "use crate::a::Thing;\npub fn go() {}\n"),
    ];
    let cycles = ModuleGraph::from_sources(&files).cycles();
    assert_eq!(cycles.len(), 1, "{}", report(&cycles));
    assert_eq!(cycles[0].0, ["a", "b"]);
}
