"""The REST API (FastAPI) and the app that wires the service together."""
