"""Capture without OpenTelemetry: explicit tool calls, A2A task artifacts, ADK/kagent events.

Every way in turns its input into the same `collector.model.Batch` that OTLP extraction
produces (each call marked with its `source`), and the batch goes through the one writer.
Modules: `adk_events` (ADK session events, kagent rows), `explicit` (ArkSim-style explicit
calls of one turn), `a2a` (the tool-call-capture extension on A2A Tasks), `merge` (explicit
calls merged with the traced calls of the same turn, at read time), `body` (JSON bodies with
storable strings), `record` (an uninstrumented agent's calls as GenAI spans, through the
OpenTelemetry API). The REST routes are `collector.api.routes.capture`.
"""
