"""tri's web page: play, watch and compare agents in a browser (``tri web``, and ``tri serve`` beside
the Prefect and MLflow UIs).

One FastAPI application (:mod:`tri.web.app`) serves plain HTML, CSS and JavaScript modules from
``tri/web/static/`` (no build step, nothing fetched from elsewhere) and a small JSON API. The
page only names players from an allow-list (:mod:`tri.web.players`); every request is validated;
every error is ``{"error": "<one line>"}`` with a 4xx status, never a traceback. Sessions (a game
being played or watched) live in the server's memory only; nothing is written anywhere.

Modules: :mod:`.players` (the allow-list), :mod:`.positions` (a state as JSON, the search's view
as a heat map), :mod:`.sessions` (games being played or watched), :mod:`.compare` (the project's
learning curve, ladder and champions), :mod:`.app` (routes), ``static/`` (the page).

The API (JSON in and out; ``GAME`` is a registry name: ``triangle``, ``connect4``, ``tictactoe``, ``othello``, ...)
-----------------------------------------------------------------------------------------------

``GET /api/info`` ->
``{"project": str, "game": str (the project's game), "links": {"prefect": url|null,
"mlflow": url|null}, "games": [{"name", "title", "num_players": 1|2, "default_player":
"champion" (or "greedy" for a game without a champion), "players": [{"name": str, "label": str}]}]}``. ``players`` is the allow-list for that
game: ``champion``, ``champion-net`` (its network alone, no search), ``greedy``, ``random``, and,
for the project's own game, ``best`` and ``gen-NNNN`` (the project's checkpoints).

``POST /api/play`` ``{"game": GAME, "seed": int (optional; default random), "opponent": name
(two-player; default the game's default_player), "seat": 0|1 (two-player: the person's seat, 0 moves first;
default 0)}`` -> a **Position** (the opponent has already replied if it moves first).

``GET /api/play/ID`` -> the current Position.

``POST /api/play/ID/move`` ``{"move": str}``: the move in the game's notation, as a person would
type it in the terminal (triangle ``"slot row col"``, e.g. ``"0 3 4"``; Connect Four the 1-based
column ``"4"``; Tic-Tac-Toe the 1-based cell ``"5"``; Santorini ``"c2 c1 b1"``; Pyrga ``"a b2 >"``). A legal move is played, then the opponent's
replies until it is the person's turn or the game is over -> the new Position. An illegal or
unreadable move -> status 400 ``{"error": "illegal move 2 4 6: cell (4, 6) points down but the
shape needs up there"}`` and the game is unchanged.

**Position** (every game)::

    {"id": str, "game": GAME, "kind": "triangle" | "grid" | "pieces", "seed": int, "moves": int,
     "turn": 0|1 (seat to move), "person_seat": 0|1, "players": [str, str] (names per seat;
     one entry for the triangle), "over": bool,
     "result": null | {"outcome": 1|0|-1 (for the person's seat), "text": "you win"},
     "score": float (the person's summed rewards; the triangle's score),
     "stats": {"lines": int, "cleared": int} (triangle; {} otherwise),
     "message": str (what just happened, e.g. "champion played column 4", or "game over: ..."),
     "history": [{"seat": int, "who": str, "move": str}],
     "help": str (how to type a move), "board": Board}

**Board**, kind ``"grid"`` (Connect Four, Tic-Tac-Toe), in display order (top row first)::

    {"rows": int, "cols": int, "cells": [[0|1|2]] (0 empty, 1 first player X, 2 second O),
     "moves": [[str|null]] (the move a click on that cell plays, null: none),
     "legal": [[bool]] (a click there is legal now), "last": [r, c] | null (the last piece),
     "col_labels": [str], "row_labels": [str],
     "extra": [{"move": str, "legal": bool}] (moves that are no cell, e.g. Othello's "pass")}

**Board**, kind ``"triangle"``::

    {"rows": int, "cols": int, "playable": [[bool]], "up": [[bool]] (cell (r, c) points up:
     r + c odd), "filled": [[bool]], "slots": [null | {"cells": [[dr, dc, up]], "fits": bool}]
     (each shape's triangles relative to its anchor (0, 0), the cell a move names),
     "legal": [[slot, r, c]] (every legal placement), "placed": [[r, c]] (triangles the last
     move placed that are still on the board), "cleared": [[r, c]] (triangles the last move
     cleared)}

**Board**, kind ``"pieces"`` (Santorini, Pyrga: :mod:`tri.web.pieces`), top row first::

    {"rows": int, "cols": int, "col_labels": [str], "row_labels": [str], "names": [[str]] (each
     cell's name in moves, "b2"), "cells": [[{"level": 0-3 (Santorini's height), "dome": bool,
     "pieces": [{"owner": 1|2, "kind": "worker"|"square"|"circle"|"arrow", "direction": "^"|">"|"v"|"<"
     (an arrow's)}], "tower": 0|1|2 (Pyrga: a full cell's owner)}]],
     "moves": [{"move": str (what to send), "path": [str] (its clicks: cell names, then words such
     as "circle" or "arrow >")}] (every legal move; none once the game is over),
     "last": [[r, c]] (the cells the last move changed), "facts": [str] (e.g. towers and pieces
     in hand), "extra": []}

Watching: ``POST /api/watch`` ``{"game": GAME, "player": name (default the game's default_player), "seed": int
(optional), "opponent": name (two-player; default "greedy"), "seat": 0|1 (two-player: the
player's seat; default 0), "analysis": bool (default true)}`` -> a **Frame** (index 0, no
decision). ``POST /api/watch/ID/next`` -> the next Frame: the watched game advances one move
(either seat's) -> 409 ``{"error": "the game is over"}`` past the end. Frames are not stored:
the page keeps them for stepping back and forward.

**Frame**::

    {"id": str, "index": int (moves played), "position": Position,
     "decision": null | {"seat": int, "who": str, "move": str, "reward": float,
                         "analysis": null | Analysis}}

``decision`` is the move that led from the previous frame's position to this one, with what the
mover's search (or network) saw in the previous position: **Analysis**::

    {"kind": "search" | "network", "value": float | null (the value estimate of the position for
     the side to move: two-player in [-1, 1]; the triangle: the expected discounted return),
     "heat": [[float]] (rows x cols in the Board's display order: the share of the policy on
     each cell, summed over the triangle's slots at each anchor cell; sums to 1),
     "top": [{"move": str, "share": float}] (the 5 most likely moves)}

Comparing: ``GET /api/compare`` ->
``{"project": str, "game": str, "generations": [{"generation": int, "candidate": float,
"best": float, "best_pooled": float|null, "promoted": bool}], "curve": url|null (a PNG),
"ladder": null | {"kind": "ratings"|"means", "games": int, "anchor": str, "method": str,
"standings": [{"name", "value", "low", "high", "games", "wins", "draws", "losses",
"score_rate", "diff", "diff_low", "diff_high"}]}, "ladder_plot": url|null (a PNG),
"champions": [{"game", "generation", "summary": str, "card": str (the model card's path)}],
"links": {"prefect": url|null, "mlflow": url|null, "experiment": url|null,
"model": url|null}}``.

Errors: unknown game or player, a malformed body, a bad seed, a move that cannot be read or is
illegal: 400 (422 for a body that is not the right JSON shape); an unknown session: 404; a move
when the game is over or not the person's turn: 409. Always ``{"error": str}``.
"""
