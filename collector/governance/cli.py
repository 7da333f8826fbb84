"""`tooltrail redact-hash`: the value a `hash` redaction rule stores, for writing expectations."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tooltrail.collector.cli import Registry
    from tooltrail.collector.config import Settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("value", help="the value as it arrives (a string, or JSON with --json)")
    parser.add_argument("--json", action="store_true",
                        help="VALUE is JSON (a number, object, …), hashed as its canonical JSON")


def cmd_redact_hash(settings: Settings, args: argparse.Namespace) -> int:
    from tooltrail.collector.governance.redaction import hash_value

    if not settings.redaction_secret:
        print("tooltrail redact-hash: no secret: set TOOLTRAIL_REDACTION_SECRET (or "
              "redaction_secret in --config FILE) to the service's", file=sys.stderr)
        return 2
    try:
        value = json.loads(args.value) if args.json else args.value
    except ValueError as exc:
        print(f"tooltrail redact-hash: not JSON: {exc}", file=sys.stderr)
        return 2
    print(hash_value(settings.redaction_secret.encode(), value))
    return 0


def register(registry: Registry) -> None:
    from tooltrail.collector.cli import Command

    registry.add(Command(
        "redact-hash", "print the keyed hash a `hash` redaction rule stores for VALUE",
        cmd_redact_hash, ("log_level",), add_arguments,
    ))
