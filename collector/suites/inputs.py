"""Reading recorded conversations for `tooltrail check`: files → the Batches ingest would make.

Formats (detected from content; `--input-format` forces one):

- `otlp-protobuf`: one binary ExportTraceServiceRequest (what the OTLP/protobuf exporters send);
- `otlp-json`: one OTLP/JSON request;
- `otlp-jsonl`: JSON Lines of OTLP/JSON requests (the OpenTelemetry Collector `file` exporter);
- `openai`: OpenAI-format chat messages (a JSON list, `{"messages": [...]}`, or one message a
  line), as agentevals trajectories are written (`collector.suites.messages`);
- `adk-events`: Google ADK / kagent session events (`collector.capture.adk_events`).

Any of them may be gzipped. OTLP is decoded by the receivers' decoder and extracted by the
ingest path (`codec.decode_body`, `ingest.extract_safely`): the same Batches a server would
store, spans the decoder refuses included as rejected. `tooltrail extract` reads files through
`load` and `OTLP_REQUESTS` here, so it accepts exactly what `check` and the receivers accept.

A file whose records carry no conversation key is one conversation keyed by the file's stem.
"""

from __future__ import annotations

import contextlib
import gzip
import importlib
import io
import json
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from tooltrail.collector import heap
from tooltrail.collector.errors import InvalidPayload, PayloadTooLarge
from tooltrail.collector.extract import ExtractOptions
from tooltrail.collector.ingest import extract_safely, with_refused
from tooltrail.collector.model import KEY_FROM_ROOT, KEY_FROM_TRACE, Batch, RejectedSpan
from tooltrail.collector.receivers.codec import (
    JSON,
    PROTOBUF,
    decode_body,
    decode_json_traces_serialised,
)

if TYPE_CHECKING:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    Decoded = tuple[ExportTraceServiceRequest, list[RejectedSpan]]
    # and the request's wire bytes when the decoder holds them (`decode_serialised`)
    Serialised = tuple[ExportTraceServiceRequest, list[RejectedSpan], bytes | None]

FORMATS = ("otlp-protobuf", "otlp-json", "otlp-jsonl", "openai", "adk-events")
MAX_INPUT_BYTES = 4 << 30  # decompressed size of one input file
STEM_SUFFIXES = (".gz", ".json", ".jsonl", ".ndjson", ".pb", ".binpb", ".bin", ".otlp",
                 ".proto", ".events", ".messages")  # fmt: skip
ADK_MODULE = "tooltrail.collector.capture.adk_events"  # a pure reader → Batch, owned by capture


class InputError(ValueError):
    """An input that cannot be read; the message names the file and what is wrong."""


MAX_LISTED_REJECTIONS = 20  # rejected spans kept per input for the report


@dataclass(slots=True)
class Read:
    """What one input contributed (its batches are written as they are read, never kept), or
    why it could not be read; batches read before a fault in the middle of a file are kept."""

    source: str
    format: str | None
    error: str | None = None
    conversations: set[str] = field(default_factory=set)
    spans: int = 0
    rejected: list[RejectedSpan] = field(default_factory=list)

    def note(self, batch: Batch) -> Batch:
        self.conversations.update(t.conversation_key for t in batch.traces)
        self.spans += batch.span_count
        room = MAX_LISTED_REJECTIONS - len(self.rejected)
        if room > 0:
            self.rejected.extend(batch.rejected[:room])
        return batch


def expand(paths: Iterable[str]) -> Iterator[str]:
    """Inputs in order, directories recursively (sorted; hidden entries skipped), `-` as is.
    A directory with no input file in it raises InputError: a gate over no recording would
    pass whatever the agent did."""
    for raw in paths:
        path = Path(raw)
        if raw != "-" and path.is_dir():
            found = False
            for child in sorted(path.rglob("*")):
                rel = child.relative_to(path)
                if child.is_file() and not any(p.startswith(".") for p in rel.parts):
                    found = True
                    yield str(child)
            if not found:
                raise InputError(f"{raw}: directory holds no input file")
        else:
            yield raw


def stem(source: str) -> str:
    """The conversation key of a keyless file: its name without format suffixes."""
    if source == "-":
        return "stdin"
    name = Path(source).name
    while True:
        lowered = name.lower()
        cut = next((s for s in STEM_SUFFIXES if lowered.endswith(s) and len(name) > len(s)), None)
        if cut is None:
            return name
        name = name[: -len(cut)]


def read_input(source: str, options: ExtractOptions, forced: str | None = None,
               read: Read | None = None) -> Iterator[Batch]:
    """The batches of one input (a path or `-`), as they are read; what went wrong is kept
    in `read.error`, never raised. JSON Lines are read line by line (never whole)."""
    read = read if read is not None else Read(source, forced)
    opened = _open(source)
    try:
        stream = opened.__enter__()
    except OSError as exc:
        read.error = f"cannot read: {exc.strerror or exc}"
        return
    try:
        first = stream.readline()
        if forced in (None, "otlp-jsonl") and _is_otlp_line(first):
            read.format = "otlp-jsonl"
            count = 0
            for batch in keyed_by_stem(otlp_lines(_lines(first, stream), options),
                                       stem(source)):
                count += 1
                yield read.note(batch)
            if count == 1 and forced is None:
                read.format = "otlp-json"  # one request on one line: the same thing
            return
        data = first + stream.read(MAX_INPUT_BYTES + 1 - len(first))
        if len(data) > MAX_INPUT_BYTES:
            raise PayloadTooLarge(f"larger than {MAX_INPUT_BYTES} bytes")
        read.format = forced or detect(data)
        for batch in keyed_by_stem(READERS[read.format](data, stem(source), options),
                                   stem(source)):
            yield read.note(batch)
    except (InputError, InvalidPayload, PayloadTooLarge, ValueError, OSError, EOFError,
            zlib.error) as exc:
        read.error = str(exc)
    finally:
        opened.__exit__(None, None, None)


@contextlib.contextmanager
def _open(source: str) -> Iterator[BinaryIO]:
    """The input's bytes as a stream, gzip undone."""
    with contextlib.ExitStack() as stack:
        raw: BinaryIO = (io.BytesIO(sys.stdin.buffer.read()) if source == "-"
                         else stack.enter_context(Path(source).open("rb")))
        magic = raw.read(2)
        raw.seek(0)
        if magic == b"\x1f\x8b":
            yield stack.enter_context(cast(BinaryIO, gzip.GzipFile(fileobj=raw, mode="rb")))
        else:
            yield raw


def _is_otlp_line(line: bytes) -> bool:
    if not line.lstrip().startswith(b"{"):
        return False
    try:
        value = json.loads(line)
    except ValueError:
        return False
    return isinstance(value, dict) and ("resourceSpans" in value or "resource_spans" in value)


def _lines(first: bytes, stream: BinaryIO) -> Iterator[bytes]:
    yield first
    yield from stream


def decode_otlp(data: bytes, media: str) -> Decoded:
    """One OTLP trace request as a receiver decodes it: (request, spans refused with the
    reason); the rest of a request whose faults are inside some spans is kept."""
    with heap.paused():  # the body's parsed JSON lives until its request is built
        return decode_body(data, media, None, MAX_INPUT_BYTES)


def decode_serialised(data: bytes, media: str) -> Serialised:
    """`decode_otlp`, and the request's wire bytes when the decoder holds them: a protobuf
    body that parsed whole (`ingest.run_pipeline` says the same), or the bytes the OTLP/JSON
    fast path wrote (`codec.decode_json_traces_serialised`); extraction's compiled walk reads
    them instead of serialising the request again."""
    with heap.paused():  # the body's parsed JSON lives until its request is built
        if media == JSON:
            return decode_json_traces_serialised(data)
        request, refused = decode_body(data, media, None, MAX_INPUT_BYTES)
        return request, refused, data if not refused else None


def extracted(decoded: Decoded | Serialised, options: ExtractOptions) -> Batch:
    """The Batch ingest makes of a decoded request."""
    request, refused = decoded[0], decoded[1]
    raw = decoded[2] if len(decoded) > 2 else None
    return with_refused(extract_safely(request, options, raw), refused)


def otlp_line_requests(lines: Iterable[bytes],
                       decode: Callable[[bytes, str], Any] = decode_otlp) -> Iterator[Decoded]:
    """JSON Lines of OTLP/JSON requests, each decoded as a receiver would (`decode`:
    `decode_serialised` gives each request's wire bytes too)."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            decoded = decode(line, JSON)
        except InvalidPayload as exc:
            raise InputError(f"line {number}: {exc}") from exc
        yield decoded


def otlp_lines(lines: Iterable[bytes], options: ExtractOptions) -> Iterator[Batch]:
    """JSON Lines of OTLP/JSON requests, each decoded and extracted as a receiver would."""
    for decoded in otlp_line_requests(lines, decode_serialised):
        yield extracted(decoded, options)


def detect(data: bytes) -> str:
    """The format of an input from its first bytes (and first JSON value)."""
    head = data.lstrip()[:1]
    if head not in (b"{", b"["):
        if not data.strip():
            raise InputError("empty input")
        if data[:1] != PROTOBUF_FIRST_BYTE:
            raise InputError(f"{_looks_like(data)}, not an input tooltrail reads: {READS}")
        return "otlp-protobuf"
    first = _first_json(data)
    if _is_console_span(first):
        raise InputError(CONSOLE_EXPORTER)
    if isinstance(first, dict):
        if "resourceSpans" in first or "resource_spans" in first:
            return "otlp-json" if _single_json(data) else "otlp-jsonl"
        if "role" in first or isinstance(first.get("messages"), list):
            return "openai"
    elif isinstance(first, list) and all(isinstance(m, dict) and "role" in m for m in first[:5]):
        return "openai"
    if _adk() is not None and _adk().looks_like_events(data):
        return "adk-events"
    raise InputError("unknown input format: not OTLP (protobuf, JSON, JSON Lines), OpenAI "
                     "messages or ADK events; use --input-format")


def _first_json(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        pass
    line = data.lstrip().split(b"\n", 1)[0]
    try:
        return json.loads(line)
    except ValueError as exc:
        try:  # several pretty-printed values one after another (ConsoleSpanExporter)
            return json.JSONDecoder().raw_decode(data.decode("utf-8", "replace").lstrip())[0]
        except ValueError:
            raise InputError(f"not valid JSON or JSON Lines: {exc}") from exc


# Every serialised ExportTraceServiceRequest that holds anything starts with its field 1
# (`resource_spans`, length-delimited): the tag byte 0x0a.
PROTOBUF_FIRST_BYTE = b"\x0a"
READS = ("OTLP (protobuf, JSON, JSON Lines), OpenAI messages or ADK events; "
         "--input-format forces one")
CONSOLE_EXPORTER = (
    "this is ConsoleSpanExporter text, not OTLP: record with tooltrail's "
    "OTLPJsonLinesSpanExporter (`from tooltrail import OTLPJsonLinesSpanExporter`), or the "
    "OpenTelemetry Collector's `file` exporter (docs/suites.md, \"Recording spans to a file\")")


def _is_console_span(value: Any) -> bool:
    """The opentelemetry-sdk ConsoleSpanExporter's `Span.to_json()`: a span as a Python-SDK
    object, ids under `context`, not an OTLP request."""
    if not isinstance(value, dict):
        return False
    context = value.get("context")
    return isinstance(context, dict) and "span_id" in context and "name" in value


def _looks_like(data: bytes) -> str:
    """What a file that is none of the formats seems to be, for its error."""
    sample = data[:4096]
    try:
        text = sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(sample) - 4:  # not a character cut at the sample's end
            return f"binary data (first bytes {data[:8].hex(' ')})"
        text = sample[: exc.start].decode("utf-8")
    printable = sum(ch.isprintable() or ch in "\t\r\n" for ch in text)
    if text and printable < 0.95 * len(text):
        return f"binary data (first bytes {data[:8].hex(' ')})"
    first = text.strip().splitlines()[0] if text.strip() else ""
    shown = first[:60] + ("…" if len(first) > 60 else "")
    return f"plain text (first line: {shown!r})"


def _single_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


def _adk() -> Any:
    try:
        return importlib.import_module(ADK_MODULE)
    except ImportError:
        return None


# format → the decoded requests of a whole input (`load`)
OTLP_REQUESTS: dict[str, Callable[[bytes], Iterator[Decoded]]] = {
    "otlp-protobuf": lambda data: iter([decode_otlp(data, PROTOBUF)]),
    "otlp-json": lambda data: iter([decode_otlp(data, JSON)]),
    "otlp-jsonl": lambda data: otlp_line_requests(io.BytesIO(data)),
}


def load(source: str, forced: str | None = None) -> tuple[str, bytes]:
    """(format, bytes) of a whole input, gzip undone; raises InputError, PayloadTooLarge or
    OSError."""
    with _open(source) as stream:
        data = stream.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise PayloadTooLarge(f"{source}: larger than {MAX_INPUT_BYTES} bytes")
    return forced or detect(data), data


def read_otlp(data: bytes, _stem: str, options: ExtractOptions, fmt: str) -> Iterator[Batch]:
    if fmt == "otlp-jsonl":
        yield from otlp_lines(io.BytesIO(data), options)
        return
    yield extracted(decode_serialised(data, PROTOBUF if fmt == "otlp-protobuf" else JSON),
                    options)


def read_openai(data: bytes, key: str, options: ExtractOptions) -> Iterator[Batch]:
    from tooltrail.collector.suites.messages import batch_from_messages, load_messages

    yield batch_from_messages(load_messages(data), key, options)


def read_adk_events(data: bytes, key: str, options: ExtractOptions) -> Iterator[Batch]:
    adk = _adk()
    if adk is None:
        raise InputError(f"ADK events need {ADK_MODULE}, which this build does not have")
    try:
        batch = adk.extract_events(data, options=options)
    except ValueError as first:  # events without a session id: the file is the conversation
        try:
            batch = adk.extract_events(data, conversation=key, options=options)
        except ValueError:
            raise InputError(str(first)) from first
    yield batch


READERS: dict[str, Callable[[bytes, str, ExtractOptions], Iterator[Batch]]] = {
    **{fmt: partial(read_otlp, fmt=fmt) for fmt in OTLP_REQUESTS},
    "openai": read_openai,
    "adk-events": read_adk_events,
}


def keyed_by_stem(batches: Iterable[Batch], key: str) -> Iterator[Batch]:
    """When no record of the file carries a conversation key, every trace is one conversation
    keyed `key`; otherwise the batches are left as extraction made them. Batches are held only
    until the first key is seen."""
    held: list[Batch] = []
    keyed = False
    for batch in batches:
        if keyed:
            yield batch
        elif any(t.key_rank > KEY_FROM_TRACE for t in batch.traces):
            keyed = True
            yield from held
            held.clear()
            yield batch
        else:
            held.append(batch)
    for b in held:
        yield replace(b, traces=tuple(replace(t, conversation_key=key, key_rank=KEY_FROM_ROOT)
                                      for t in b.traces))
