"""An OTLP/HTTP trace receiver for the trace tests: decodes each POST to /v1/traces with the
OpenTelemetry project's own protobuf definitions (`opentelemetry-proto` from PyPI) and appends
one JSON line per span to OUT: name, kind, trace and span ids (hex), parent span id, the
service name and the attributes.

    python otlp_receiver.py PORT OUT
"""

import http.server
import json
import sys

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

PORT, OUT = int(sys.argv[1]), sys.argv[2]


def value(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        with open(OUT, "a") as out:
            for rs in request.resource_spans:
                service = {a.key: value(a.value) for a in rs.resource.attributes}.get("service.name")
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        out.write(json.dumps({
                            "name": s.name,
                            "kind": s.kind,
                            "trace_id": s.trace_id.hex(),
                            "span_id": s.span_id.hex(),
                            "parent_span_id": s.parent_span_id.hex(),
                            "service": service,
                            "status": s.status.code,
                            "attributes": {a.key: value(a.value) for a in s.attributes},
                        }) + "\n")
        data = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


print("ready", flush=True)
http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
