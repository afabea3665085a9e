"""Integrations with agent frameworks, each a small module importing only its framework:

- `toolsearch.integrations.langgraph`: `retrieve_tools` for langgraph-bigtool's
  `create_agent`, and `ToolsearchRetriever`, a LangChain `BaseRetriever` (extra `langgraph`);
- `toolsearch.integrations.openai_agents`: discovery as OpenAI Agents SDK function tools
  (extra `openai-agents`);
- `toolsearch.integrations.fastmcp`: `ToolsearchSearchTransform`, a FastMCP search transform
  ranking a server's tools with toolsearch (extra `fastmcp`).
"""
