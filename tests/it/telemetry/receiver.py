"""An OTLP/HTTP trace receiver for the tests (tests/it/telemetry/): decodes
each POST to /v1/traces with the official opentelemetry-proto package, as
protobuf or as OTLP/JSON (ids in hex, as the OTLP spec has them), and
appends one JSON line per span to the file named by its first argument.
A body the package refuses is answered 400 and written down as an error.

Usage: python receiver.py OUT [ok|fast|hang|fail]. Prints its port first.
`fast` answers before decoding, as a collector that queues does (for
the benches' figures).
"""

import base64
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

OUT = sys.argv[1]
MODE = sys.argv[2] if len(sys.argv) > 2 else "ok"
LOCK = threading.Lock()


def hex_ids_to_base64(doc):
    """OTLP/JSON writes ids in hex; protobuf's JSON mapping wants base64."""
    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()


def value(v):
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


def write(lines):
    with LOCK, open(OUT, "a") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        if MODE == "hang":
            time.sleep(60)
            return
        if MODE == "fail":
            self.send_response(503)
            self.end_headers()
            return
        kind = self.headers.get("content-type", "")
        if MODE == "fast":
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()
            self.wfile.flush()
        req = trace_service_pb2.ExportTraceServiceRequest()
        try:
            if kind == "application/json":
                doc = json.loads(body)
                hex_ids_to_base64(doc)
                json_format.ParseDict(doc, req)
            elif kind == "application/x-protobuf":
                req.ParseFromString(body)
            else:
                raise ValueError("content-type " + kind)
        except Exception as e:  # noqa: BLE001 - any refusal is the test's failure
            write([{"error": str(e), "content_type": kind}])
            if MODE != "fast":
                self.send_response(400)
                self.end_headers()
            return
        lines = []
        for rs in req.resource_spans:
            resource = {a.key: value(a.value) for a in rs.resource.attributes}
            for ss in rs.scope_spans:
                for s in ss.spans:
                    lines.append({
                        "content_type": kind,
                        "path": self.path,
                        "auth": self.headers.get("authorization"),
                        "resource": resource,
                        "scope": ss.scope.name,
                        "trace_id": s.trace_id.hex(),
                        "span_id": s.span_id.hex(),
                        "parent": s.parent_span_id.hex(),
                        "name": s.name,
                        "kind": s.kind,
                        "start": s.start_time_unix_nano,
                        "end": s.end_time_unix_nano,
                        "attrs": {a.key: value(a.value) for a in s.attributes},
                        "status": s.status.code,
                        "message": s.status.message,
                        "flags": s.flags,
                    })
        write(lines)
        if MODE == "fast":
            return
        out = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
