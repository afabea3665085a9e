"""An attacker's forged redirect at the end of an OAuth login: an HTTP agent that signs in as
LOGIN at oidc-provider's own login and consent pages from ADDRESS, and alters one parameter of
the redirect back (to the gateway's loopback listener) as it follows it. Prints the last page's
status and text as JSON. (A person's sign-in, unaltered, is played in Chromium: chromium.py.)

    python forged_redirect.py --tamper-state|--tamper-iss ADDRESS LOGIN

--tamper-state changes the `state` of the final redirect, as an attacker's forged redirect
would carry; --tamper-iss its `iss` (RFC 9207), as a mix-up attack's would.
"""

import json
import re
import sys
from urllib.parse import parse_qs, urlencode, urljoin, urlparse, urlunparse

import httpx2

TAMPER = sys.argv[1][len("--tamper-"):]
ADDRESS, LOGIN = sys.argv[2], sys.argv[3]
ISSUER = "{0.scheme}://{0.netloc}".format(urlparse(ADDRESS))

with httpx2.Client(follow_redirects=False, timeout=30) as browser:
    url, method, form = ADDRESS, "GET", None
    for _ in range(16):
        response = browser.request(method, url, data=form)
        location = response.headers.get("location")
        if location:
            location = urljoin(url, location)
            if not location.startswith(ISSUER):
                parts = urlparse(location)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                query[TAMPER] = "forged-" + query.get(TAMPER, "")
                location = urlunparse(parts._replace(query=urlencode(query)))
            url, method, form = location, "GET", None
            continue
        page = response.text
        found = re.search(r'<form[^>]*action="([^"]+)"[^>]*>(.*?)</form>', page, re.S) if url.startswith(ISSUER) else None
        if not found:
            print(json.dumps({"status": response.status_code, "text": page[:500], "url": url.split("?")[0]}))
            sys.exit(0)
        url, method = urljoin(url, found.group(1)), "POST"
        # The form's hidden fields (a login's prompt), and a person's answers: any login and password.
        form = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', found.group(2)))
        if 'name="login"' in found.group(2):
            form.update({"login": LOGIN, "password": "any"})
    print(json.dumps({"status": 0, "text": "too many steps"}))
