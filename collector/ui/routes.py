"""The read-only pages under /ui/, reading through `collector.store.queries` and
`collector.summaries` and converting rows to the REST shapes (`collector.api.convert`) the
templates render."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import parse_qs, urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from sqlalchemy import Connection

from tooltrail.collector import conversation_view, summaries, turn_view
from tooltrail.collector.api import convert
from tooltrail.collector.api.deps import (
    AppState,
    ReadConn,
    State,
    decode_cursor,
    encode_cursor,
    parse_time,
    resolve_project,
    rfc3339,
)
from tooltrail.collector.api.errors import ApiError
from tooltrail.collector.api.routes.jobs import job_out
from tooltrail.collector.api.routes.signals import Figures, Group
from tooltrail.collector.apikeys import ApiKeys, Forbidden, Unauthenticated
from tooltrail.collector.store import jobs, production, queries
from tooltrail.collector.ui import session
from tooltrail.collector.ui.chart import pass_rate_svg
from tooltrail.collector.ui.templating import render, stylesheet
from tooltrail.collector.ui.views import Verdict, verdict

router = APIRouter(include_in_schema=False)
PAGE = 50
Text = Annotated[str | None, Query()]


def page(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    signed_in = session.COOKIE in request.cookies
    body = render(template, signed_in=signed_in, **context)
    return HTMLResponse(body, status_code=status, headers={"cache-control": "no-store"})


def _flag(value: str | None) -> bool | None:
    return {"true": True, "false": False}.get((value or "").lower())


def _project(app: AppState, value: str | None) -> str:
    """The page's project (`?project=`, else the configured default); ApiError when it is not
    a project name."""
    return resolve_project(app.settings, value or None)


def _ns(value: str | None, field: str) -> int | None:
    seconds = parse_time(value or None, field)
    return None if seconds is None else int(seconds * 1e9)


@router.get("/", include_in_schema=False)
def root() -> RedirectResponse:
    return RedirectResponse("/ui/", status_code=307)


@router.get("/ui", include_in_schema=False)
def ui_root() -> RedirectResponse:
    return RedirectResponse("/ui/", status_code=307)


@router.get("/ui/static/ui.css")
def css() -> Response:
    return PlainTextResponse(
        stylesheet(), media_type="text/css", headers={"cache-control": "max-age=3600"}
    )


@router.get("/ui/")
def conversations_page(
    request: Request,
    conn: ReadConn,
    app: State,
    project: Text = None,
    q: Text = None,
    service: Text = None,
    agent: Text = None,
    tool: Text = None,
    expectation: Text = None,
    reason: Text = None,
    passed: Text = None,
    has_errors: Text = None,
    since: Text = None,
    until: Text = None,
    cursor: Text = None,
) -> HTMLResponse:
    """Conversations newest first, filtered, with each one's current verdicts."""
    f: dict[str, Any] = {
        "q": q or None, "service": service or None, "agent": agent or None,
        "tool": tool or None, "expectation": expectation or None, "reason": reason or None,
        "passed": _flag(passed), "has_errors": _flag(has_errors),
        "since": since or None, "until": until or None,
    }  # fmt: skip
    try:
        f["project"] = _project(app, project)
        before_id = decode_cursor(cursor)
        since_ns, until_ns = _ns(since, "since"), _ns(until, "until")
    except ApiError as exc:  # a hand-edited address: say what is wrong, as a page
        return page(request, "missing.html", status=exc.status, what=exc.message)
    rows = queries.list_conversations(
        conn,
        limit=PAGE + 1,
        before_id=before_id,
        service=f["service"],
        tool=f["tool"],
        agent=f["agent"],
        expectation=f["expectation"],
        reason=f["reason"],
        passed=f["passed"],
        has_errors=f["has_errors"],
        since_ns=since_ns,
        until_ns=until_ns,
        key_contains=f["q"],
        project=f["project"],
    )
    more = len(rows) > PAGE
    rows = rows[:PAGE]
    keys = {r["id"]: r["key"] for r in rows}
    badges: dict[str, list[tuple[str, bool]]] = {}
    verdicts: dict[tuple[str, str], bool] = {}
    for cid, slug, ok in queries.current_verdicts(conn, list(keys)):
        k = (keys[cid], slug)  # one badge per expectation: passed when every scope passed
        verdicts[k] = verdicts.get(k, True) and ok
    for (key, slug), ok in verdicts.items():
        badges.setdefault(key, []).append((slug, ok))
    params = {k: request.query_params[k] for k in request.query_params if k != "cursor"}
    params = {k: v for k, v in params.items() if v}
    next_url = None
    if more:
        next_url = "/ui/?" + urlencode({**params, "cursor": encode_cursor(rows[-1]["id"])})
    first = ("/ui/?" + urlencode(params)) if cursor else None
    return page(
        request,
        "list.html",
        f=f,
        rows=[{**convert.conversation_summary(r).model_dump(), "id": r["id"]} for r in rows],
        badges=badges,
        next_url=next_url,
        first_page_url=first,
    )


def conversation_verdicts(
    conn: Connection, conversation: dict[str, Any], conversation_id: int
) -> list[Verdict]:
    """The current results of a conversation, each aligned with its expectation version."""
    out = []
    definitions: dict[tuple[str, int], dict[str, Any]] = {}
    for row in queries.conversation_results(conn, conversation_id, history=False):
        result = convert.result(row, conversation["key"]).model_dump()
        at = (row["expectation"], row["expectation_version"])
        if at not in definitions:
            found = queries.latest_expectation(conn, *at)
            definitions[at] = found["body"] if found is not None else {}
        out.append(verdict(definitions[at], conversation, result))
    return out


@router.get("/ui/conversations/{key:path}")
def conversation_page(key: str, request: Request, conn: ReadConn, app: State,
                      project: Text = None) -> HTMLResponse:
    """One conversation's turns and calls, beside every applicable verdict."""
    try:
        scope = _project(app, project)
    except ApiError as exc:
        return page(request, "missing.html", status=exc.status, what=exc.message)
    row = queries.get_conversation(conn, key, scope)
    if row is None:
        return page(request, "missing.html", status=404,
                    what=f"No conversation {key!r} in project {scope!r}.")
    shown = conversation_view.conversation_turns(conn, row["id"])
    c = convert.conversation(row, shown).model_dump()
    for turn, stored in zip(c["turns"], shown, strict=True):
        for call, call_row in zip(turn["tool_calls"], stored["tool_calls"], strict=True):
            call["duration_ms"] = turn_view.ms(call_row["start_ns"], call_row["end_ns"])
            call["attributes"] = call_row.get("attributes") or {}  # the span's, as stored
    details = turn_view.turn_details(conn, row["id"], shown)
    verdicts = sorted(conversation_verdicts(conn, c, row["id"]), key=lambda v: v.result["passed"])
    return page(request, "conversation.html", c=c, verdicts=verdicts, details=details)


@router.get("/ui/expectations")
def expectations_page(request: Request, conn: ReadConn, app: State, project: Text = None,
                      cursor: Text = None) -> HTMLResponse:
    try:
        scope = _project(app, project)
    except ApiError as exc:
        return page(request, "missing.html", status=exc.status, what=exc.message)
    rows = queries.list_expectations(
        conn, include_inactive=True, limit=PAGE + 1, after_id=decode_cursor(cursor),
        project=scope,
    )
    next_url = None
    if len(rows) > PAGE:
        next_url = "/ui/expectations?" + urlencode(
            {"project": scope, "cursor": encode_cursor(rows[PAGE - 1]["id"])})
    return page(
        request,
        "expectations.html",
        project=scope,
        rows=[convert.expectation(r).model_dump() for r in rows[:PAGE]],
        next_url=next_url,
    )


@router.get("/ui/expectations/{slug}")
def expectation_page(
    slug: str,
    request: Request,
    conn: ReadConn,
    version: Annotated[int | None, Query(ge=1, le=2**31 - 1)] = None,
    bucket: Text = None,
) -> HTMLResponse:
    """Definition, versions, pass rate over time, micro P/R/F1, per tool, failure reasons."""
    row = queries.latest_expectation(conn, slug, version)
    if row is None:
        return page(request, "missing.html", status=404, what=f"No expectation {slug!r}.")
    bucket = bucket if bucket in summaries.BUCKETS else "1d"
    figures = summaries.expectation_summary(
        conn, slug, since_ns=None, until_ns=None, bucket=bucket, version=version
    )
    buckets = [{**b, "start": rfc3339(b["start"])} for b in figures.get("buckets") or []]
    versions = [
        convert.expectation(v).model_dump() for v in queries.expectation_versions(conn, slug)
    ]
    bucket_name = {"1h": "hour", "1d": "day"}[bucket]
    return page(
        request,
        "expectation.html",
        e={**row, "created_at": rfc3339(row["created_at"])},
        s=figures,
        versions=versions,
        bucket_name=bucket_name,
        chart=pass_rate_svg(buckets, f"pass rate of {slug} per {bucket_name}"),
    )


@router.get("/ui/errors")
def errors_page(request: Request, conn: ReadConn) -> HTMLResponse:
    rows = [{**r, "at": rfc3339(r["at"])} for r in queries.recent_ingest_errors(conn, 200)]
    return page(request, "errors.html", rows=rows)


@router.get("/ui/jobs")
def jobs_page(request: Request, conn: ReadConn) -> HTMLResponse:
    rows = [job_out(r).model_dump() for r in jobs.list_jobs(conn, limit=100, before_id=None)]
    return page(request, "jobs.html", rows=rows)


@router.get("/ui/signals")
def signals_page(request: Request, conn: ReadConn, app: State, project: Text = None,
                 service: Text = None) -> HTMLResponse:
    """One service's versions side by side in one project (all agents, all time)."""
    try:
        scope = _project(app, project)
    except ApiError as exc:
        return page(request, "missing.html", status=exc.status, what=exc.message)
    totals = production.totals(conn, project=scope)
    services = sorted({s for s, _ in totals})
    chosen = service if service is not None else (services[0] if services else None)
    versions = [Group(project=scope, service=s, version=v, agent="", figures=Figures.of(c))
                for (s, v), c in sorted(totals.items()) if s == chosen]
    return page(request, "signals.html", service=chosen, services=services, versions=versions,
                project=scope)


@router.get("/ui/signin")
def signin_form(request: Request, next: Text = None) -> HTMLResponse:
    return page(request, "signin.html", next=session.safe_next(next), message=None)


@router.post("/ui/signin", response_model=None)
async def signin(request: Request, app: State) -> Response:
    """Check the key can read, then keep it in the session cookie."""
    form = parse_qs((await request.body()).decode("utf-8", "replace"))
    key = (form.get("key") or [""])[0].strip()
    target = session.safe_next((form.get("next") or [""])[0])
    keys = ApiKeys.parse(app.settings.api_keys, app.settings.api_keys_file)
    try:
        keys.check(f"Bearer {key}" if key else None, "read")
    except (Unauthenticated, Forbidden) as exc:
        return page(request, "signin.html", status=401, next=target, message=str(exc))
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        session.COOKIE,
        key,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/ui",
    )
    return response


@router.post("/ui/signout")
def signout() -> RedirectResponse:
    response = RedirectResponse("/ui/signin", status_code=303)
    response.delete_cookie(session.COOKIE, path="/ui", httponly=True, samesite="strict")
    return response


def _golden(conn: Connection, key: str, scope: str) -> dict[str, Any] | None:
    """The expectation `tooltrail golden --conversation KEY` writes (its defaults)."""
    from tooltrail.collector import scorer
    from tooltrail.collector.suites.golden import golden

    row = queries.get_conversation(conn, key, scope)
    if row is None:
        return None
    return golden(scorer.trajectory(conn, row["id"]), key, ident=None, match="strict",
                  arguments="exact", per_turn=False, ignore=())


@router.get("/ui/golden")
def golden_preview(request: Request, conn: ReadConn, app: State, key: Text = None,
                   project: Text = None) -> HTMLResponse:
    """The golden expectation of a conversation, shown before it is saved."""
    try:
        scope = _project(app, project)
    except ApiError as exc:
        return page(request, "missing.html", status=exc.status, what=exc.message)
    body = _golden(conn, key or "", scope)
    if body is None:
        return page(request, "missing.html", status=404,
                    what=f"No conversation {key!r} in project {scope!r}.")
    return page(request, "golden.html", key=key, project=scope, body=body,
                body_json=convert_json(body), admin=ApiKeys.parse(
                    app.settings.api_keys, app.settings.api_keys_file).enabled, message=None)


def convert_json(body: dict[str, Any]) -> str:
    import json

    return json.dumps(body, ensure_ascii=False)


@router.post("/ui/golden", response_model=None)
async def golden_save(request: Request, app: State) -> Response:
    """Save the shown expectation through the REST creation route. A write needs an admin key
    typed into the form: the session cookie never authorises a write (collector.ui.session)."""
    import json

    from tooltrail.collector.api.routes.expectations import create_expectation

    form = parse_qs((await request.body()).decode("utf-8", "replace"))
    field = {k: (v or [""])[0] for k, v in form.items()}
    keys = ApiKeys.parse(app.settings.api_keys, app.settings.api_keys_file)
    key, scope = field.get("key", ""), field.get("project", "")
    try:
        body = json.loads(field.get("body", ""))
        if not isinstance(body, dict):
            raise ValueError("not an object")
    except ValueError as exc:
        return page(request, "missing.html", status=400, what=f"body: not an expectation ({exc})")
    admin = field.get("admin_key", "").strip()

    def again(status: int, message: str) -> HTMLResponse:
        return page(request, "golden.html", status=status, key=key, project=scope, body=body,
                    body_json=convert_json(body), admin=keys.enabled, message=message)

    try:
        keys.check(f"Bearer {admin}" if admin else None, "write")
        scope = _project(app, scope)
    except (Unauthenticated, Forbidden) as exc:
        return again(403, f"{exc} (pinning needs an admin key)")
    except ApiError as exc:
        return again(exc.status, exc.message)
    try:
        with app.engine.connect() as conn:  # the route commits
            created = create_expectation(body, conn, app, scope)
    except ApiError as exc:
        return again(exc.status, exc.message)
    return RedirectResponse(f"/ui/expectations/{created.id}", status_code=303)


COMPARED = 50  # pairs shown on the compare page (the newest conversations of each version)


def _pair_key(key: str, version: str) -> str:
    """A conversation's scenario across versions: its key, the version's name taken out (so
    `refund-7@v1` and `refund-7@v2` pair; keys that do not name the version pair as they are)."""
    return key.replace(version, "{version}") if version else key


def _first_difference(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> str | None:
    """Where two trajectories (calls in order) first differ, in words; None when equal."""
    for n, (x, y) in enumerate(zip(a, b, strict=False)):
        if x["name"] != y["name"]:
            return f"call {n + 1}: {x['name']} → {y['name']}"
        if x.get("arguments") != y.get("arguments"):
            return f"call {n + 1} ({x['name']}): arguments differ"
    if len(a) != len(b):
        n = min(len(a), len(b))
        longer = a if len(a) > len(b) else b
        side = "only the baseline" if longer is a else "only the candidate"
        return f"call {n + 1}: {longer[n]['name']} in {side}"
    return None


@router.get("/ui/compare")
def compare_page(request: Request, conn: ReadConn, app: State, project: Text = None,
                 service: Text = None, baseline: Text = None,
                 candidate: Text = None) -> HTMLResponse:
    """Two versions of a service (the `service.version` the production signals record): drift
    figures, then the same scenarios side by side, verdict by verdict."""
    from tooltrail.collector.api.routes.signals import thresholds
    from tooltrail.collector.production.counts import Counts
    from tooltrail.collector.production.drift import drift

    try:
        scope = _project(app, project)
    except ApiError as exc:
        return page(request, "missing.html", status=exc.status, what=exc.message)
    if not service or baseline is None or candidate is None:
        return page(request, "missing.html", status=400,
                    what="give service, baseline and candidate (versions of the service)")
    totals = production.totals(conn, project=scope, service=service)
    base, cand = totals.get((service, baseline), Counts()), totals.get((service, candidate),
                                                                       Counts())
    measures = drift(base, cand, thresholds(app))
    sides, names = {}, {}
    for version in (baseline, candidate):
        ids = production.version_conversations(conn, scope, service, version, COMPARED)
        names[version] = queries.conversation_keys(conn, ids)
        sides[version] = {_pair_key(names[version][i], version): i
                          for i in ids if i in names[version]}
    paired = [k for k in sides[baseline] if k in sides[candidate]]
    ids = [sides[v][k] for k in paired for v in (baseline, candidate)]
    keys = {**names[baseline], **names[candidate]}
    verdicts: dict[int, dict[str, bool]] = {}
    for cid, slug, ok in queries.current_verdicts(conn, ids):
        verdicts.setdefault(cid, {})[slug] = verdicts.get(cid, {}).get(slug, True) and ok
    rows = []
    shown = conversation_view.conversations_turns(conn, ids)
    for k in paired:
        b, c = sides[baseline][k], sides[candidate][k]
        calls = [[call for t in shown[i] for call in t["tool_calls"]] for i in (b, c)]
        slugs = sorted({*verdicts.get(b, {}), *verdicts.get(c, {})})
        rows.append({"scenario": k, "baseline": keys[b], "candidate": keys[c],
                     "verdicts": [(s, verdicts.get(b, {}).get(s), verdicts.get(c, {}).get(s))
                                  for s in slugs],
                     "first_difference": _first_difference(*calls)})
    unpaired = {v: sorted(names[v][i] for k, i in sides[v].items() if k not in paired)
                for v in (baseline, candidate)}
    return page(request, "compare.html", project=scope, service=service, baseline=baseline,
                candidate=candidate, base=Figures.of(base), cand=Figures.of(cand),
                measures=measures, rows=rows, unpaired=unpaired, limit=COMPARED)
