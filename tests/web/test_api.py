"""The web page's API (tri/web): games played and watched through it agree with the engines, and
every bad request gets one JSON line and a 4xx status, never a traceback or a path outside the
allow-list."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.pipeline_fixtures import PARAMS, PNG_SIGNATURE, save_model
from tri import arena, champions, layout, promote
from tri.games import REGISTRY
from tri.games.kinrow.connect4 import Connect4Game
from tri.games.triangle.game import TriangleGame
from tri.params_yaml import dump_params
from tri.web import app as web_app


def ok(response) -> dict:
    assert response.status_code == 200, response.text
    return response.json()


def refused(response, status: int, *needles: str) -> str:
    assert response.status_code == status, (response.status_code, response.text)
    body = response.json()
    assert set(body) == {"error"}, body
    message = body["error"]
    assert "\n" not in message and "Traceback" not in message and len(message) < 300, message
    for needle in needles:
        assert needle in message, message
    return message


def test_info_lists_games_and_only_named_players(client):
    info = ok(client.get("/api/info"))
    assert [g["name"] for g in info["games"]] == list(REGISTRY)
    for g in info["games"]:
        names = [p["name"] for p in g["players"]]
        if g["name"] in champions.available():
            assert names[:4] == ["champion", "champion-net", "greedy", "random"], names
            assert g["default_player"] == "champion"
        else:  # a game whose first champion is still to come
            assert names[:2] == ["greedy", "random"] and g["default_player"] == "greedy", names
        assert not any("/" in n for n in names)
    assert info["links"] == {"prefect": None, "mlflow": None}


def test_page_and_assets_are_local(client):
    page = client.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "default-src 'self'" in page.headers["content-security-policy"]
    # Every asset the page names is served here, and no file of the page names another host.
    for path in sorted(web_app.STATIC.rglob("*")):
        if path.is_file():
            text = path.read_text(errors="replace")
            hosts = re.findall(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}", text, flags=re.IGNORECASE)
            assert not [h for h in hosts if "w3.org" not in h], (path, hosts)  # SVG's namespace is a name
    for asset in re.findall(r'(?:src|href)="(/static/[^"]+)"', page.text):
        assert client.get(asset).status_code == 200, asset


def test_triangle_game_through_the_api_matches_the_engine(client):
    position = ok(client.post("/api/play", json={"game": "triangle", "seed": 11}))
    assert position["kind"] == "triangle" and position["players"] == ["you"]
    engine = TriangleGame()
    state = engine.new_game(11)
    score = 0.0
    for _ in range(200):
        if position["over"]:
            break
        legal = position["board"]["legal"]
        assert sorted(map(tuple, legal)) == sorted(engine.legal_actions(state))
        move = legal[len(legal) // 2]
        position = ok(client.post(f"/api/play/{position['id']}/move", json={"move": " ".join(map(str, move))}))
        state, step = engine.place(state, tuple(move))
        score += step.reward
        assert position["board"]["filled"] == state.grid.tolist()
        assert position["score"] == pytest.approx(score, abs=1e-6)
        assert set(map(tuple, position["board"]["placed"])) <= {(r, c) for r, c in zip(*np.nonzero(state.grid))}
    assert position["over"] and state.game_over
    refused(client.post(f"/api/play/{position['id']}/move", json={"move": "0 3 4"}), 409, "over")


def test_illegal_and_unreadable_moves_leave_the_game_as_it_was(client):
    position = ok(client.post("/api/play", json={"game": "triangle", "seed": 7}))
    pid = position["id"]
    refused(client.post(f"/api/play/{pid}/move", json={"move": "2 4 6"}), 400, "illegal move 2 4 6")
    refused(client.post(f"/api/play/{pid}/move", json={"move": "left"}), 400, "could not read")
    refused(client.post(f"/api/play/{pid}/move", json={"move": "9" * 150}), 400)
    after = ok(client.get(f"/api/play/{pid}"))
    assert after["moves"] == 0 and after["board"] == position["board"]
    move = " ".join(map(str, position["board"]["legal"][0]))
    assert ok(client.post(f"/api/play/{pid}/move", json={"move": move}))["moves"] == 1


def test_connect4_against_greedy_to_a_result(client):
    position = ok(client.post("/api/play", json={"game": "connect4", "seed": 3, "opponent": "greedy"}))
    engine = Connect4Game()
    assert position["players"] == ["you", "greedy"] and position["kind"] == "grid"
    column = 0
    while not position["over"]:
        legal_columns = [c for c in range(7) if position["board"]["legal"][0][c]]
        column = legal_columns[0]
        position = ok(client.post(f"/api/play/{position['id']}/move",
                                  json={"move": position["board"]["moves"][0][column]}))
    moves = "".join(str(engine.parse_move(h["move"], engine.new()) + 1) for h in position["history"])
    state = engine.from_moves(moves)
    assert engine.is_over(state)
    outcome = int(engine.result(state))  # for the first player: the person
    assert position["result"]["outcome"] == outcome
    assert position["result"]["text"] == {1: "you win", 0: "a draw", -1: "greedy wins"}[outcome]
    grid = engine.board(state)[::-1].tolist()  # the page draws the top row first
    assert position["board"]["cells"] == grid


def test_full_column_is_refused_and_the_game_goes_on(client):
    position = ok(client.post("/api/play", json={"game": "connect4", "seed": 1, "opponent": "random"}))
    pid = position["id"]
    for _ in range(3):  # six stones in column 1 (the random opponent may add some)
        if position["board"]["legal"][0][0]:
            position = ok(client.post(f"/api/play/{pid}/move", json={"move": "1"}))
    while position["board"]["legal"][0][0] and not position["over"]:
        position = ok(client.post(f"/api/play/{pid}/move", json={"move": "1"}))
    if not position["over"]:
        refused(client.post(f"/api/play/{pid}/move", json={"move": "1"}), 400, "column 1 is full")
        assert ok(client.get(f"/api/play/{pid}"))["moves"] == position["moves"]


def test_second_seat_sees_the_opponent_open(client):
    position = ok(client.post("/api/play", json={"game": "tictactoe", "seat": 1, "opponent": "greedy", "seed": 0}))
    assert position["moves"] == 1 and position["turn"] == 1 and position["players"] == ["greedy", "you"]
    assert position["history"][0]["who"] == "greedy"


def test_watch_the_champion_with_its_search(client):
    frame = ok(client.post("/api/watch", json={"game": "triangle", "seed": 7}))
    assert frame["index"] == 0 and frame["decision"] is None
    engine = TriangleGame()
    state = engine.new_game(7)
    for i in range(1, 4):
        frame = ok(client.post(f"/api/watch/{frame['id']}/next"))
        d = frame["decision"]
        assert frame["index"] == i and d["who"] == "champion"
        a = d["analysis"]
        assert a["kind"] == "search" and isinstance(a["value"], float)
        heat = np.array(a["heat"])
        assert heat.shape == (engine.geometry.rows, engine.geometry.cols)
        assert heat.sum() == pytest.approx(1.0, abs=1e-3) and heat.min() >= 0
        assert a["top"][0]["share"] >= a["top"][-1]["share"] and len(a["top"]) <= 5
        state, _ = engine.place(state, tuple(int(v) for v in d["move"].split()))
        assert frame["position"]["board"]["filled"] == state.grid.tolist()
    # The same seed and player give the same game (the agents' draws come from the seed).
    again = ok(client.post("/api/watch", json={"game": "triangle", "seed": 7}))
    for _ in range(3):
        again = ok(client.post(f"/api/watch/{again['id']}/next"))
    assert again["position"]["board"] == frame["position"]["board"]


def test_watch_a_two_player_game_to_its_end(client):
    frame = ok(client.post("/api/watch", json={"game": "tictactoe", "player": "champion", "opponent": "random",
                                               "seat": 1, "seed": 4}))
    assert frame["position"]["players"] == ["random", "champion"]
    while not frame["position"]["over"]:
        frame = ok(client.post(f"/api/watch/{frame['id']}/next"))
        d = frame["decision"]
        assert (d["analysis"] is None) == (d["who"] == "random")
    assert frame["position"]["result"]["outcome"] in (0, 1)  # the champion never loses
    refused(client.post(f"/api/watch/{frame['id']}/next"), 409, "over")
    net = ok(client.post("/api/watch", json={"game": "connect4", "player": "champion-net", "seed": 1}))
    assert ok(client.post(f"/api/watch/{net['id']}/next"))["decision"]["analysis"]["kind"] == "network"


@pytest.mark.parametrize("path, body, status, needle", [
    ("/api/play", {"game": "chess"}, 400, "unknown game 'chess'"),
    ("/api/play", {"game": "connect4", "opponent": "/etc/passwd"}, 400, "unknown player '/etc/passwd'"),
    ("/api/play", {"game": "connect4", "opponent": "models/best.pt"}, 400, "unknown player"),
    ("/api/play", {"game": "connect4", "opponent": "net:../../x.pt"}, 400, "unknown player"),
    ("/api/play", {"game": "connect4", "opponent": "best"}, 400, "unknown player 'best' for connect4"),
    ("/api/play", {"game": "connect4", "seed": -1}, 422, "seed"),
    ("/api/play", {"game": "connect4", "seed": 2**64}, 422, "seed"),
    ("/api/play", {"game": "connect4", "seed": "seven"}, 422, "seed"),
    ("/api/play", {"game": "connect4", "seat": 2}, 422, "seat"),
    ("/api/play", {"game": "connect4", "colour": "red"}, 422, "unknown field 'colour'"),
    ("/api/play", {"game": ["connect4"]}, 422, "game"),
    ("/api/play", {}, 422, "game"),
    ("/api/play", {"game": "x" * 500}, 422, "game"),
    ("/api/watch", {"game": "triangle", "player": "gen-0001"}, 400, "unknown player 'gen-0001'"),
    ("/api/watch", {"game": "triangle", "analysis": "maybe"}, 422, "analysis"),
    ("/api/play/0123456789abcdef/move", {"move": "1"}, 404, "no game"),
    ("/api/watch/0123456789abcdef/next", None, 404, "no watched game"),
    ("/api/nothing", {}, 404, "no such API endpoint"),
])
def test_bad_requests_get_one_json_line(client, path, body, status, needle):
    refused(client.post(path, json=body), status, needle)


def test_malformed_bodies_and_hosts(client):
    pid = ok(client.post("/api/play", json={"game": "connect4"}))["id"]
    refused(client.post(f"/api/play/{pid}/move", content=b"{not json", headers={"content-type": "application/json"}),
            422, "not valid JSON")
    refused(client.post(f"/api/play/{pid}/move", json={"move": 4}), 422, "move")
    refused(client.post(f"/api/play/{pid}/move", json={"move": "1" * 201}), 422, "move")
    refused(client.post(f"/api/play/{pid}/move", json=["4"]), 422)
    refused(client.get("/api/info", headers={"host": "evil.example:8765"}), 400, "evil.example")
    # A play session is not a watched one, and the other way round.
    refused(client.post(f"/api/watch/{pid}/next"), 404, "no watched game")


def test_compare_on_a_project_without_records(client):
    view = ok(client.get("/api/compare"))
    assert view["generations"] == [] and view["curve"] is None and view["ladder"] is None
    assert {c["game"] for c in view["champions"]} == set(champions.available()) >= {"triangle", "connect4", "tictactoe"}
    assert all(c["summary"] for c in view["champions"])
    refused(client.get("/api/compare/curve.png"), 404, "no learning curve")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A small triangle project with one real arena and decision: generation 0, candidate 1."""
    from fastapi.testclient import TestClient

    root = tmp_path_factory.mktemp("recorded")
    (root / "params.yaml").write_text(dump_params(PARAMS))
    save_model(layout.model_path(root, 0), generation=0, seed=0)
    save_model(layout.best_path(root), generation=0, seed=0)
    candidate = save_model(layout.candidate_path(root, 1), generation=1, seed=1)
    assert candidate is not None
    arena.run(PARAMS, str(layout.candidate_path(root, 1)), str(layout.best_path(root)), generation=1,
              out=layout.arena_path(root, 1))
    promote.run(layout.arena_path(root, 1), layout.candidate_path(root, 1), layout.best_path(root),
                rejected=layout.rejected_path(root, 1), log=layout.promotions_log(root), generation=1)
    with TestClient(web_app.create_app(root), raise_server_exceptions=False) as test_client:
        yield test_client


def test_compare_and_the_projects_checkpoints(recorded):
    view = ok(recorded.get("/api/compare"))
    assert [g["generation"] for g in view["generations"]] == [1]
    png = recorded.get(view["curve"])
    assert png.status_code == 200 and png.content[:8] == PNG_SIGNATURE
    triangle = next(g for g in ok(recorded.get("/api/info"))["games"] if g["name"] == "triangle")
    names = [p["name"] for p in triangle["players"]]
    assert {"best", "gen-0001", "gen-0000"} <= set(names)
    connect4 = next(g for g in ok(recorded.get("/api/info"))["games"] if g["name"] == "connect4")
    assert "best" not in [p["name"] for p in connect4["players"]]  # the project trains the triangle only
    # The project's own rules (a small board) and its checkpoints play through the page.
    frame = ok(recorded.post("/api/watch", json={"game": "triangle", "player": "gen-0001", "seed": 2}))
    assert frame["position"]["board"]["rows"] == 5
    assert ok(recorded.post(f"/api/watch/{frame['id']}/next"))["decision"]["analysis"]["kind"] == "search"


def test_othello_through_the_api_with_its_pass(client):
    from tri.games.othello.game import OthelloGame

    default = ok(client.post("/api/play", json={"game": "othello", "seed": 2}))
    assert default["players"] == ["you", "champion"]  # a champion ships: it plays by default
    position = ok(client.post("/api/play", json={"game": "othello", "seed": 2, "opponent": "greedy"}))
    assert position["players"] == ["you", "greedy"]
    assert position["board"]["col_labels"] == list("abcdef")
    rng = np.random.default_rng(0)
    while not position["over"]:
        b = position["board"]
        cells = [b["moves"][r][c] for r in range(b["rows"]) for c in range(b["cols"]) if b["legal"][r][c]]
        passes = [m["move"] for m in b["extra"] if m["legal"]]
        assert bool(cells) != bool(passes)  # a pass is legal exactly when no placement is
        move = cells[int(rng.integers(len(cells)))] if cells else passes[0]
        position = ok(client.post(f"/api/play/{position['id']}/move", json={"move": move}))
    engine = OthelloGame()
    state = engine.from_moves(" ".join(h["move"] for h in position["history"]))
    assert engine.is_over(state) and position["board"]["cells"] == engine.board(state).tolist()
    black, white = engine.discs(state)
    assert position["result"]["outcome"] == int(np.sign(black - white))


def test_gobang_through_the_api_in_its_coordinates(client):
    from tri.games.kinrow.gobang import GobangGame

    position = ok(client.post("/api/play", json={"game": "gobang", "seed": 4, "opponent": "greedy"}))
    board = position["board"]
    assert (board["rows"], board["cols"], board["col_labels"]) == (9, 9, list("abcdefghi"))
    assert board["moves"][4][4] == "e5"
    refused(client.post(f"/api/play/{position['id']}/move", json={"move": "j1"}), 400, "j1 is off the board")
    rng = np.random.default_rng(1)
    while not position["over"]:
        b = position["board"]
        cells = [b["moves"][r][c] for r in range(b["rows"]) for c in range(b["cols"]) if b["legal"][r][c]]
        position = ok(client.post(f"/api/play/{position['id']}/move", json={"move": cells[int(rng.integers(len(cells)))]}))
    engine = GobangGame()
    state = engine.new()
    for h in position["history"]:
        state = engine.play(state, engine.parse_move(h["move"], state))[0]
    assert engine.is_over(state) and position["board"]["cells"] == engine.board(state).tolist()
    assert position["result"]["outcome"] == -1  # random clicks lose to greedy


@pytest.mark.parametrize("name", ["santorini", "pyrga"])
def test_move_and_build_and_stacked_pieces_through_the_api(client, name):
    """Santorini and Pyrga (boards of kind "pieces"): every legal move is offered as a path of
    clicks; random clicks through them play a whole game that the engine, replaying the
    history's notation, agrees with cell by cell; a broken move is refused and changes nothing."""
    from tri.config import recipe_params
    from tri.games import make_game
    from tri.web import pieces

    engine = make_game(recipe_params(name).game)
    position = ok(client.post("/api/play", json={"game": name, "seed": 3, "opponent": "greedy"}))
    assert position["kind"] == "pieces"
    refused(client.post(f"/api/play/{position['id']}/move", json={"move": "e9 e8"}), 400)
    assert ok(client.get(f"/api/play/{position['id']}"))["moves"] == 0
    rng = np.random.default_rng(5)
    while not position["over"]:
        b = position["board"]
        names = {n for row in b["names"] for n in row}
        assert b["moves"] and len({m["move"] for m in b["moves"]}) == len(b["moves"])
        for m in b["moves"]:
            assert m["path"][0] in names  # every move starts with a click on a cell
        move = b["moves"][int(rng.integers(len(b["moves"])))]
        position = ok(client.post(f"/api/play/{position['id']}/move", json={"move": move["move"]}))
    assert position["board"]["moves"] == []
    state = engine.new()
    for h in position["history"]:
        state = engine.play(state, engine.parse_move(h["move"], state))[0]
    assert engine.is_over(state)
    assert position["board"]["cells"] == pieces.VIEWS[name].cells(engine, state)
    first = engine.result(state)
    assert position["result"]["outcome"] == int(first)
    watched = ok(client.post("/api/watch", json={"game": name, "player": "greedy", "opponent": "random", "seed": 2}))
    watched = ok(client.post(f"/api/watch/{watched['id']}/next"))
    assert watched["position"]["board"]["last"]  # the cells the move changed
