"""tooltrail collector: OTLP receivers, extraction, store, worker and REST API."""

from tooltrail import __version__ as __version__  # one version: tooltrail.__version__
