//! What a caller may see, for a host walking the catalogue itself (a tool set naming its tools,
//! unfolding a category): read from what is kept for the caller's scope set, so that walking
//! it takes no longer for the tools hidden from the caller; and scope sets worked out ahead.

use std::sync::Arc;

use toolsearch_catalog::Tool;

use crate::engine::scopes_of;
use crate::principal::Principal;
use crate::ranker::Ranker;

impl Ranker {
    /// Works out now what callers holding each of `callers`' scope sets may see, and keeps it
    /// as their first request would have (trusted callers need nothing). That first request
    /// would pay a pass over the tools that require scopes and a cut of the catalogue's lists,
    /// in time that grows with the tools hidden from it: prepared, none of their requests does.
    /// Prepared, their views also keep every word's postings inside them (one walk of every
    /// posting list), so that no search walks a word's whole list the first time it reads the
    /// word. At most 64 sets are kept, the last given last evicted. A restricted caller given
    /// also prepares, the first time, the scope sets no host names ([`Ranker::prepare_for_unnamed`]).
    pub fn prepare_for<'p>(&self, callers: impl IntoIterator<Item = &'p Principal>) {
        let paths = self.paths();
        let sets: Vec<Vec<String>> = callers.into_iter().filter_map(scopes_of).collect();
        if !sets.is_empty() {
            paths.scoped_unnamed();
        }
        for scopes in sets {
            paths.scoped_ahead(&scopes);
        }
    }

    /// Works out now, once per engine, what callers holding the scope sets the catalogue's
    /// tools tell apart may see, as [`Ranker::prepare_for`] does for callers named: for a
    /// server taking scope sets it cannot know ahead (an identity provider's tokens). Scopes
    /// no tool requires make no set of their own (a caller's view is kept by the scopes in it
    /// that some tool requires), so this covers every caller when the tools require four
    /// scopes or fewer (16 sets); past that, the sets of fewest scopes, 16 at most, and none
    /// once the kept sets hold 32 MiB.
    pub fn prepare_for_unnamed(&self) {
        self.paths().scoped_unnamed();
    }

    /// Whether what `who` may see is worked out whole: trusted, or kept for its scope set as
    /// [`Ranker::prepare_for`] keeps it. A scope set first met at a request is kept without its
    /// views' words (a request does not pay the walk of every posting list): a server prepares
    /// such a caller behind its request.
    pub fn is_prepared_for(&self, who: &Principal) -> bool {
        let paths = self.paths();
        scopes_of(who).is_none_or(|s| paths.kept_whole(&s))
    }

    /// One caller for each scope set this engine keeps what it may see for, least recently
    /// used first, each followed by the callers it was met with that hold scopes no tool
    /// requires (eight at most a set): what the next engine of the catalogue is prepared for
    /// ([`Ranker::prepare_for`]), so that a rebuild makes no caller's next request pay again,
    /// not even one whose other scope a tool of the rebuilt catalogue now requires.
    pub fn kept_callers(&self) -> Vec<Principal> {
        self.paths().kept_scope_sets().into_iter().map(Principal::with_scopes).collect()
    }

    /// Whether what is kept for `who`'s scope set holds every word's postings inside its view
    /// of the tools, so that none of its searches walks a word's whole list (hidden tools
    /// included) the first time it reads the word: false for callers that see every tool (they
    /// have nothing to filter) and past the bound on what a view keeps.
    pub fn keeps_every_word_for(&self, who: &Principal) -> bool {
        scopes_of(who).is_some_and(|s| self.paths().scoped(&s).tool_view.lexicon_bytes() > 0)
    }

    /// The tools `who` may see, with their ordinals, in catalogue order.
    pub fn tools_for(&self, who: &Principal) -> impl Iterator<Item = (u32, &Tool)> + '_ {
        let tools = &self.catalog().tools;
        let allowed: Option<Arc<Vec<u32>>> = scopes_of(who).and_then(|s| self.paths().scoped(&s).tools.clone());
        let count = allowed.as_ref().map_or(tools.len(), |a| a.len());
        (0..count).map(move |i| {
            let o = allowed.as_ref().map_or(i as u32, |a| a[i]);
            (o, &tools[o as usize])
        })
    }

    /// The tools `who` may see directly at `path`, in catalogue order.
    pub fn tools_at_for(&self, who: &Principal, path: &[String]) -> Vec<&Tool> {
        let paths = self.paths();
        let scoped = scopes_of(who).map(|s| paths.scoped(&s));
        paths.tools_at_in(path, scoped.as_deref()).into_iter().map(|o| &self.catalog().tools[o as usize]).collect()
    }

    /// Whether the category at `path` holds a tool `who` may see, at or below it.
    pub fn holds_tool_for(&self, who: &Principal, path: &[String]) -> bool {
        let paths = self.paths();
        match (scopes_of(who), paths.node_ord(path)) {
            (None, _) => !paths.tools_under(path).is_empty(),
            (Some(s), Some(n)) => paths.scoped(&s).nodes[n as usize] && !paths.tools_under(path).is_empty(),
            (Some(s), None) => {
                let scoped = paths.scoped(&s);
                paths.tools_under(path).iter().any(|&o| scoped.tool_view.contains(o))
            }
        }
    }
}
