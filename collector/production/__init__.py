"""Production signals: what every turn of every agent version shows with no expectation.

`counts` folds turns into additive per-bucket counts (so buckets are kept by adding and
subtracting each turn's contribution, never by rescanning); `drift` compares two sets of counts
(two versions, or a window and its baseline) with a test per measure; `export` sends verdicts
back into OpenTelemetry as `gen_ai.evaluation.result` events.
"""
