"""The read-only web view under /ui/ and the self-contained HTML report: server-rendered
Jinja2 templates over the same store queries and REST shapes the API serves."""
