"""Scrapes an OpenMetrics endpoint with the Prometheus client's own parser (prometheus_client,
from PyPI) and prints every sample as JSON: {"samples": [[name, labels, value], ...]}.
A body the parser refuses fails the script.

    python scrape.py URL [BEARER_TOKEN]
"""

import json
import sys
import urllib.request

from prometheus_client.openmetrics.parser import text_string_to_metric_families

request = urllib.request.Request(sys.argv[1])
if len(sys.argv) > 2:
    request.add_header("Authorization", f"Bearer {sys.argv[2]}")
with urllib.request.urlopen(request, timeout=30) as answer:
    content_type = answer.headers.get("Content-Type", "")
    body = answer.read().decode()
samples = []
for family in text_string_to_metric_families(body):
    for s in family.samples:
        samples.append([s.name, dict(s.labels), s.value])
print(json.dumps({"content_type": content_type, "samples": samples}))
