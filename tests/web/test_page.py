"""The web page in a real headless Chromium (Playwright driving Debian's ``/usr/bin/chromium``): a
person's clicks play the triangle puzzle to game over, Connect Four to a result, and Santorini and
Pyrga by their paths of clicks; an illegal placement shows the engine's message and the game goes
on; the champion is watched move by move with its search; and the compare view opens.

Without Chromium or Playwright the module is skipped, unless ``TRI_REQUIRE_BROWSER`` is set (CI
sets it, after installing Chromium): then it fails. ``TRI_WEB_SCREENSHOTS=DIR`` saves a
screenshot of each view there (the README's pictures)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from tri.champions import available, load_card
from tri.games.triangle.game import TriangleGame

CHROMIUM = os.environ.get("TRI_CHROMIUM", "/usr/bin/chromium")
TIMEOUT_MS = 60_000  # a champion's move takes a second or two on a busy 2-core machine


def _missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[dev]')"
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    return None


@pytest.fixture(scope="module")
def browser():
    why = _missing()
    if why is not None:
        if os.environ.get("TRI_REQUIRE_BROWSER"):
            pytest.fail(f"TRI_REQUIRE_BROWSER is set but {why}")
        pytest.skip(why)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, web_url):
    context = browser.new_context(viewport={"width": 1250, "height": 860})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("requestfailed", lambda request: errors.append(f"request failed: {request.url}"))
    page.on("request", lambda request: None if request.url.startswith((web_url, "data:"))
            else errors.append(f"request to another host: {request.url}"))
    page.goto(web_url)
    page.wait_for_selector("body[data-ready=true]")
    yield page
    context.close()
    assert errors == [], errors


def until(page, expression: str, timeout: float = TIMEOUT_MS / 1000) -> None:
    """Wait until ``expression`` is true in the page. Polled from here: Playwright's own
    ``wait_for_function`` evaluates a string, which the page's Content-Security-Policy forbids."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(f"() => Boolean({expression})"):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {expression}")
        time.sleep(0.05)


def shot(page, name: str) -> None:
    folder = os.environ.get("TRI_WEB_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / name), full_page=True)


def position(page) -> dict:
    return page.evaluate("window.triPlay")


def wait_moves(page, moves: int) -> dict:
    until(page, f"window.triPlay && window.triPlay.moves >= {moves}")
    return position(page)


def new_game(page, game: str, seed: int, opponent: str | None = None) -> dict:
    page.select_option("#play-game", game)
    until(page, f"window.triPlay && window.triPlay.game === {game!r}")
    if opponent:
        page.select_option("#play-opponent", opponent)
    page.fill("#play-seed", str(seed))
    old = position(page)["id"]
    page.click("#play-new")
    until(page, f"window.triPlay.id !== {old!r} && window.triPlay.seed === {seed}")
    return position(page)


def test_triangle_by_clicks_to_game_over_scores_as_the_engine(page):
    p = new_game(page, "triangle", 3)
    assert p["seed"] == 3 and page.inner_text("#play-seed-shown") == "3"
    while not p["over"]:
        slot, r, c = p["board"]["legal"][0]
        page.click(f"#play-slots [data-slot='{slot}']")
        page.hover(f"#play-board polygon.cell[data-r='{r}'][data-c='{c}']")
        page.wait_for_selector("#play-board .ghost.fits")  # the ghost, green: it fits here (drawn on mousemove)
        if p["moves"] == 8:
            shot(page, "web-play-triangle.png")
        page.click(f"#play-board polygon.cell[data-r='{r}'][data-c='{c}']")
        p = wait_moves(page, p["moves"] + 1)
    engine = TriangleGame()
    state, score, lines = engine.new_game(3), 0.0, 0
    for move in p["history"]:
        state, step = engine.place(state, tuple(int(v) for v in move["move"].split()))
        score += step.reward
        lines += step.lines
    assert state.game_over and p["moves"] == len(p["history"]) >= 5
    assert float(page.inner_text("#play-score")) == pytest.approx(score, abs=1e-3)
    assert int(page.inner_text("#play-lines")) == lines
    assert page.inner_text("#play-result") == "game over"
    assert "game over" in page.inner_text("#play-message")


def test_an_illegal_placement_is_refused_and_the_game_goes_on(page):
    p = new_game(page, "triangle", 7)
    board = p["board"]
    legal = {tuple(m) for m in board["legal"]}
    bad = next((r, c) for r in range(board["rows"]) for c in range(board["cols"])
               if board["playable"][r][c] and (0, r, c) not in legal)
    page.click("#play-slots [data-slot='0']")
    page.hover(f"#play-board polygon.cell[data-r='{bad[0]}'][data-c='{bad[1]}']")
    page.wait_for_selector("#play-board .ghost.nofit")  # red: it does not fit (drawn on mousemove)
    page.click(f"#play-board polygon.cell[data-r='{bad[0]}'][data-c='{bad[1]}']")
    page.wait_for_selector("#play-message.error")
    assert page.inner_text("#play-message").startswith(f"illegal move 0 {bad[0]} {bad[1]}")
    assert position(page)["moves"] == 0
    slot, r, c = board["legal"][0]
    page.click(f"#play-slots [data-slot='{slot}']")
    page.click(f"#play-board polygon.cell[data-r='{r}'][data-c='{c}']")
    assert wait_moves(page, 1)["moves"] == 1
    assert "error" not in (page.get_attribute("#play-message", "class") or "")


def test_connect4_against_greedy_to_a_result(page):
    p = new_game(page, "connect4", 5, opponent="greedy")
    assert p["players"] == ["you", "greedy"]
    while not p["over"]:
        column = p["board"]["legal"][0].index(True)
        page.click(f"#play-board rect.cell[data-r='0'][data-c='{column}']")
        p = wait_moves(page, p["moves"] + 1)  # the answer holds the reply too
    assert p["result"]["text"] in ("you win", "greedy wins", "a draw")
    assert page.inner_text("#play-result") == p["result"]["text"]
    discs = page.locator("#play-board circle.disc1, #play-board circle.disc2").count()
    assert discs == p["moves"]
    shot(page, "web-play-connect4.png")


def test_watch_three_moves_of_the_champion_with_its_search(page):
    page.click("#tab-watch")
    page.fill("#watch-seed", "7")
    page.click("#watch-start")
    page.wait_for_selector(".watch-panel")
    for i in range(1, 4):
        page.click("#watch-forward")
        until(page, f"document.querySelector('#watch-counter').textContent.startsWith('{i}')")
    panel = page.locator(".watch-panel").first
    assert panel.locator(".panel-moves").inner_text() == "3"
    assert "champion played" in panel.locator(".panel-message").inner_text()
    panel.locator("polygon.heat").first.wait_for()  # the search's view of the next move
    panel.locator(".top li").nth(4).wait_for()
    assert panel.locator(".top li").count() == 5
    float(panel.locator(".panel-value").inner_text())  # a value estimate
    shot(page, "web-watch.png")
    page.click("#watch-back")
    until(page, "document.querySelector('#watch-counter').textContent.startsWith('2')")
    assert panel.locator(".panel-moves").inner_text() == "2"


def test_side_by_side_on_the_same_seed(page):
    page.click("#tab-watch")
    page.check("#watch-side")
    page.select_option("#watch-player2", "greedy")
    page.fill("#watch-seed", "11")
    page.click("#watch-start")
    until(page, "document.querySelectorAll('.watch-panel').length === 2")
    for i in range(1, 3):
        page.click("#watch-forward")
        until(page, f"document.querySelector('#watch-counter').textContent.startsWith('{i}')")
    titles = page.locator(".watch-panel h3").all_inner_texts()
    assert titles == ["champion — seed 11", "greedy — seed 11"]
    assert page.locator(".watch-panel .panel-moves").all_inner_texts() == ["2", "2"]
    shot(page, "web-side-by-side.png")


def test_compare_view_opens(page):
    page.click("#tab-compare")
    until(page, "document.querySelector('#compare-title').textContent.startsWith('Compare: ')")
    assert "no generations yet" in page.inner_text("#compare-curve")
    page.wait_for_selector("#compare-champions table")
    games = page.locator("#compare-champions tbody tr td:first-child").all_inner_texts()
    assert sorted(games) == sorted(available())  # every champion that ships
    searches = page.locator("#compare-champions tbody tr td:nth-child(3)").all_inner_texts()
    card = load_card("triangle")
    trees = f" x {card.determinizations} trees" if card.determinizations > 1 else ""  # one: not said
    assert dict(zip(games, searches))["triangle"] == f"{card.simulations} simulations{trees}"
    shot(page, "web-compare-empty.png")


def test_santorini_and_pyrga_by_clicks_through_their_paths(page):
    """A move of several clicks: Santorini's worker, move and build cells; Pyrga's cell, then the
    piece's button. Each click marks the cells that may come next; the last one sends the move."""
    p = new_game(page, "santorini", 3, opponent="random")
    for _ in range(3):
        if p["over"]:
            break
        move, before = p["board"]["moves"][0], p["moves"]
        for i, token in enumerate(move["path"]):
            page.click(f"#play-board rect.hit[data-name='{token}']")
            if i < len(move["path"]) - 1:  # picked so far, and what may come next, are marked
                assert page.locator("#play-board rect.hit.picked").count() == i + 1
                assert page.locator("#play-board rect.hit.next").count() >= 1
        p = wait_moves(page, before + 1)
        assert p["history"][before]["move"] == move["move"]
    workers = page.locator("#play-board circle.piece").count()
    assert workers == 4
    shot(page, "web-play-santorini.png")

    p = new_game(page, "pyrga", 2, opponent="greedy")
    first = p["moves"]
    move = next(m for m in p["board"]["moves"] if m["path"][1].startswith("arrow"))
    page.click(f"#play-board rect.hit[data-name='{move['path'][0]}']")
    page.click(f"#play-extra button[data-move='{move['path'][1]}']")
    p = wait_moves(page, first + 1)
    assert p["history"][0]["move"] == move["move"]
    assert page.locator("#play-board polygon.piece").count() >= 1  # the arrow
    assert "towers" in page.inner_text("#play-facts")
    shot(page, "web-play-pyrga.png")
