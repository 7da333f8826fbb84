"""Data governance: redaction at ingest (`redaction`) and retention and deletion of
conversations (`retention`)."""
