"""The web page's server: routes, request validation and errors (the API is documented in
:mod:`tri.web`).

:func:`create_app` builds the FastAPI application for one project; :func:`run` serves it with
uvicorn until Ctrl-C or SIGTERM. FastAPI (installed with Prefect, which serves its own API with
it) earns its place by validating every request body against a pydantic model and mapping each
failure to one JSON error; the page itself needs no build step.

Safety: the page names players only from :class:`~tri.web.players.Roster`'s allow-list; every
error is ``{"error": "<one line>"}`` (a traceback goes to the server's log, never to the page);
the ``Host`` header must name the address the server was asked to answer on (so a web page
elsewhere cannot reach it through DNS rebinding); a Content-Security-Policy lets the page load
nothing but this server's own files.
"""

from __future__ import annotations

import logging
import secrets
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from tri.config import Runtime
from tri.errors import TriError
from tri.games import REGISTRY
from tri.web import compare
from tri.web.players import Roster
from tri.web.sessions import SEED_DOMAIN, Conflict, Missing, Store

STATIC = Path(__file__).resolve().parent / "static"
HOST = "127.0.0.1"
PORT = 8765
MAX_SEED = 2**63 - 1
log = logging.getLogger("tri.web")

Seed = Annotated[int, Field(ge=0, le=MAX_SEED, description="the game's seed (its chance, and the agents' draws)")]
Name = Annotated[str, Field(min_length=1, max_length=80)]
CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PlayRequest(_Body):
    game: Name
    seed: Seed | None = None
    opponent: Name | None = None  # default: the game's champion, else greedy
    seat: Literal[0, 1] = 0


class MoveRequest(_Body):
    move: Annotated[str, Field(max_length=200)]


class WatchRequest(_Body):
    game: Name
    player: Name | None = None  # default: the game's champion, else greedy
    seed: Seed | None = None
    opponent: Name = "greedy"
    seat: Literal[0, 1] = 0
    analysis: bool = True


def create_app(root: Path, *, links: dict[str, str | None] | None = None, runtime: Runtime | None = None,
               allowed_hosts: list[str] | None = None) -> FastAPI:
    """The page and its API for the project at ``root``. ``links``: the addresses of the Prefect
    and MLflow UIs (``{"prefect": url, "mlflow": url}``; None where none runs). ``allowed_hosts``:
    the ``Host`` headers it answers (default: loopback names; ``["*"]``: any)."""
    roster = Roster(root, runtime)
    store = Store()
    curve = compare.CurvePicture()
    links = {"prefect": None, "mlflow": None, **(links or {})}
    app = FastAPI(title="tri", docs_url=None, redoc_url=None, openapi_url=None)
    hosts = set(allowed_hosts or ["127.0.0.1", "localhost", "[::1]", "testserver"])

    @app.middleware("http")
    async def headers(request: Request, call_next):
        host = request.headers.get("host", "")
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        if "*" not in hosts and name not in hosts:
            response = JSONResponse({"error": f"this server answers as {', '.join(sorted(hosts))}, not "
                                              f"{host[:60]!r}"}, status_code=400)
        else:
            response = await call_next(request)
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        if request.url.path.startswith("/api/"):
            response.headers["Cache-Control"] = "no-store"
        return response

    # ---- errors: one JSON line each --------------------------------------------------------

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"error": _validation_message(exc)}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        detail = exc.detail if isinstance(exc.detail, str) else "bad request"
        if exc.status_code == 404:
            detail = f"not found: {request.url.path[:80]}"
        return JSONResponse({"error": detail}, status_code=exc.status_code)

    @app.exception_handler(Missing)
    async def missing(request: Request, exc: Missing) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=404)

    @app.exception_handler(Conflict)
    async def conflict(request: Request, exc: Conflict) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=409)

    @app.exception_handler(TriError)
    async def refused(request: Request, exc: TriError) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=400)

    @app.exception_handler(Exception)
    async def failed(request: Request, exc: Exception) -> JSONResponse:
        log.exception("%s %s failed", request.method, request.url.path)
        return JSONResponse({"error": f"internal error ({type(exc).__name__}); the server's log has the details"},
                            status_code=500)

    # ---- the page --------------------------------------------------------------------------

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    # ---- the API ---------------------------------------------------------------------------

    @app.get("/api/info")
    def info() -> dict:
        games = [{"name": name, "title": e.title, "num_players": roster.game(name).num_players,
                  "default_player": roster.default_player(name),
                  "players": [{"name": a.name, "label": a.label} for a in roster.allowed(name)]}
                 for name, e in REGISTRY.items()]
        return {"project": roster.root.name, "game": roster.project_game, "links": links, "games": games}

    @app.post("/api/play")
    def play(body: PlayRequest) -> dict:
        game = roster.game(body.game)
        seed = _seed(body.seed)
        if game.num_players == 1:
            session = store.new(game, seed, [None], ["you"], 0)
        else:
            name = body.opponent or roster.default_player(body.game)
            agents = [None, None]
            agents[1 - body.seat] = roster.agent(body.game, name, _rng(seed, 1 - body.seat))
            names = ["you", "you"]
            names[1 - body.seat] = name
            session = store.new(game, seed, agents, names, body.seat)
        with session.lock:
            session.replies()
            return session.position()

    @app.get("/api/play/{session_id}")
    def position(session_id: str) -> dict:
        session = store.get(session_id, watching=False)
        with session.lock:
            return session.position()

    @app.post("/api/play/{session_id}/move")
    def move(session_id: str, body: MoveRequest) -> dict:
        session = store.get(session_id, watching=False)
        with session.lock:
            session.person_move(body.move)
            return session.position()

    @app.post("/api/watch")
    def watch(body: WatchRequest) -> dict:
        game = roster.game(body.game)
        seed = _seed(body.seed)
        player = body.player or roster.default_player(body.game)
        if game.num_players == 1:
            agents, names = [roster.agent(body.game, player, _rng(seed, 0))], [player]
            seat = 0
        else:
            seat = body.seat
            agents, names = [None, None], [body.opponent, body.opponent]
            agents[seat], names[seat] = roster.agent(body.game, player, _rng(seed, seat)), player
            agents[1 - seat] = roster.agent(body.game, body.opponent, _rng(seed, 1 - seat))
        session = store.new(game, seed, agents, names, seat, watching=True, analysis=body.analysis)
        with session.lock:
            return session.frame()

    @app.post("/api/watch/{session_id}/next")
    def watch_next(session_id: str) -> dict:
        session = store.get(session_id, watching=True)
        with session.lock:
            if session.over:
                raise Conflict("the game is over")
            decision = session.agent_move(session.analysis)
            return session.frame(decision)

    @app.get("/api/compare")
    def compare_view() -> dict:
        return compare.summary(roster, links)

    @app.get("/api/compare/curve.png")
    def curve_png() -> Response:
        png = curve.png(roster.root)
        if png is None:
            raise Missing("no learning curve yet: the project has no arena results (run tri loop)")
        return Response(png, media_type="image/png")

    @app.get("/api/compare/ladder.png")
    def ladder_png() -> FileResponse:
        path = compare.ladder_dir(roster.root) / "ladder.png"
        if not path.is_file():
            raise Missing("no ladder plot yet (run tri ladder in the project)")
        return FileResponse(path, media_type="image/png")

    @app.api_route("/api/{rest:path}", methods=["GET", "POST", "PUT", "DELETE", "PATCH"], include_in_schema=False)
    def unknown(rest: str) -> None:
        raise Missing(f"no such API endpoint: /api/{rest[:60]} (see /api/info)")

    return app


def _seed(seed: int | None) -> int:
    return secrets.randbelow(2**31) if seed is None else seed


def _rng(seed: int, seat: int) -> np.random.Generator:
    return np.random.default_rng([seed, seat, SEED_DOMAIN])


def _validation_message(exc: RequestValidationError) -> str:
    """The first problem of a request body, in one line."""
    errors = exc.errors()
    if not errors:
        return "malformed request"
    first = errors[0]
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "body"
    message = str(first.get("msg", "invalid"))
    if first.get("type") == "json_invalid":
        return "the request body is not valid JSON"
    if first.get("type") == "extra_forbidden":
        return f"unknown field {where!r}"
    return f"{where}: {message}"[:200]


def run(root: Path, *, host: str = HOST, port: int = PORT, links: dict[str, str | None] | None = None,
        echo=print) -> None:
    """Serve the page for the project at ``root`` until Ctrl-C or SIGTERM (uvicorn handles both and
    returns)."""
    import uvicorn  # only to serve: the app itself (and the tests' client) needs none

    root = Path(root).resolve()
    if not root.is_dir():
        raise TriError(f"--root {root}: no such folder")
    hosts = ["*"] if host in ("0.0.0.0", "::") else sorted({host, "127.0.0.1", "localhost", "[::1]"})
    app = create_app(root, links=links, allowed_hosts=hosts)
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    echo(f"tri web page: http://{shown}:{port}/ (project {root}; Ctrl-C stops it)")
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    server.run()
    if not server.started:
        raise TriError(f"the web page could not listen on {host}:{port} (in use? choose another with --port)")
