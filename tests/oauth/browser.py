"""Plays a person's browser through an OAuth login at oidc-provider's own login and consent
pages: opens ADDRESS, signs in as LOGIN, consents, and follows the redirect to wherever it
leads (the gateway's loopback listener). Prints the last page's status and text as JSON.

    python browser.py ADDRESS LOGIN [--tamper-state] [--until PREFIX]

--tamper-state changes the `state` of the final redirect, as an attacker's forged redirect
would carry; --tamper-iss its `iss` (RFC 9207), as a mix-up attack's would. --until PREFIX
stops at the first redirect to an address starting with PREFIX and prints {"redirect": it}
instead of following it (a page that redeems the code itself, in a real browser).
"""

import json
import re
import sys
from urllib.parse import parse_qs, urlencode, urljoin, urlparse, urlunparse

import httpx2

ADDRESS, LOGIN = sys.argv[1], sys.argv[2]
TAMPER = next((a[len("--tamper-"):] for a in sys.argv[3:] if a.startswith("--tamper-")), None)
UNTIL = sys.argv[sys.argv.index("--until") + 1] if "--until" in sys.argv else None
ISSUER = "{0.scheme}://{0.netloc}".format(urlparse(ADDRESS))

with httpx2.Client(follow_redirects=False, timeout=30) as browser:
    url, method, form = ADDRESS, "GET", None
    for _ in range(16):
        response = browser.request(method, url, data=form)
        location = response.headers.get("location")
        if location:
            location = urljoin(url, location)
            if UNTIL and location.startswith(UNTIL):
                print(json.dumps({"redirect": location}))
                sys.exit(0)
            if TAMPER and not location.startswith(ISSUER):
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
        # The form's hidden fields (a device page's xsrf and user code, a login's prompt), and a
        # person's answers: any login and password.
        form = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', found.group(2)))
        typed = re.search(r'value="([^"]*)"[^>]*name="user_code"', found.group(2))
        if typed:  # a device page with the code filled in from the address
            form["user_code"] = typed.group(1)
        if 'name="login"' in found.group(2):
            form.update({"login": LOGIN, "password": "any"})
    print(json.dumps({"status": 0, "text": "too many steps"}))
