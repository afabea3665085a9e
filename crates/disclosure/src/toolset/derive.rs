//! What a catalogue generation and a configuration imply: facades, nesting, discovery tools, names.

use super::*;

/// Facades, nesting, discovery tools and names for the engine's catalogue.
pub(super) fn derive(engine: &Engine, config: &ToolSetConfig) -> Result<Derived, DisclosureError> {
    let catalog = engine.catalog();
    let mut facades: HashMap<String, Facade> = HashMap::new();
    let mut facade_by_path = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    // A category holding no tool the caller may use does not exist for it: no facade either
    // (nor its description, usage notes or place in the instructions).
    let who = &config.principal;
    // What the caller may see is read from what the engine keeps for its scope set, so making
    // a tool set takes no longer for the tools hidden from it.
    let usable_under = |path: &CategoryPath| engine.holds_tool_for(who, path);
    let node_facades: Vec<&toolsearch_catalog::Node> = if config.node_facades {
        catalog.nodes.iter().filter(|n| n.facade.is_some() && usable_under(&n.path)).collect()
    } else {
        Vec::new()
    };
    let mut all: Vec<Facade> = Vec::new();
    for node in node_facades {
        if let Some(f) = Facade::for_node(node) {
            facade_by_path.insert(node.path.clone(), f.name.clone());
            all.push(f);
        }
    }
    all.extend(config.facades.iter().cloned());
    for f in all {
        if facades.contains_key(&f.name) {
            return Err(DisclosureError::Facade {
                facade: f.name.clone(),
                field: "name".into(),
                message: "two facades have this name".into(),
            });
        }
        if let Inner::Items(items) = &f.inner {
            if f.select == Select::Category {
                return Err(DisclosureError::Facade {
                    facade: f.name.clone(),
                    field: "select".into(),
                    message: "`category` selection needs a catalogue node; list the tools or use `query`".into(),
                });
            }
            for item in items {
                if let Item::Tool(id) = item {
                    if engine.tool(id).is_none() {
                        return Err(DisclosureError::UnknownInnerTool { facade: f.name.clone(), tool: id.clone() });
                    }
                }
            }
        }
        order.push(f.name.clone());
        facades.insert(f.name.clone(), f);
    }
    // Children: listed facades, or the nearest facade nodes below a node facade.
    let children = |f: &Facade| -> Result<Vec<String>, DisclosureError> {
        match &f.inner {
            Inner::Items(items) => items
                .iter()
                .filter_map(|i| if let Item::Facade(n) = i { Some(n) } else { None })
                .map(|n| {
                    facades
                        .get(n)
                        .map(|c| c.name.clone())
                        .ok_or_else(|| DisclosureError::UnknownInnerFacade { facade: f.name.clone(), inner: n.clone() })
                })
                .collect(),
            Inner::Node(path) => Ok(facade_by_path
                .iter()
                .filter(|(p, _)| p.len() > path.len() && p.starts_with(path))
                .filter(|(p, _)| {
                    !facade_by_path.keys().any(|q| q.len() > path.len() && q.len() < p.len() && p.starts_with(q))
                })
                .map(|(_, n)| n.clone())
                .collect()),
        }
    };
    let mut graph: HashMap<String, Vec<String>> = HashMap::new();
    for name in &order {
        graph.insert(name.clone(), children(&facades[name])?);
    }
    let mut nested: HashSet<&String> = HashSet::new();
    for kids in graph.values() {
        nested.extend(kids.iter());
    }
    for name in &order {
        let depth = depth_of(name, &graph, &mut Vec::new())?;
        if depth > config.max_depth {
            return Err(DisclosureError::FacadeTooDeep { facade: name.clone(), depth, max: config.max_depth });
        }
    }
    let top_level: Vec<String> = order.iter().filter(|n| !nested.contains(n)).cloned().collect();
    let discovery = config.discovery.tools(catalog)?;
    // Compiled now, not at the set's first call of each: a server makes one set at start.
    for tool in &discovery {
        super::discover::compile_ahead(&tool.definition(&config.discovery, catalog).input_schema);
    }
    for name in &order {
        if is_discovery_name(name) || is_discovery_name(&fold_name(name)) {
            return Err(DisclosureError::Facade {
                facade: name.clone(),
                field: "name".into(),
                message: "is the name of a discovery tool; choose another name".into(),
            });
        }
    }
    let mut reserved: HashSet<String> = discovery.iter().map(DiscoveryTool::name).collect();
    for name in &order {
        reserved.insert(name.clone());
        reserved.insert(fold_name(name));
    }
    // Names are chosen among the tools the caller may use only: a hidden tool never changes
    // what a visible one is called.
    let (names, diagnostics) = Names::assign(catalog, &reserved, engine.tools_for(who).map(|(o, _)| o as usize));
    let mut always: Vec<String> = engine
        .tools_for(who)
        .map(|(_, t)| t)
        .filter(|t| config.always_load.iter().any(|g| toolsearch_catalog::glob(g, &t.id)))
        // A tool the caller may see but never call (a read-only token, a destructive tool) is
        // not loaded for it (its annotations are in its full record).
        .filter(|t| {
            let full = engine.full_tool(&t.id).ok().flatten();
            full.is_some_and(|full| toolsearch_query::effects::refusal(who, &full).is_none())
        })
        .map(|t| t.id.clone())
        .collect();
    always.sort();
    always.dedup();
    Ok(Derived {
        generation: engine.index().meta().generation,
        facades,
        facade_by_path,
        top_level,
        discovery,
        names,
        diagnostics,
        always,
    })
}

/// Nesting depth below `name` (1 for a facade without inner facades); a cycle is an error.
pub(super) fn depth_of(
    name: &str,
    graph: &HashMap<String, Vec<String>>,
    stack: &mut Vec<String>,
) -> Result<usize, DisclosureError> {
    if let Some(start) = stack.iter().position(|s| s == name) {
        let mut cycle = stack[start..].to_vec();
        cycle.push(name.to_owned());
        return Err(DisclosureError::FacadeCycle(cycle));
    }
    stack.push(name.to_owned());
    let mut deepest = 0;
    for child in graph.get(name).map(Vec::as_slice).unwrap_or_default() {
        deepest = deepest.max(depth_of(child, graph, stack)?);
    }
    stack.pop();
    Ok(deepest + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_counts_levels_and_finds_cycles() {
        let graph: HashMap<String, Vec<String>> = [
            ("a".to_owned(), vec!["b".to_owned()]),
            ("b".to_owned(), vec!["c".to_owned()]),
            ("c".to_owned(), vec![]),
            ("x".to_owned(), vec!["y".to_owned()]),
            ("y".to_owned(), vec!["x".to_owned()]),
        ]
        .into();
        assert_eq!(depth_of("a", &graph, &mut Vec::new()).unwrap(), 3);
        assert_eq!(depth_of("c", &graph, &mut Vec::new()).unwrap(), 1);
        match depth_of("x", &graph, &mut Vec::new()) {
            Err(DisclosureError::FacadeCycle(path)) => assert_eq!(path, ["x", "y", "x"]),
            other => panic!("{other:?}"),
        }
    }
}
