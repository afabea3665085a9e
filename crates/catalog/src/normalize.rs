//! Normalisation and validation: raw records in, a [`Catalog`] that keeps every invariant out.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, RandomState};
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::details::ToolDetails;
use crate::error::CatalogError;
use crate::facade::{check_unique_names, FacadeSettings};
use crate::json::Json;
use crate::limits::*;
use crate::manifest::{RawGroup, RawNode, RawTool};
use crate::model::{Catalog, Group, Node, Pending, Tool, Visibility};
use crate::path::{display_path, CategoryPath};
use crate::schema::{SchemaValidator, Validation};
use crate::warning::{CatalogWarning, WarningKind};

pub(crate) use crate::fields::Origin;
use crate::fields::{bounded_list, checked_meta, checked_path, checked_schema, optional_text, required_text};

/// Raw records of any format, ready to be normalised.
#[derive(Default)]
pub(crate) struct RawCatalog {
    pub nodes: Vec<(Origin, RawNode)>,
    pub tools: Vec<(Origin, RawTool)>,
    pub groups: Vec<(Origin, RawGroup)>,
    /// What the importer tolerated (duplicate names).
    pub warnings: Vec<CatalogWarning>,
}

/// Validates and normalises `raw`, read from `file`. `lenient`: a tool that is refused is left
/// out with a [`WarningKind::Skipped`] warning instead of failing the catalogue (the gateway,
/// where one upstream tool must not take the others down); each tool is still checked once.
pub(crate) fn normalize(file: &Path, raw: RawCatalog, lenient: bool) -> Result<Catalog, CatalogError> {
    if raw.tools.len() > MAX_TOOLS {
        return Err(CatalogError::file(file, format!("{} tools exceed the limit of {MAX_TOOLS}", raw.tools.len())));
    }
    let mut out = Normalizer::new(file, raw.groups, raw.nodes)?;
    out.warnings = raw.warnings;
    let mut tools = Vec::with_capacity(raw.tools.len());
    for (origin, rt) in raw.tools {
        let name = rt.id.clone().or_else(|| rt.name.clone());
        match out.tool(origin, rt) {
            Ok(t) => tools.push(t),
            Err(e) if lenient => out.warnings.push(CatalogWarning {
                kind: WarningKind::Skipped,
                tool: name,
                at: format!("{}{}", e.file.display(), e.location),
                message: format!(
                    "left out: {}{}",
                    e.field.as_deref().map(|f| format!("field `{f}`: ")).unwrap_or_default(),
                    e.message
                ),
            }),
            Err(e) => return Err(e),
        }
    }
    let mut catalog = out.finish()?;
    catalog.tools = tools;
    Ok(catalog)
}

/// A catalogue being normalised a tool at a time. It hands each tool back rather than keep
/// it, so a reader can pass tools on as they are parsed and neither the raw records nor the
/// tools of the whole file need be held (at a million tools, each is over a gigabyte); what it
/// keeps is the categories and a hash of each id.
pub(crate) struct Normalizer {
    file: PathBuf,
    groups: Vec<Group>,
    nodes: BTreeMap<CategoryPath, Node>,
    tools: usize,
    /// Where each id was first seen (see [`Normalizer::origin`]), by a 128-bit hash of the id.
    /// The hash is keyed at random, so no file can make two ids collide on purpose, and two
    /// of a million ids collide by chance with a probability of about 10^-27.
    seen: HashMap<[u64; 2], u64>,
    keys: [RandomState; 2],
    /// The origins that are JSON pointers (a line number needs no string).
    pointers: Vec<String>,
    /// What was tolerated so far.
    pub(crate) warnings: Vec<CatalogWarning>,
}

/// The high bit of a packed origin: an index into `pointers` rather than a line number.
const POINTER: u64 = 1 << 63;

impl Normalizer {
    /// Starts a catalogue with its groups and declared nodes.
    pub(crate) fn new(
        file: &Path,
        groups: Vec<(Origin, RawGroup)>,
        raw_nodes: Vec<(Origin, RawNode)>,
    ) -> Result<Normalizer, CatalogError> {
        let groups = normalize_groups(file, groups)?;
        let mut nodes: BTreeMap<CategoryPath, Node> = BTreeMap::new();
        for (origin, rn) in raw_nodes {
            let node = normalize_node(file, &origin, rn)?;
            if nodes.contains_key(&node.path) {
                return Err(origin.error(file, "path", format!("duplicate category path {:?}", node.path.join("/"))));
            }
            nodes.insert(node.path.clone(), node);
        }
        // Every ancestor of a declared node is a node too.
        let declared: Vec<CategoryPath> = nodes.keys().cloned().collect();
        for path in &declared {
            add_ancestors(&mut nodes, path);
        }
        let keys = [RandomState::new(), RandomState::new()];
        Ok(Normalizer {
            file: file.to_path_buf(),
            groups,
            nodes,
            tools: 0,
            seen: HashMap::new(),
            keys,
            pointers: Vec::new(),
            warnings: Vec::new(),
        })
    }

    /// Tools validated so far.
    pub(crate) fn tools(&self) -> usize {
        self.tools
    }

    /// Validates one tool, the next in the catalogue's order, and hands it back.
    pub(crate) fn tool(&mut self, origin: Origin, rt: RawTool) -> Result<Tool, CatalogError> {
        let file = &self.file;
        if self.tools == MAX_TOOLS {
            return Err(CatalogError::file(file, format!("more than {MAX_TOOLS} tools: over the limit")));
        }
        let tool = normalize_tool(file, &origin, rt, &self.groups, &mut self.warnings)?;
        let key = [self.keys[0].hash_one(&tool.id), self.keys[1].hash_one(&tool.id)];
        if let Some(&first) = self.seen.get(&key) {
            return Err(origin.error(
                file,
                "id",
                format!("duplicate tool id {:?} (first defined at {})", tool.id, self.origin(first).describe()),
            ));
        }
        let packed = match origin {
            Origin::Line(n) => n as u64,
            Origin::Pointer(p) => {
                self.pointers.push(p);
                POINTER | (self.pointers.len() - 1) as u64
            }
        };
        self.seen.insert(key, packed);
        for path in &tool.paths {
            add_ancestors(&mut self.nodes, path);
        }
        self.tools += 1;
        Ok(tool)
    }

    /// A packed origin, unpacked.
    fn origin(&self, packed: u64) -> Origin {
        match packed & POINTER {
            0 => Origin::Line(packed as usize),
            _ => Origin::Pointer(self.pointers[(packed & !POINTER) as usize].clone()),
        }
    }

    /// The catalogue without its tools (the caller has them): every category, the implicit
    /// ancestors of every path included, with node names checked, and the groups.
    pub(crate) fn finish(self) -> Result<Catalog, CatalogError> {
        let nodes: Vec<Node> = self.nodes.into_values().collect();
        check_unique_names(&nodes, &self.file)?;
        Ok(Catalog { nodes, tools: Vec::new(), groups: self.groups, warnings: self.warnings })
    }
}

fn normalize_groups(file: &Path, raw: Vec<(Origin, RawGroup)>) -> Result<Vec<Group>, CatalogError> {
    let mut out: Vec<Group> = Vec::new();
    for (origin, rg) in raw {
        let id = required_text(file, &origin, "id", rg.id, MAX_ID_BYTES)?;
        if out.iter().any(|g| g.id == id) {
            return Err(origin.error(file, "id", format!("duplicate group id {id:?}")));
        }
        let visibility = match rg.visibility.as_deref() {
            None | Some("always") => Visibility::Always,
            Some("conditional") => Visibility::Conditional,
            Some(other) => {
                return Err(origin.error(
                    file,
                    "visibility",
                    format!("must be \"always\" or \"conditional\", found {other:?}"),
                ))
            }
        };
        if visibility == Visibility::Conditional && rg.check.as_deref().is_none_or(|c| c.trim().is_empty()) {
            return Err(origin.error(file, "check", "a conditional group needs the name of its availability check"));
        }
        let pending = match rg.pending {
            None => None,
            Some(_) if visibility != Visibility::Conditional => {
                return Err(origin.error(
                    file,
                    "pending",
                    "only a conditional group can be pending (its check says when its tools are listed)",
                ))
            }
            Some(p) => Some(Pending {
                prefix: required_text(file, &origin, "pending/prefix", p.prefix, MAX_ID_BYTES)?,
                requires: bounded_list(file, &origin, "pending/requires", p.requires, MAX_TAGS, MAX_TAG_BYTES)?,
            }),
        };
        out.push(Group { id, visibility, check: rg.check, ttl_secs: rg.ttl_secs, suggestion: rg.suggestion, pending });
    }
    Ok(out)
}

fn normalize_node(file: &Path, origin: &Origin, rn: RawNode) -> Result<Node, CatalogError> {
    let Some(spec) = rn.path else {
        return Err(origin.error(file, "path", "a node needs a path"));
    };
    let path = checked_path(file, origin, "path", &spec)?;
    if path.is_empty() {
        return Err(origin.error(file, "path", "a node path must not be empty (the root is implicit)"));
    }
    let description = optional_text(file, origin, "description", rn.description, MAX_TEXT_BYTES)?;
    let summary = match optional_text(file, origin, "summary", rn.summary, MAX_SUMMARY_BYTES)? {
        Some(s) => s,
        None => {
            description.as_deref().and_then(first_sentence).unwrap_or_else(|| path.last().cloned().unwrap_or_default())
        }
    };
    let (path_of_node, summary_of_node) = (path.clone(), summary.clone());
    Ok(Node {
        path,
        summary,
        description,
        tags: bounded_list(file, origin, "tags", rn.tags, MAX_TAGS, MAX_TAG_BYTES)?,
        usage_notes: optional_text(file, origin, "usage_notes", rn.usage_notes, MAX_TEXT_BYTES)?,
        facade: match &rn.facade {
            None => None,
            Some(raw) => FacadeSettings::parse(&path_of_node, &summary_of_node, raw)
                .map_err(|(field, message)| {
                    origin.error(file, "facade", format!("facade {}: {field}: {message}", display_path(&path_of_node)))
                })?
                .map(Box::new),
        },
        implicit: false,
    })
}

fn normalize_tool(
    file: &Path,
    origin: &Origin,
    rt: RawTool,
    groups: &[Group],
    warnings: &mut Vec<CatalogWarning>,
) -> Result<Tool, CatalogError> {
    let id = required_text(file, origin, "id", rt.id, MAX_ID_BYTES)?;
    if let Some(c) = id.chars().find(|c| c.is_control()) {
        return Err(origin.error(file, "id", format!("contains the control character {c:?}; ids are printable text")));
    }
    let name = required_text(file, origin, "name", rt.name, MAX_NAME_BYTES)?;
    let mut paths = Vec::new();
    match (rt.path, rt.paths) {
        (Some(_), Some(_)) => return Err(origin.error(file, "paths", "give either `path` or `paths`, not both")),
        (Some(p), None) => paths.push(checked_path(file, origin, "path", &p)?),
        (None, Some(ps)) => {
            for (i, p) in ps.iter().enumerate() {
                let path = checked_path(file, origin, &format!("paths/{i}"), p)?;
                if !paths.contains(&path) {
                    paths.push(path);
                }
            }
        }
        (None, None) => {}
    }
    if paths.is_empty() {
        paths.push(Vec::new());
    }
    let description = match rt.description.as_deref().map(str::trim) {
        Some(d) if d.len() > MAX_DESCRIPTION_BYTES => {
            let mut end = MAX_DESCRIPTION_BYTES;
            while !d.is_char_boundary(end) {
                end -= 1;
            }
            warnings.push(CatalogWarning {
                kind: WarningKind::Truncated,
                tool: Some(id.clone()),
                at: origin.place(file, "description"),
                message: format!("description is {} bytes: cut to the limit of {MAX_DESCRIPTION_BYTES}", d.len()),
            });
            d[..end].to_owned()
        }
        Some(d) => d.to_owned(),
        None => String::new(),
    };
    let summary = match optional_text(file, origin, "summary", rt.summary, MAX_SUMMARY_BYTES)? {
        Some(s) => s,
        None => first_sentence(&description).unwrap_or_else(|| name.clone()),
    };
    let (args_field, result_field) =
        (rt.args_field.unwrap_or("args_schema"), rt.result_field.unwrap_or("result_schema"));
    let args_schema = match rt.args_schema {
        Some(s) if !s.is_null() => checked_schema(file, origin, args_field, s)?,
        _ => Json::new(&json!({"type": "object", "properties": {}})),
    };
    if let Validation::Off { at, reason } = SchemaValidator::new(&args_schema.value()).validation() {
        warnings.push(CatalogWarning {
            kind: WarningKind::Unvalidated,
            tool: Some(id.clone()),
            at: origin.place(file, &format!("{args_field}{at}")),
            message: format!("{reason}; its calls are passed on without local validation"),
        });
    }
    let result_schema = match rt.result_schema {
        Some(s) if !s.is_null() => Some(checked_schema(file, origin, result_field, s)?),
        _ => None,
    };
    let group = rt.group.filter(|g| !g.trim().is_empty());
    if let Some(g) = &group {
        if !groups.iter().any(|x| &x.id == g) {
            let known: Vec<&str> = groups.iter().map(|g| g.id.as_str()).collect();
            return Err(origin.error(file, "group", format!("unknown group {g:?} (declared groups: {known:?})")));
        }
    }
    // Checked in the order of the tool's fields, so the first fault found is the first named.
    let tags = bounded_list(file, origin, "tags", rt.tags, MAX_TAGS, MAX_TAG_BYTES)?;
    let usage_notes = optional_text(file, origin, "usage_notes", rt.usage_notes, MAX_TEXT_BYTES)?;
    let examples = bounded_list(file, origin, "examples", rt.examples, MAX_EXAMPLES, MAX_EXAMPLE_BYTES)?;
    let requires = bounded_list(file, origin, "requires", rt.requires, MAX_TAGS, MAX_TAG_BYTES)?;
    let version = optional_text(file, origin, "version", rt.version, MAX_NAME_BYTES)?;
    let meta = checked_meta(file, origin, rt.meta)?;
    let details = ToolDetails { description, args_schema, result_schema, usage_notes, examples, meta };
    Ok(Tool { id, name, paths, summary, tags, requires, group, version, details: details.into() })
}

/// Creates a node for every missing ancestor of `path` (itself included).
fn add_ancestors(nodes: &mut BTreeMap<CategoryPath, Node>, path: &[String]) {
    for depth in 1..=path.len() {
        let prefix = &path[..depth];
        if !nodes.contains_key(prefix) {
            let name = prefix[depth - 1].clone();
            nodes.insert(
                prefix.to_vec(),
                Node { path: prefix.to_vec(), summary: name, implicit: true, ..Node::default() },
            );
        }
    }
}

/// The first sentence of `text`, at most 200 characters, for a derived summary.
pub(crate) fn first_sentence(text: &str) -> Option<String> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let mut end = text.len();
    for (i, c) in text.char_indices() {
        if c == '\n' {
            end = i;
            break;
        }
        if matches!(c, '.' | '!' | '?') {
            let next = text[i + c.len_utf8()..].chars().next();
            if next.is_none_or(char::is_whitespace) {
                end = i + c.len_utf8();
                break;
            }
        }
    }
    let sentence = text[..end].trim();
    const MAX: usize = 200;
    if sentence.chars().count() <= MAX {
        return Some(sentence.to_owned());
    }
    let cut: String = sentence.chars().take(MAX).collect();
    let cut = match cut.rfind(' ') {
        Some(i) if i > MAX / 2 => cut[..i].to_owned(),
        _ => cut,
    };
    Some(format!("{cut}…"))
}

#[cfg(test)]
mod tests {
    use super::first_sentence;

    #[test]
    fn first_sentence_stops_at_period_followed_by_space() {
        assert_eq!(first_sentence("Get the v1.2 weather. Also more.").unwrap(), "Get the v1.2 weather.");
        assert_eq!(first_sentence("One line\nsecond").unwrap(), "One line");
        assert!(first_sentence("   ").is_none());
        assert!(first_sentence(&"word ".repeat(100)).unwrap().ends_with('…'));
    }
}
