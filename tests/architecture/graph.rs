//! The crate's files as modules, each with every path it names, resolved to the crate where it
//! is relative (`crate::`, `super::`, `self::`, a child module, `drainwatch::` in the binary).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use proc_macro2::{Spacing, TokenStream, TokenTree};
use syn::visit::Visit;

/// A path named in a file, resolved where it is relative.
#[derive(Debug, Clone)]
pub struct Named {
    /// Segments; relative paths start with `crate`.
    pub segments: Vec<String>,
    /// The line it starts on.
    pub line: usize,
}

/// One source file.
#[derive(Debug, Clone, Default)]
pub struct Module {
    /// Its module path below the crate root (`["evidence", "plan"]`); the binary's root is
    /// `["main"]` and its modules are under `cmd`.
    pub path: Vec<String>,
    /// The file, relative to `src/`.
    pub file: String,
    /// Every path it names.
    pub paths: Vec<Named>,
}

/// The files of `src/` (library and binary share it; their top-level names do not overlap).
#[derive(Debug, Default)]
pub struct Crate {
    /// By module path.
    pub modules: BTreeMap<Vec<String>, Module>,
}

struct Collector {
    /// The module being read: the file's path, then inline modules.
    here: Vec<String>,
    /// Child modules declared in the file (`mod x;` or `mod x { .. }`) at each depth.
    children: Vec<BTreeSet<String>>,
    out: Vec<Named>,
}

impl Collector {
    fn push(&mut self, raw: Vec<String>, line: usize) {
        if raw.is_empty() {
            return;
        }
        let mut segs = raw;
        let resolved = match segs[0].as_str() {
            "crate" | "drainwatch" => {
                segs[0] = "crate".into();
                segs
            }
            "self" => [vec!["crate".into()], self.here.clone(), segs[1..].to_vec()].concat(),
            "super" => {
                let ups = segs.iter().take_while(|s| *s == "super").count();
                let keep = self.here.len().saturating_sub(ups);
                [
                    vec!["crate".into()],
                    self.here[..keep].to_vec(),
                    segs[ups..].to_vec(),
                ]
                .concat()
            }
            first if self.children.last().is_some_and(|c| c.contains(first)) => {
                [vec!["crate".into()], self.here.clone(), segs].concat()
            }
            _ => segs,
        };
        self.out.push(Named {
            segments: resolved,
            line,
        });
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, t: &syn::UseTree, line: usize) {
        match t {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree, line);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut v = prefix.clone();
                if n.ident != "self" {
                    v.push(n.ident.to_string());
                }
                self.push(v, line);
            }
            syn::UseTree::Rename(r) => {
                let mut v = prefix.clone();
                if r.ident != "self" {
                    v.push(r.ident.to_string());
                }
                self.push(v, line);
            }
            syn::UseTree::Glob(_) => self.push(prefix.clone(), line),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t, line);
                }
            }
        }
    }

    /// Paths inside a macro's tokens: `a::b::c` sequences (strings are literals, not idents).
    fn tokens(&mut self, ts: TokenStream) {
        let toks: Vec<TokenTree> = ts.into_iter().collect();
        let mut i = 0;
        while i < toks.len() {
            match &toks[i] {
                TokenTree::Group(g) => {
                    self.tokens(g.stream());
                    i += 1;
                }
                TokenTree::Ident(id) => {
                    let line = id.span().start().line;
                    let mut segs = vec![id.to_string()];
                    let mut j = i + 1;
                    while j + 2 < toks.len() + 1
                        && matches!(&toks.get(j), Some(TokenTree::Punct(p)) if p.as_char() == ':' && p.spacing() == Spacing::Joint)
                        && matches!(&toks.get(j + 1), Some(TokenTree::Punct(p)) if p.as_char() == ':')
                    {
                        match toks.get(j + 2) {
                            Some(TokenTree::Ident(next)) => {
                                segs.push(next.to_string());
                                j += 3;
                            }
                            _ => break,
                        }
                    }
                    self.push(segs, line);
                    i = j;
                }
                _ => i += 1,
            }
        }
    }
}

impl<'ast> Visit<'ast> for Collector {
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let line = u.use_token.span.start().line;
        self.use_tree(&mut Vec::new(), &u.tree, line);
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if let Some(c) = self.children.last_mut() {
            c.insert(m.ident.to_string());
        }
        if let Some((_, items)) = &m.content {
            self.here.push(m.ident.to_string());
            self.children.push(BTreeSet::new());
            for it in items {
                self.visit_item(it);
            }
            self.children.pop();
            self.here.pop();
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        let line = p
            .segments
            .first()
            .map_or(0, |s| s.ident.span().start().line);
        self.push(segs, line);
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.visit_path(&m.path);
        self.tokens(m.tokens.clone());
    }
}

impl Module {
    /// Parses `src` as the module `path` (file name `file`, for messages).
    pub fn parse(path: &[String], file: &str, src: &str) -> Self {
        let ast = syn::parse_file(src).unwrap_or_else(|e| panic!("{file}: {e}"));
        // The binary's root resolves `crate::` and its `mod cmd;` from the crate root.
        let here = if path == ["main"] {
            vec![]
        } else {
            path.to_vec()
        };
        let mut c = Collector {
            here,
            children: vec![BTreeSet::new()],
            out: Vec::new(),
        };
        // `mod x;` declarations first, so that `x::..` paths above them resolve too.
        for it in &ast.items {
            if let syn::Item::Mod(m) = it {
                c.children[0].insert(m.ident.to_string());
            }
        }
        c.visit_file(&ast);
        Self {
            path: path.to_vec(),
            file: file.to_string(),
            paths: c.out,
        }
    }
}

fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    match stem {
        "lib" if parts.is_empty() => {}
        "mod" => {}
        other => parts.push(other.to_string()),
    }
    parts
}

impl Crate {
    /// Every `.rs` file below `src`.
    pub fn read(src: &Path) -> Self {
        let mut c = Self::default();
        for f in super::common::rust_files(src) {
            let rel = f.strip_prefix(src).unwrap();
            let path = module_path(rel);
            let text = std::fs::read_to_string(&f).unwrap();
            let m = Module::parse(&path, &rel.display().to_string(), &text);
            assert!(
                c.modules.insert(path.clone(), m).is_none(),
                "two files are module {path:?}"
            );
        }
        c
    }

    /// Adds the crate whose sources are `src` as the module `at` of this one, as a re-export
    /// (`pub use other_crate as at;`) makes it: its `crate::x` paths become `crate::at::x`.
    pub fn mount(&mut self, src: &Path, at: &str, shown_as: &str) {
        for (path, mut m) in std::mem::take(&mut Self::read(src).modules) {
            let path: Vec<String> = std::iter::once(at.to_string()).chain(path).collect();
            for p in &mut m.paths {
                if p.segments[0] == "crate" {
                    p.segments.insert(1, at.to_string());
                }
            }
            m.path = path.clone();
            m.file = format!("{shown_as}/{}", m.file);
            assert!(
                self.modules.insert(path.clone(), m).is_none(),
                "two files are module {path:?}"
            );
        }
    }

    /// The file a crate path lands in: the longest module prefix.
    fn target(&self, segs: &[String]) -> Option<&Vec<String>> {
        (1..=segs.len().saturating_sub(1))
            .rev()
            .find_map(|n| self.modules.get_key_value(&segs[1..=n]).map(|(k, _)| k))
    }

    /// (from, to, "file:line") for every path from one file into another.
    pub fn edges(&self) -> impl Iterator<Item = (Vec<String>, Vec<String>, String)> + '_ {
        self.modules.values().flat_map(move |m| {
            m.paths
                .iter()
                .filter(|p| p.segments[0] == "crate")
                .filter_map(move |p| {
                    let to = self.target(&p.segments)?;
                    (to != &m.path)
                        .then(|| (m.path.clone(), to.clone(), format!("{}:{}", m.file, p.line)))
                })
        })
    }

    /// For every module, the cycles among its children (each child with everything below it).
    pub fn sibling_cycles(&self) -> Vec<String> {
        // parent -> (child, child) -> one place that makes the edge
        let mut graphs: BTreeMap<Vec<String>, BTreeMap<(String, String), String>> = BTreeMap::new();
        for (from, to, at) in self.edges() {
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            // An edge to or from the parent itself (its mod.rs) is inside the module's face.
            if common == from.len() || common == to.len() {
                continue;
            }
            graphs
                .entry(from[..common].to_vec())
                .or_default()
                .entry((from[common].clone(), to[common].clone()))
                .or_insert(at);
        }
        let mut out = Vec::new();
        for (parent, edges) in &graphs {
            for scc in cycles(edges) {
                let evidence: Vec<String> = edges
                    .iter()
                    .filter(|((a, b), _)| scc.contains(a) && scc.contains(b))
                    .map(|((a, b), at)| format!("{a} -> {b} ({at})"))
                    .collect();
                let names: Vec<String> = scc
                    .iter()
                    .map(|c| [parent.clone(), vec![c.clone()]].concat().join("::"))
                    .collect();
                out.push(format!("{}: {}", names.join(" <-> "), evidence.join(", ")));
            }
        }
        out
    }
}

/// The strongly connected components of more than one node (Tarjan's algorithm).
fn cycles(edges: &BTreeMap<(String, String), String>) -> Vec<BTreeSet<String>> {
    struct T<'a> {
        adj: BTreeMap<&'a str, Vec<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<BTreeSet<String>>,
    }
    fn go<'a>(t: &mut T<'a>, v: &'a str) {
        let i = t.index.len();
        t.index.insert(v, i);
        t.low.insert(v, i);
        t.stack.push(v);
        t.on.insert(v);
        for w in t.adj.get(v).cloned().unwrap_or_default() {
            if !t.index.contains_key(w) {
                go(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = BTreeSet::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                comp.insert(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        adj: BTreeMap::new(),
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for (a, b) in edges.keys() {
        t.adj.entry(a.as_str()).or_default().push(b.as_str());
        t.adj.entry(b.as_str()).or_default();
    }
    let nodes: Vec<&str> = t.adj.keys().copied().collect();
    for v in nodes {
        if !t.index.contains_key(v) {
            go(&mut t, v);
        }
    }
    t.out
}
