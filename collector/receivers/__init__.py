"""OTLP receivers: decode only, then hand the request to the shared ingest path."""
