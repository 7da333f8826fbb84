"""tooltrail collector: OTLP receivers, extraction, store, worker and REST API."""

__version__ = "0.1.0"
