"""Production signals per agent version, and drift between versions or windows."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from tooltrail.collector.api.deps import Project, ReadConn, State, TimeParam, parse_time, rfc3339
from tooltrail.collector.api.errors import ApiError
from tooltrail.collector.api.schemas import ErrorBody
from tooltrail.collector.production.counts import Counts
from tooltrail.collector.production.drift import Measure, Thresholds, drift
from tooltrail.collector.store import production

router = APIRouter(
    prefix="/api/v1",
    tags=["signals"],
    responses={400: {"model": ErrorBody}},
)

WIDTHS = {"1h": production.HOUR, "1d": production.DAY}


class Figures(BaseModel):
    """What the turns of one group show, with no expectation."""

    turns: int = Field(description="logical turns (explicit and traced sides of a turn are one)")
    zero_tool_turns: int = Field(description="turns with no tool call at all")
    zero_tool_rate: float = Field(description="zero_tool_turns / turns")
    calls: int = Field(description="calls, each once (requested and executed sides paired)")
    calls_per_turn: float = Field(description="mean calls per turn")
    calls_per_turn_histogram: dict[str, int] = Field(
        description="turns by their number of calls: \"0\" … \"9\", then \"10+\"")
    tool_calls: dict[str, int] = Field(description="calls per tool name")
    tool_mix: dict[str, float] = Field(description="share of calls per tool name")
    failed_rate: float = Field(description="share of calls executed that ended in error")
    unexecuted_rate: float = Field(
        description="share of calls the model requested that never executed")
    pending_rate: float = Field(description="share of calls waiting for an approval")

    @classmethod
    def of(cls, c: Counts) -> Figures:
        return cls(
            turns=c.turns, zero_tool_turns=c.zero_turns, zero_tool_rate=c.zero_tool_rate,
            calls=c.calls, calls_per_turn=c.calls_per_turn,
            calls_per_turn_histogram=dict(sorted(c.histogram.items(), key=_bin_order)),
            tool_calls=dict(sorted(c.tools.items())), tool_mix=c.tool_mix,
            failed_rate=c.failed_rate, unexecuted_rate=c.unexecuted_rate,
            pending_rate=c.pending_rate,
        )


def _bin_order(item: tuple[str, int]) -> int:
    return int(item[0].rstrip("+"))


class Group(BaseModel):
    """The figures of one (service, version, agent), over the range or in one bucket."""

    project: str = Field(description="the project (resource `tooltrail.project`, `?project=`)")
    service: str = Field(description="resource `service.name` (empty when none was sent)")
    version: str = Field(description="resource `service.version` (empty when none was sent)")
    agent: str = Field(description="the turn's agent names, comma-separated (empty: none)")
    bucket_start: str | None = Field(None, description="RFC 3339 start of the bucket")
    figures: Figures


class SignalsOut(BaseModel):
    """Per-version totals over the range, and the same per time bucket."""

    bucket: Literal["1h", "1d"]
    versions: list[Group] = Field(description="one per (service, version, agent), whole range")
    buckets: list[Group] = Field(description="one per (service, version, agent) and bucket")


class MeasureOut(BaseModel):
    """One drift measure of the candidate against the baseline."""

    name: Literal["zero_tool_rate", "tool_mix", "calls_per_turn"]
    baseline: float = Field(description="the baseline's value (0 for the tool-mix distance)")
    candidate: float = Field(description="the candidate's value (the distance for tool_mix)")
    estimate: float = Field(
        description="candidate − baseline; for tool_mix the Jensen–Shannon distance (0…1)")
    interval: list[float] | None = Field(
        description="confidence interval of the estimate at 1 − alpha (none for tool_mix)")
    p_value: float | None = Field(
        description="two-proportion z test, chi-square homogeneity test or Welch's t test")
    flagged: bool = Field(description="significant at alpha and at least the minimum effect")
    reason: str


class DriftOut(BaseModel):
    """Drift of a candidate (version or window) against a baseline."""

    service: str
    agent: str | None
    baseline: Figures
    candidate: Figures
    alpha: float
    min_turns: int
    flagged: bool = Field(description="any measure flagged")
    measures: list[MeasureOut]


Service = Annotated[str | None, Query(description="resource service.name")]


def _group(project: str, service: str, version: str, agent: str, counts: Counts,
           bucket: int | None = None) -> Group:
    return Group(project=project, service=service, version=version, agent=agent,
                 bucket_start=rfc3339(bucket) if bucket is not None else None,
                 figures=Figures.of(counts))


@router.get("/signals", response_model=SignalsOut)
def signals(
    conn: ReadConn,
    project: Project,
    service: Service = None,
    agent: Annotated[str | None, Query(description="the turn's agent names")] = None,
    version: Annotated[str | None, Query(description="resource service.version")] = None,
    since: TimeParam = None,
    until: TimeParam = None,
    bucket: Literal["1h", "1d"] = "1h",
) -> SignalsOut:
    """The project's signals per (service, version, agent): totals over the range and per
    bucket."""
    rows = production.buckets(
        conn, project=project, service=service, version=version, agent=agent,
        since=parse_time(since, "since"), until=parse_time(until, "until"), width=WIDTHS[bucket])
    totals: dict[tuple[str, str, str, str], Counts] = {}
    for row in rows:
        totals.setdefault((row.project, row.service, row.version, row.agent),
                          Counts()).merge(row.counts)
    return SignalsOut(
        bucket=bucket,
        versions=[_group(*key, counts) for key, counts in sorted(totals.items())],
        buckets=[_group(r.project, r.service, r.version, r.agent, r.counts, r.bucket)
                 for r in rows],
    )


def thresholds(app: State) -> Thresholds:
    """The drift thresholds of the settings."""
    s = app.settings
    return Thresholds(alpha=s.drift_alpha, min_turns=s.drift_min_turns,
                      min_zero_rate_diff=s.drift_min_zero_rate_diff,
                      min_tool_mix_distance=s.drift_min_tool_mix_distance,
                      min_calls_shift=s.drift_min_calls_shift)


def _measure(m: Measure) -> MeasureOut:
    interval = [m.low, m.high] if m.low is not None and m.high is not None else None
    return MeasureOut(name=m.name, baseline=m.baseline,
                      candidate=m.candidate, estimate=m.estimate, interval=interval,
                      p_value=m.p_value, flagged=m.flagged, reason=m.reason)


@router.get("/signals/drift", response_model=DriftOut)
def signals_drift(
    conn: ReadConn,
    app: State,
    project: Project,
    service: Annotated[str, Query(description="resource service.name")],
    agent: Annotated[str | None, Query(description="only this agent's turns")] = None,
    baseline: Annotated[str | None, Query(description="the baseline service.version")] = None,
    candidate: Annotated[str | None, Query(description="the candidate service.version")] = None,
    baseline_since: TimeParam = None,
    baseline_until: TimeParam = None,
    since: TimeParam = None,
    until: TimeParam = None,
) -> DriftOut:
    """Drift of a candidate version against a baseline version (over since…until), or of the
    window since…until against the window baseline_since…baseline_until (one version, or all
    when none is named)."""
    lo, hi = parse_time(since, "since"), parse_time(until, "until")
    if baseline is not None and candidate is not None:
        both = production.totals(conn, project=project, service=service, agent=agent,
                                 since=lo, until=hi)
        base = both.get((service, baseline), Counts())
        cand = both.get((service, candidate), Counts())
    elif baseline_since is not None or baseline_until is not None:
        if lo is None:
            raise ApiError(400, "a window comparison needs since (the candidate window)")
        version = candidate or baseline
        base = _window(conn, project, service, agent, version,
                       parse_time(baseline_since, "baseline_since"),
                       parse_time(baseline_until, "baseline_until"))
        cand = _window(conn, project, service, agent, version, lo, hi)
    else:
        raise ApiError(400, "give baseline and candidate versions, or baseline_since/"
                       "baseline_until and since/until windows")
    t = thresholds(app)
    measures = drift(base, cand, t)
    return DriftOut(service=service, agent=agent, baseline=Figures.of(base),
                    candidate=Figures.of(cand), alpha=t.alpha, min_turns=t.min_turns,
                    flagged=any(m.flagged for m in measures),
                    measures=[_measure(m) for m in measures])


def _window(conn: ReadConn, project: str, service: str, agent: str | None,
            version: str | None, since: float | None, until: float | None) -> Counts:
    found = production.totals(conn, project=project, service=service, agent=agent,
                              since=since, until=until)
    return Counts.total(c for (_, v), c in found.items() if version is None or v == version)
