"""The web view's sign-in: a `read` key kept in an HttpOnly, SameSite=Strict cookie.

Only /ui/ pages read the cookie (the REST API still needs the Authorization header), so a
cookie can never authorise a write."""

from __future__ import annotations

from http.cookies import SimpleCookie
from urllib.parse import quote

from starlette.types import Send

COOKIE = "tooltrail_key"
PREFIX = "/ui"
# reachable without a key: the redirect at /, the sign-in form and the stylesheet
OPEN = ("/", "/ui/signin", "/ui/signout")


def is_page(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


def is_open(path: str) -> bool:
    return path in OPEN or path.startswith("/ui/static/")


def cookie_authorization(headers: dict[bytes, bytes]) -> str | None:
    """`Bearer <key>` from the session cookie, if one is set."""
    raw = headers.get(b"cookie", b"").decode("latin-1")
    if not raw:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(raw)
    except Exception:  # a malformed Cookie header is no key at all
        return None
    morsel = jar.get(COOKIE)
    return f"Bearer {morsel.value}" if morsel is not None and morsel.value else None


def safe_next(target: str | None) -> str:
    """A local /ui/ path to go back to after signing in (never another site)."""
    if not target or not is_page(target.split("?", 1)[0]) or target.startswith("//"):
        return "/ui/"
    return target


async def signin_redirect(send: Send, path: str, query: bytes) -> None:
    """303 to the sign-in form, remembering where the reader was going."""
    target = path + ("?" + query.decode("latin-1") if query else "")
    location = "/ui/signin?next=" + quote(safe_next(target), safe="")
    headers = [(b"location", location.encode()), (b"content-length", b"0"),
               (b"cache-control", b"no-store")]  # fmt: skip
    await send({"type": "http.response.start", "status": 303, "headers": headers})
    await send({"type": "http.response.body", "body": b""})
