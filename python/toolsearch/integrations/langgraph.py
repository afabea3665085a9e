"""LangGraph and LangChain: tool retrieval for `langgraph-bigtool`, and a LangChain retriever.

    from langgraph_bigtool import create_agent
    from toolsearch.integrations.langgraph import retrieve_tools
    builder = create_agent(llm, registry, retrieve_tools_function=retrieve_tools(index))

The index's tool ids must be the registry's keys (build the index from the same tools).
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from .. import ErrorCode, Index, ProtocolError


def _search_ids(index: Index, query: str, limit: int, scopes: Optional[Sequence[str]]) -> List[str]:
    try:
        return [p.tool_id for p in index.search(query, limit=limit, scopes=scopes).results]
    except ProtocolError as e:
        if e.code is ErrorCode.NO_MATCH_IN_CATEGORY:
            return []
        raise


def retrieve_tools(index: Index, *, limit: int = 5, scopes: Optional[Sequence[str]] = None) -> Callable[[str], List[str]]:
    """A `retrieve_tools_function` for langgraph-bigtool's `create_agent`: query -> tool ids."""

    def retrieve_tools(query: str) -> List[str]:
        """Search the tool catalogue with a short description of what you need to do; the
        tools found become available to call."""
        return _search_ids(index, query, limit, scopes)

    return retrieve_tools


class ToolsearchRetriever(BaseRetriever):
    """A LangChain retriever over a toolsearch index: one `Document` per tool found, its
    summary as content and `tool_id`, `path`, `tags`, `confidence` as metadata."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: Any
    """The `toolsearch.Index` to search."""
    k: int = 5
    """Results per query."""
    scopes: Optional[List[str]] = None
    """Search as a caller holding only these scopes (`None`: trusted)."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> List[Document]:
        try:
            page = self.index.search(query, limit=self.k, scopes=self.scopes)
        except ProtocolError as e:
            if e.code is ErrorCode.NO_MATCH_IN_CATEGORY:
                return []
            raise
        return [
            Document(
                page_content=p.summary,
                metadata={"tool_id": p.tool_id, "path": p.path, "tags": p.tags, "confidence": p.confidence},
            )
            for p in page.results
        ]
