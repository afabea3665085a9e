"""The official Python MCP SDK's OAuth client (`OAuthClientProvider`) against an
OAuth-protected gateway: the whole dance, nothing of it written here. The SDK reads the
gateway's 401 challenge, its RFC 9728 metadata, the authorization server's metadata,
registers itself (RFC 7591), and runs the authorization-code grant with PKCE and a `resource`;
this script only plays the user at oidc-provider's login and consent pages, as a browser would.

    python sdk_client.py URL LOGIN STEPS

The scopes asked for are the SDK's choice: what the gateway's challenge or metadata names.

STEPS as tests/mcp/client.py's `calls` ("call" steps and discovery tools). Prints one JSON
object: `results` ({text, is_error} per step) and `dance` (what the SDK asked for).
"""

import json
import os
import re
import sys
from urllib.parse import parse_qs, urljoin, urlparse

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mcp"))
from client_steps import call, text_of  # noqa: E402

URL, LOGIN, STEPS = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
REDIRECT = "http://127.0.0.1:9/callback"  # never listened on: the redirect is read, not followed
DANCE = {"authorization_urls": [], "registered": False}


class Memory:
    def __init__(self):
        self.tokens, self.client = None, None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, info):
        DANCE["registered"] = True
        self.client = info


RESULT = {}


async def play_the_user(authorization_url):
    """Signs in as LOGIN and consents, at the provider's own pages, until it redirects to REDIRECT."""
    DANCE["authorization_urls"].append(authorization_url)
    async with httpx2.AsyncClient(follow_redirects=False, timeout=30) as browser:
        url, method, form = authorization_url, "GET", None
        for _ in range(12):
            response = await browser.request(method, url, data=form)
            location = response.headers.get("location")
            if location:
                location = urljoin(url, location)
                if location.startswith(REDIRECT):
                    query = parse_qs(urlparse(location).query)
                    RESULT.update({k: v[0] for k, v in query.items()})
                    return
                url, method, form = location, "GET", None
                continue
            page = response.text
            action = re.search(r'<form[^>]*action="([^"]+)"', page)
            if not action:
                raise RuntimeError(f"no form and no redirect at {url}: {response.status_code} {page[:300]}")
            url, method = urljoin(url, action.group(1)), "POST"
            form = {"prompt": "login", "login": LOGIN, "password": "any"} if 'value="login"' in page else {"prompt": "consent"}
        raise RuntimeError("the provider never redirected back")


async def callback():
    if "code" not in RESULT:
        raise RuntimeError(f"no code in the redirect: {RESULT}")
    return AuthorizationCodeResult(code=RESULT["code"], state=RESULT.get("state"), iss=RESULT.get("iss"))


async def main():
    auth = OAuthClientProvider(
        server_url=URL,
        client_metadata=OAuthClientMetadata(
            client_name="toolsearch oauth test",
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        storage=Memory(),
        redirect_handler=play_the_user,
        callback_handler=callback,
    )
    results = []
    async with httpx2.AsyncClient(auth=auth, timeout=60) as http:
        async with streamable_http_client(URL, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                for step in STEPS:
                    if step[0] == "call":
                        result = await call(session, step[1], step[2])
                    else:
                        result = await session.call_tool(step[0], step[1])
                    results.append({"text": text_of(result), "is_error": bool(result.is_error)})
    print(json.dumps({"results": results, "dance": DANCE}))


anyio.run(main)
