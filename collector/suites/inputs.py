"""Reading recorded conversations for `tooltrail check`: files → the Batches ingest would make.

Formats (detected from content; `--input-format` forces one):

- `otlp-protobuf`: one binary ExportTraceServiceRequest (what the OTLP/protobuf exporters send);
- `otlp-json`: one OTLP/JSON request;
- `otlp-jsonl`: JSON Lines of OTLP/JSON requests (the OpenTelemetry Collector `file` exporter);
- `openai`: OpenAI-format chat messages (a JSON list, `{"messages": [...]}`, or one message a
  line), as agentevals trajectories are written (`collector.suites.messages`);
- `adk-events`: Google ADK / kagent session events (`collector.capture.adk_events`).

Any of them may be gzipped. OTLP is decoded by the receivers' decoder and extracted by the
ingest path (`codec.decode_request`, `ingest.extract_safely`): the same Batches a server
would store. A file whose records carry no conversation key is one conversation keyed by the
file's stem.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from collector.errors import InvalidPayload, PayloadTooLarge
from collector.extract import ExtractOptions
from collector.ingest import extract_safely
from collector.model import KEY_FROM_ROOT, KEY_FROM_TRACE, Batch
from collector.receivers.codec import JSON, PROTOBUF, decode_request, decompress

FORMATS = ("otlp-protobuf", "otlp-json", "otlp-jsonl", "openai", "adk-events")
MAX_INPUT_BYTES = 4 << 30  # decompressed size of one input file
STEM_SUFFIXES = (".gz", ".json", ".jsonl", ".ndjson", ".pb", ".binpb", ".bin", ".otlp",
                 ".proto", ".events", ".messages")  # fmt: skip
ADK_MODULE = "collector.capture.adk_events"  # a pure reader → Batch, owned by capture


class InputError(ValueError):
    """An input that cannot be read; the message names the file and what is wrong."""


@dataclass(frozen=True, slots=True)
class Read:
    """One input file: its batches, or why it could not be read."""

    source: str
    format: str | None
    batches: tuple[Batch, ...] = ()
    error: str | None = None


def expand(paths: Iterable[str]) -> Iterator[str]:
    """Inputs in order, directories recursively (sorted; hidden entries skipped), `-` as is."""
    for raw in paths:
        path = Path(raw)
        if raw != "-" and path.is_dir():
            for child in sorted(path.rglob("*")):
                rel = child.relative_to(path)
                if child.is_file() and not any(p.startswith(".") for p in rel.parts):
                    yield str(child)
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


def read_input(source: str, options: ExtractOptions, forced: str | None = None) -> Read:
    """Read one input (a path or `-`); never raises for bad content: the error is kept."""
    try:
        data = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    except OSError as exc:
        return Read(source, forced, error=f"cannot read: {exc.strerror or exc}")
    try:
        if data[:2] == b"\x1f\x8b":
            data = decompress(data, "gzip", MAX_INPUT_BYTES)
        kind = forced or detect(data)
        batches = READERS[kind](data, stem(source), options)
    except (InputError, InvalidPayload, PayloadTooLarge, ValueError) as exc:
        return Read(source, forced, error=str(exc))
    return Read(source, kind, tuple(keyed_by_stem(batches, stem(source))))


def detect(data: bytes) -> str:
    """The format of an input from its first bytes (and first JSON value)."""
    head = data.lstrip()[:1]
    if head not in (b"{", b"["):
        if not data.strip():
            raise InputError("empty input")
        return "otlp-protobuf"
    first = _first_json(data)
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
        raise InputError(f"not valid JSON or JSON Lines: {exc}") from exc


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


def read_otlp_protobuf(data: bytes, _stem: str, options: ExtractOptions) -> list[Batch]:
    return [extract_safely(decode_request(data, PROTOBUF), options)]


def read_otlp_json(data: bytes, _stem: str, options: ExtractOptions) -> list[Batch]:
    return [extract_safely(decode_request(data, JSON), options)]


def read_otlp_jsonl(data: bytes, _stem: str, options: ExtractOptions) -> list[Batch]:
    batches = []
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            batches.append(extract_safely(decode_request(line, JSON), options))
        except InvalidPayload as exc:
            raise InputError(f"line {number}: {exc}") from exc
    return batches


def read_openai(data: bytes, key: str, options: ExtractOptions) -> list[Batch]:
    from collector.suites.messages import batch_from_messages, load_messages

    return [batch_from_messages(load_messages(data), key, options)]


def read_adk_events(data: bytes, key: str, options: ExtractOptions) -> list[Batch]:
    adk = _adk()
    if adk is None:
        raise InputError(f"ADK events need {ADK_MODULE}, which this build does not have")
    try:
        return [adk.extract_events(data, options=options)]
    except ValueError as first:  # events without a session id: the file is the conversation
        try:
            return [adk.extract_events(data, conversation=key, options=options)]
        except ValueError:
            raise InputError(str(first)) from first


READERS: dict[str, Callable[[bytes, str, ExtractOptions], list[Batch]]] = {
    "otlp-protobuf": read_otlp_protobuf,
    "otlp-json": read_otlp_json,
    "otlp-jsonl": read_otlp_jsonl,
    "openai": read_openai,
    "adk-events": read_adk_events,
}


def keyed_by_stem(batches: list[Batch], key: str) -> list[Batch]:
    """When no record of the file carries a conversation key, every trace is one conversation
    keyed `key`; otherwise the batches are left as extraction made them."""
    if any(t.key_rank > KEY_FROM_TRACE for b in batches for t in b.traces):
        return batches
    return [
        replace(b, traces=tuple(replace(t, conversation_key=key, key_rank=KEY_FROM_ROOT)
                                for t in b.traces))
        for b in batches
    ]
