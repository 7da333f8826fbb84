"""Print a captured spans.otlp.pb: span tree, key attributes and events.

usage: python dump.py tests/captures/<name>/spans.otlp.pb [--all]
Needs only opentelemetry-proto (any capture venv has it).
"""
import sys

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

KEYS = (
    "gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.tool.call.id", "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result", "gen_ai.conversation.id", "session.id", "openinference.span.kind",
    "tool.name", "input.value", "output.value", "error.type", "gcp.vertex.agent.invocation_id",
    "gcp.vertex.agent.session_id", "gcp.vertex.agent.tool_call_args", "gcp.vertex.agent.tool_response",
    "gen_ai.agent.name", "tool_arguments", "tool_response", "logfire.msg",
)


def val(v):
    k = v.WhichOneof("value")
    if k == "array_value":
        return [val(x) for x in v.array_value.values]
    if k == "kvlist_value":
        return {x.key: val(x.value) for x in v.kvlist_value.values}
    return getattr(v, k) if k else None


def main():
    req = ExportTraceServiceRequest.FromString(open(sys.argv[1], "rb").read())
    show_all = "--all" in sys.argv
    spans = [s for rs in req.resource_spans for ss in rs.scope_spans for s in ss.spans]
    by_parent = {}
    for s in spans:
        by_parent.setdefault(s.parent_span_id, []).append(s)
    ids = {s.span_id for s in spans}

    def show(s, depth):
        ind = "  " * depth
        st = {0: "", 1: " [OK]", 2: " [ERROR " + s.status.message[:60] + "]"}[s.status.code]
        print(f"{ind}- {s.name} trace={s.trace_id.hex()[:8]} span={s.span_id.hex()[:8]}{st}")
        for a in s.attributes:
            if show_all or a.key in KEYS:
                print(f"{ind}    {a.key} = {str(val(a.value))[:160]!s}")
        for e in s.events:
            print(f"{ind}    event {e.name}: " + ", ".join(f"{a.key}={str(val(a.value))[:120]}" for a in e.attributes))
        for c in sorted(by_parent.get(s.span_id, []), key=lambda x: x.start_time_unix_nano):
            show(c, depth + 1)

    roots = sorted([s for s in spans if s.parent_span_id not in ids], key=lambda x: x.start_time_unix_nano)
    for r in roots:
        show(r, 0)
    print(f"{len(spans)} spans, {len(req.SerializeToString())} bytes")


if __name__ == "__main__":
    main()
