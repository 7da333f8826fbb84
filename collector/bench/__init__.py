"""Benchmarks: `tooltrail bench ingest` (see collector.bench.ingest)."""
