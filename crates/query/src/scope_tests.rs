//! The path table's tests: lists by node and by path, on one core and several, tags and
//! scopes.

use super::*;
use toolsearch_catalog::Tool;

/// Binds `$paths` to the [`Paths`] of `$catalog` (its tools placed by their paths), with what
/// it borrows kept alive in the calling block.
macro_rules! paths {
    ($paths:ident, $catalog:ident) => {
        let (nodes, facets) = (NodePaths::new(&$catalog.nodes), ToolFacets::of(&$catalog.tools));
        let table = PathTable::new(&$catalog, &[], &nodes);
        let $paths = Paths { table: &table, catalog: &$catalog, nodes: &nodes, facets: &facets, index: None };
    };
}

fn path(p: &str) -> CategoryPath {
    p.split('/').map(str::to_owned).collect()
}

/// Nodes `a` and `a/b`; tool 0 at `a/b` tagged `Net`, tool 1 at `x/y` (no node: a
/// catalogue made by hand), tool 2 at `a` requiring `admin`, tagged `ǅx` (title case).
fn catalog() -> Catalog {
    let node = |p: &str| Node { path: path(p), ..Node::default() };
    let tool = |id: &str, p: &str, tags: &[&str], requires: &[&str]| Tool {
        id: id.into(),
        name: id.into(),
        paths: vec![path(p)],
        tags: tags.iter().map(|t| t.to_string()).collect(),
        requires: requires.iter().map(|t| t.to_string()).collect(),
        ..Tool::default()
    };
    Catalog {
        nodes: vec![node("a"), node("a/b")],
        tools: vec![
            tool("t0", "a/b", &["Net"], &[]),
            tool("t1", "x/y", &[], &[]),
            tool("t2", "a", &["ǅx"], &["admin"]),
        ],
        ..Catalog::default()
    }
}

#[test]
fn lists_by_node_and_by_path_where_no_node_is() {
    let catalog = catalog();
    paths!(paths, catalog);
    assert_eq!(paths.tools_under(&path("a")), [0, 2]);
    assert_eq!(paths.tools_under(&path("a/b")), [0]);
    assert_eq!(paths.tools_at(&path("a")), [2]);
    assert_eq!(paths.tools_under(&path("x")), [1]);
    assert_eq!(paths.tools_at(&path("x/y")), [1]);
    assert_eq!(paths.tools_under(&[]), [0, 1, 2]);
    assert!(paths.tools_under(&path("nowhere")).is_empty());
    assert_eq!(paths.children(&[]), [0]);
    assert_eq!(paths.children(&path("a")), [1]);
    assert_eq!(paths.node_ord(&path("a/b")), Some(1));
    assert_eq!(paths.resolve(path("A/B"), |_| true), Some(path("a/b")));
    assert_eq!(paths.resolve(path("A/B"), |n| n != 1), None, "a hidden category does not resolve");
}

#[test]
fn tools_listed_by_their_node_as_by_their_path() {
    let catalog = catalog();
    let (nodes, facets) = (NodePaths::new(&catalog.nodes), ToolFacets::of(&catalog.tools));
    let by_path = PathTable::new(&catalog, &[], &nodes);
    let by_node = PathTable::new(&catalog, &[1, NO_NODE, 0], &nodes);
    for table in [&by_path, &by_node] {
        let paths = Paths { table, catalog: &catalog, nodes: &nodes, facets: &facets, index: None };
        assert_eq!(paths.tools_under(&path("a")), [0, 2]);
        assert_eq!(paths.tools_at(&path("a/b")), [0]);
        assert_eq!(paths.tools_at(&path("a")), [2]);
        assert_eq!(paths.tools_under(&path("x/y")), [1]);
    }
}

#[test]
fn a_catalogue_filed_on_several_cores_lists_as_on_one() {
    // Enough tools for several parts, by node, by path, at paths without a node, on two paths.
    let small = catalog();
    let mut catalog = Catalog { nodes: small.nodes.clone(), ..Catalog::default() };
    let mut tool_nodes = Vec::new();
    for i in 0..100_000 {
        let mut t = small.tools[i % 3].clone();
        if i % 7 == 0 {
            t.paths.push(path("a"));
        }
        tool_nodes.push(match (i % 3, t.paths.len(), i % 2) {
            (0, 1, 0) => 1,
            (2, 1, 0) => 0,
            _ => NO_NODE,
        });
        catalog.tools.push(t);
    }
    let nodes = NodePaths::new(&catalog.nodes);
    let pool = |threads| rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    let one = pool(1).install(|| PathTable::new(&catalog, &tool_nodes, &nodes));
    let two = pool(2).install(|| PathTable::new(&catalog, &tool_nodes, &nodes));
    let facets = ToolFacets::default();
    let [one, two] =
        [&one, &two].map(|table| Paths { table, catalog: &catalog, nodes: &nodes, facets: &facets, index: None });
    for p in ["a", "a/b", "x", "x/y"] {
        assert_eq!(one.tools_under(&path(p)), two.tools_under(&path(p)), "under {p}");
        assert_eq!(one.tools_at(&path(p)), two.tools_at(&path(p)), "at {p}");
    }
    let at_a: Vec<u32> = (0..100_000).filter(|i| i % 3 == 2 || i % 7 == 0).collect();
    assert_eq!(two.tools_at(&path("a")), at_a);
    assert_eq!(two.tools_under(&path("x")), (0..100_000).filter(|i| i % 3 == 1).collect::<Vec<u32>>());
}

#[test]
fn a_tool_on_two_paths_is_listed_once_under_each_node() {
    let mut catalog = catalog();
    catalog.tools[0].paths.push(path("a"));
    let (nodes, facets) = (NodePaths::new(&catalog.nodes), ToolFacets::of(&catalog.tools));
    let table = PathTable::new(&catalog, &[NO_NODE, NO_NODE, 0], &nodes);
    let paths = Paths { table: &table, catalog: &catalog, nodes: &nodes, facets: &facets, index: None };
    assert_eq!(paths.tools_under(&path("a")), [0, 2]);
    assert_eq!(paths.tools_at(&path("a")), [0, 2]);
    assert_eq!(paths.tools_at(&path("a/b")), [0]);
}

#[test]
fn tags_fold_and_scopes_hide() {
    let catalog = catalog();
    paths!(paths, catalog);
    let tags = |t: &[&str]| Filter { tags: t.iter().map(|t| t.to_string()).collect(), ..Filter::default() };
    let list = |v: &[u32]| Some(Arc::new(v.to_vec()));
    assert_eq!(paths.allowed(&tags(&["NET"])), list(&[0]));
    assert_eq!(paths.allowed(&tags(&["ǆx"])), list(&[2]), "a title-case tag is folded");
    assert_eq!(paths.allowed(&tags(&["!net"])), list(&[1, 2]));
    let scoped = |s: &[&str]| Filter { scopes: Some(s.iter().map(|s| s.to_string()).collect()), ..Filter::default() };
    assert_eq!(paths.allowed(&scoped(&[])), list(&[0, 1]));
    assert_eq!(paths.allowed(&scoped(&["admin"])), None);
    assert_eq!(paths.allowed(&Filter { tags: vec!["!net".into()], ..scoped(&[]) }), list(&[1]));
    assert_eq!(paths.allowed(&Filter { path: path("a"), ..scoped(&[]) }), list(&[0]));
    assert_eq!(paths.allowed(&Filter { path: path("a"), ..scoped(&["admin"]) }), list(&[0, 2]));
    assert_eq!(paths.visible_nodes(&Some(vec![])), Some(Arc::new(vec![true, true])));
    assert_eq!(paths.visible_nodes(&None), None);
}

#[test]
fn what_a_scope_set_may_see_is_worked_out_once_and_kept_apart_from_other_sets() {
    let catalog = catalog();
    paths!(paths, catalog);
    let none = paths.scoped(&[]);
    assert!(Arc::ptr_eq(&none, &paths.scoped(&[])), "the second request reads the kept set");
    let admin = paths.scoped(&["admin".to_owned()]);
    assert!(!Arc::ptr_eq(&none, &admin));
    assert_eq!((none.tools.as_deref(), admin.tools.as_deref()), (Some(&vec![0, 1]), None));
    assert!(!none.tool_view.contains(2) && none.tool_view.contains(1) && admin.tool_view.contains(2));
}

#[test]
fn scope_sets_differing_only_in_scopes_no_tool_requires_share_what_is_kept() {
    let catalog = catalog();
    paths!(paths, catalog);
    let set = |s: &[&str]| s.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    let admin = paths.scoped(&set(&["admin"]));
    assert!(Arc::ptr_eq(&admin, &paths.scoped(&set(&["admin", "openid", "profile"]))));
    assert!(Arc::ptr_eq(&paths.scoped(&set(&["openid"])), &paths.scoped(&[])));
    let met = vec![set(&["admin"]), set(&["admin", "openid", "profile"]), vec![], set(&["openid"])];
    assert_eq!(paths.kept_scope_sets(), met, "each kept set with the callers' own sets it was met with");
    assert!(paths.scoped(&set(&["openid"])).tools.as_deref() == Some(&vec![0, 1]), "still hides `admin`'s tool");
}

#[test]
fn a_rebuild_that_makes_a_callers_other_scope_required_finds_the_caller_prepared() {
    let before = catalog();
    paths!(paths, before);
    let set = |s: &[&str]| s.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    let caller = set(&["admin", "profile"]);
    paths.scoped(&caller);
    // The rebuilt catalogue has a tool requiring `profile`, which none required before.
    let mut after = catalog();
    let mut profile = after.tools[2].clone();
    (profile.id, profile.requires) = ("t3".into(), set(&["profile"]));
    after.tools.push(profile);
    paths!(next, after);
    for scopes in paths.kept_scope_sets() {
        next.scoped_ahead(&scopes);
    }
    assert!(next.kept_whole(&caller), "kept under its new key, with `profile`");
    assert!(next.kept_whole(&set(&["admin"])), "and the set it was kept by before");
    assert_eq!(next.scoped(&caller).tools, None, "it sees every tool, the new one too");
}

#[test]
fn the_scope_sets_no_host_named_are_worked_out_ahead_once_an_engine() {
    let catalog = catalog();
    paths!(paths, catalog);
    let set = |s: &[&str]| s.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    assert!(!paths.kept_whole(&set(&["email"])) && !paths.kept_whole(&set(&["admin", "email"])));
    paths.scoped_unnamed();
    // The tools require `admin` alone: every caller's set is one of two, both kept whole.
    assert_eq!(paths.kept_scope_sets(), vec![vec![], set(&["admin"])]);
    assert!(paths.kept_whole(&set(&["email"])) && paths.kept_whole(&set(&["admin", "email"])));
    paths.table.scoped.clear();
    paths.scoped_unnamed();
    assert!(paths.kept_scope_sets().is_empty(), "once an engine");
}

#[test]
fn a_scope_sets_kept_lists_are_the_catalogues_cut_to_what_it_allows() {
    let node = |p: &str| Node { path: path(p), ..Node::default() };
    let tool = |id: &str, p: &str, requires: &[&str]| Tool {
        id: id.into(),
        name: id.into(),
        paths: vec![if p.is_empty() { vec![] } else { path(p) }],
        requires: requires.iter().map(|t| t.to_string()).collect(),
        ..Tool::default()
    };
    // `a/c` holds only a hidden tool, so it is hidden too; `x/y` has no node.
    let catalog = Catalog {
        nodes: vec![node("a"), node("a/b"), node("a/c"), node("z")],
        tools: vec![
            tool("t0", "a/b", &[]),
            tool("t1", "a/c", &["admin"]),
            tool("t2", "a", &["admin"]),
            tool("t3", "", &[]),
            tool("t4", "", &["admin"]),
            tool("t5", "x/y", &[]),
            tool("t6", "z", &["admin"]),
        ],
        ..Catalog::default()
    };
    paths!(paths, catalog);
    let user = paths.scoped(&[]);
    let kept = |p: &str, directly| paths.allowed_tools(&if p.is_empty() { vec![] } else { path(p) }, directly, &user);
    assert_eq!(kept("a", false), Some(vec![0]));
    assert_eq!(kept("a", true), Some(vec![]), "t2 is hidden");
    assert_eq!(kept("a/b", true), Some(vec![0]));
    assert_eq!(kept("a/c", false), Some(vec![]));
    assert_eq!(kept("", true), Some(vec![3]), "at the root, t4 is hidden");
    assert_eq!(kept("x/y", true), None, "a path without a node is filtered by the caller");
    assert_eq!(paths.allowed_children(&[], &user), Some(vec![0]), "z holds only a hidden tool");
    assert_eq!(paths.allowed_children(&path("a"), &user), Some(vec![1]));
    let scoped = Filter { scopes: Some(vec![]), path: path("a"), ..Filter::default() };
    assert_eq!(paths.allowed(&scoped), Some(Arc::new(vec![0])));
    let admin = paths.scoped(&["admin".to_owned()]);
    assert_eq!(paths.allowed_tools(&path("a"), false, &admin), None, "nothing hidden: nothing kept");
}

#[test]
fn a_scope_sets_kept_tag_lists_hold_only_the_tools_it_allows() {
    let node = |p: &str| Node { path: path(p), ..Node::default() };
    let tool = |id: &str, p: &str, tags: &[&str], requires: &[&str]| Tool {
        id: id.into(),
        name: id.into(),
        paths: vec![if p.is_empty() { vec![] } else { path(p) }],
        tags: tags.iter().map(|t| t.to_string()).collect(),
        requires: requires.iter().map(|t| t.to_string()).collect(),
        ..Tool::default()
    };
    let catalog = Catalog {
        nodes: vec![node("a"), node("a/b"), node("a/c")],
        tools: vec![
            tool("t0", "a/b", &["net"], &[]),
            tool("t1", "a/c", &["net"], &["admin"]),
            tool("t2", "a", &["Ops"], &["admin"]),
            tool("t3", "", &["ops"], &[]),
            tool("t4", "x/y", &["net"], &[]),
        ],
        ..Catalog::default()
    };
    paths!(paths, catalog);
    let (user, admin) = (paths.scoped(&[]), paths.scoped(&["admin".to_owned()]));
    assert_eq!(paths.tagged("net", Some(&user)), [0, 4], "t1 is hidden");
    assert_eq!(paths.tagged("ops", Some(&user)), [3]);
    assert!(paths.tagged("nowhere", Some(&user)).is_empty());
    assert_eq!(paths.tagged("ops", None), [2, 3], "a trusted caller reads the catalogue's list");
    assert_eq!(paths.tagged("net", Some(&admin)), [0, 1, 4], "nothing hidden: the catalogue's list");
    assert_eq!(paths.every_tool(Some(&user)), [0, 3, 4]);
    assert_eq!(paths.every_tool(Some(&admin)), [0, 1, 2, 3, 4]);
    assert_eq!((paths.under(0, Some(&user)), paths.under(0, None)), (&[0][..], &[0, 1, 2][..]));
    let ask = |p: &str, tags: &[&str], scopes: Option<Vec<String>>| {
        let path = if p.is_empty() { vec![] } else { path(p) };
        paths.allowed(&Filter { path, tags: tags.iter().map(|t| t.to_string()).collect(), scopes })
    };
    let list = |l: &[u32]| Some(Arc::new(l.to_vec()));
    assert_eq!(ask("", &["NET"], Some(vec![])), list(&[0, 4]));
    assert_eq!(ask("", &["!net"], Some(vec![])), list(&[3]), "`!net` is taken from what the scopes allow");
    assert_eq!(ask("a", &["!ops"], Some(vec![])), list(&[0]));
    assert_eq!(ask("a", &["net", "!ops"], Some(vec![])), list(&[0]));
    assert_eq!(ask("", &["!net"], Some(vec!["admin".to_owned()])), list(&[2, 3]));
    assert_eq!(ask("a", &["net"], None), list(&[0, 1]));
}
