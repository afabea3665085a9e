"""An OAuth-protected MCP server built with the official Python SDK's server auth, over
Streamable HTTP at /mcp (or, given `sse`, MCP 2024-11-05's HTTP+SSE transport at /sse): the SDK's bearer middleware answers 401 with `WWW-Authenticate: Bearer
resource_metadata=...` and serves the RFC 9728 metadata naming ISSUER; tokens are checked
here with PyJWT against the issuer's published keys, for this server's URL as audience.

    python protected_server.py PORT ISSUER [sse]

Tools: `whoami` (the subject and scopes of the token that called) and `counter` (how many
calls each subject made). Logs each refused token to stderr.
"""

import sys

import jwt
import uvicorn
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

PORT, ISSUER = int(sys.argv[1]), sys.argv[2]
SSE = sys.argv[3:] == ["sse"]
URL = f"http://127.0.0.1:{PORT}/{'sse' if SSE else 'mcp'}"
KEYS = jwt.PyJWKClient(f"{ISSUER}/jwks")
CALLS: dict = {}


class Verifier:
    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            key = KEYS.get_signing_key_from_jwt(token)
            claims = jwt.decode(token, key.key, algorithms=["RS256"], audience=URL, issuer=ISSUER)
        except Exception as e:  # noqa: BLE001 - any failure is a refusal
            print(f"refused: {type(e).__name__}", file=sys.stderr, flush=True)
            return None
        return AccessToken(token=token, client_id=claims.get("client_id", ""), scopes=claims.get("scope", "").split(),
                           expires_at=claims.get("exp"), resource=URL, subject=claims.get("sub"))


server = MCPServer(
    "protected",
    instructions="A service behind OAuth.",
    token_verifier=Verifier(),
    auth=AuthSettings(issuer_url=ISSUER, resource_server_url=URL, required_scopes=[], validate_token_resource=True),
)


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def whoami() -> dict:
    """Tell who the caller is: the subject and scopes of its access token."""
    token = get_access_token()
    subject = token.subject if token else None
    CALLS[subject] = CALLS.get(subject, 0) + 1
    return {"subject": subject, "scopes": token.scopes if token else [], "calls": CALLS[subject]}


if __name__ == "__main__":
    app = server.sse_app() if SSE else server.streamable_http_app()
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
