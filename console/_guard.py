"""Who may change the cluster through an admin console, and what another site cannot
make a visitor's browser do to any console.

Every console (``headers``): pages may not be framed elsewhere (``X-Frame-Options``,
``frame-ancestors``), load only the console's own CSS and JavaScript (a
Content-Security-Policy), and leak no address in a ``Referer`` to another site. Requests naming a host
the console does not answer to are refused (``base.http.same_site_guard``: DNS
rebinding), and so are changes whose ``Origin`` is another site.

An admin console (:class:`AdminGuard`) also needs a sign-in, step by step:

1. at start it makes a random token and prints the address ``/?token=...``;
2. a request carrying the token gets it back as a cookie (HttpOnly, SameSite=Strict,
   so no other site's page sends it) and is redirected to the same page without it;
3. every other request must carry that cookie, else it is answered 401;
4. each form of an action holds a CSRF field derived from a key only this process
   knows, and an action without the right one is refused (403);
5. an offsets reset applies only a plan the console showed: the preview's form carries
   a seal of the plan (its group, partitions and offsets), and the reset recomputes the
   plan and applies it only if the seal matches, so a single POST cannot skip the
   preview, and a plan that changed since it was shown must be previewed again.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Mapping, MutableMapping
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler

COOKIE = "headrace-console"
TOKEN_PARAMETER = "token"
CSRF_FIELD = "csrf"
SEAL_FIELD = "plan"
_POLICY = (
    "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'; "
    "object-src 'none'"
)


@web.middleware
async def headers(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The headers every answer of a console carries (errors included)."""
    try:
        response = await handler(request)
    except web.HTTPException as exc:
        _harden(exc.headers)
        raise
    _harden(response.headers)
    return response


def _harden(headers: MutableMapping[str, str]) -> None:
    headers["X-Frame-Options"] = "DENY"
    headers["Content-Security-Policy"] = _POLICY
    headers["X-Content-Type-Options"] = "nosniff"
    # Not "no-referrer": under it a browser sends a form's POST with "Origin: null",
    # which the same-site guard refuses, so no form of an admin console would work.
    headers["Referrer-Policy"] = "same-origin"


class AdminGuard:
    """The sign-in token, CSRF field and plan seals of one admin console process."""

    def __init__(self, token: str | None = None) -> None:
        self.token = token or secrets.token_urlsafe(24)
        self._key = secrets.token_bytes(32)
        self.csrf = self._mac(b"csrf")

    def sign_in_address(self, address: str) -> str:
        return f"http://{address}/?{TOKEN_PARAMETER}={self.token}"

    def _mac(self, data: bytes) -> str:
        return hmac.new(self._key, data, hashlib.sha256).hexdigest()

    @web.middleware
    async def signed_in(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path.startswith("/static/"):
            return await handler(request)
        offered = request.query.get(TOKEN_PARAMETER)
        if offered is not None and hmac.compare_digest(offered, self.token):
            query = {k: v for k, v in request.query.items() if k != TOKEN_PARAMETER}
            redirect = web.HTTPSeeOther(str(request.rel_url.with_query(query)))
            redirect.set_cookie(COOKIE, self.token, httponly=True, samesite="Strict", path="/")
            raise redirect
        if hmac.compare_digest(request.cookies.get(COOKIE, ""), self.token):
            return await handler(request)
        raise web.HTTPUnauthorized(
            text="this admin console needs a sign-in: open the address it printed when it "
            "started (it ends in ?token=...)"
        )

    def check_form(self, form: Mapping[str, str]) -> None:
        if not hmac.compare_digest(form.get(CSRF_FIELD, ""), self.csrf):
            raise web.HTTPForbidden(text="this action did not come from the console's own form")

    def seal(self, group_id: str, plan: list[dict[str, Any]]) -> str:
        """A seal of the offsets ``plan`` would commit for ``group_id``."""
        offsets = sorted((p["topic"], p["partition"], p["new"]) for p in plan)
        return self._mac(json.dumps([group_id, offsets]).encode())

    def check_seal(self, group_id: str, plan: list[dict[str, Any]], seal: str) -> bool:
        return hmac.compare_digest(self.seal(group_id, plan), seal)
