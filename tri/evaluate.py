"""How close a player is to perfect play (``tri eval connect4``, ``tri eval tictactoe``).

**Connect Four**: Pascal Pons' test positions (``../shared/connect4-testsets/Test_*``: lines
``moves score``, 1-based columns; ``Test_*.moves.tsv`` beside each gives the exact score of every
move). **m,n,k-games**: every non-terminal position reachable from the empty board by legal play,
solved exactly by minimax (:func:`solve`).

Per file (Connect Four) or over all reachable positions (m,n,k), with the player's move in each
position:

- **wrong**: the move's game-theoretic outcome is worse than the position's: it loses a won or
  drawn position, or draws a won one (Pons' README). In an m,n,k-game, where values are only
  win/draw/loss, this is exactly "not among the minimax-optimal moves".
- **losing**: the move turns a won or drawn position into a lost one (a subset of wrong). A
  deterministic player that makes no losing move from any reachable position **never loses**,
  whoever it plays and from wherever: the opponent's moves cannot improve a position for the
  side that is not moving, so its value stays won-or-drawn to the end. Conversely one losing
  move is a position from which a perfect opponent beats it. ``never_loses`` is ``losing == 0``
  over every reachable position.
- **perfect** (Connect Four only): the move's exact score equals the position's (the fastest
  win, or the slowest loss).
- **value sign accuracy** (players with a network): over the *decided* positions (score not 0),
  the share where the sign of the network's value (from the side to move) equals the sign of the
  score; a value of exactly 0 counts as wrong. Drawn positions have no sign and are left out of
  it; they count in the **value outcome accuracy**, over all positions: the value rounded to the
  nearest outcome (-1, 0 or +1; ``|v| <= 0.5`` reads as a draw) equals the position's outcome.

A position's value is what the network alone says (``evaluate``), also when the player searches:
the search's root value is not the value head.

Results come back as an :class:`EvalResult`; its :meth:`EvalResult.metrics` are the flat
numbers a tracker (MLflow, later) can log.

A network player runs on the device ``TRI_DEVICE`` resolves to (:func:`tri.device.resolve_device`),
torch on one thread as in the arena (:func:`tri.device.torch_threads`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from tri import atomic
from tri.config import Params, Runtime
from tri.device import resolve_device, torch_threads
from tri.errors import TriError
from tri.games.kinrow.connect4 import Connect4Config, Connect4Game
from tri.games.kinrow.mnk import MnkGame
from tri.players import make_agent, parse_spec

DEFAULT_TESTSETS = Path("../shared/connect4-testsets")
MAX_POSITIONS = 500_000  # exhaustive m,n,k solving stops here (Tic-Tac-Toe has 5,478 positions)
BATCH = 256  # positions per agent call (the search batch)


@dataclass
class EvalRow:
    """One file (Connect Four) or the whole game (m,n,k): counts over ``positions``; the value
    counts are None for a player without a network, ``perfect`` for m,n,k."""

    name: str
    positions: int
    wrong: int
    losing: int
    perfect: int | None = None
    value_decided: int | None = None
    value_sign_correct: int | None = None
    value_outcome_correct: int | None = None

    @property
    def wrong_rate(self) -> float:
        return self.wrong / self.positions if self.positions else float("nan")

    @property
    def losing_rate(self) -> float:
        return self.losing / self.positions if self.positions else float("nan")

    @property
    def perfect_rate(self) -> float | None:
        return None if self.perfect is None or not self.positions else self.perfect / self.positions

    @property
    def value_sign_accuracy(self) -> float | None:
        if self.value_sign_correct is None or not self.value_decided:
            return None
        return self.value_sign_correct / self.value_decided

    @property
    def value_outcome_accuracy(self) -> float | None:
        if self.value_outcome_correct is None or not self.positions:
            return None
        return self.value_outcome_correct / self.positions

    def to_dict(self) -> dict:
        return {**asdict(self), "wrong_rate": self.wrong_rate, "losing_rate": self.losing_rate,
                "perfect_rate": self.perfect_rate, "value_sign_accuracy": self.value_sign_accuracy,
                "value_outcome_accuracy": self.value_outcome_accuracy}


@dataclass
class EvalResult:
    """``game``, ``player`` (its spec), ``simulations`` (search budget, None without search),
    one row per file, ``seconds``."""

    game: str
    player: str
    simulations: int | None
    rows: list[EvalRow] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def never_loses(self) -> bool:
        return all(r.losing == 0 for r in self.rows)

    def to_dict(self) -> dict:
        return {"game": self.game, "player": self.player, "simulations": self.simulations,
                "never_loses": self.never_loses, "seconds": self.seconds,
                "rows": [r.to_dict() for r in self.rows]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def metrics(self) -> dict[str, float]:
        """Flat ``{"<row>/<metric>": value}`` for a tracker (the hook for MLflow logging)."""
        out: dict[str, float] = {}
        for r in self.rows:
            for key in ("wrong_rate", "losing_rate", "perfect_rate", "value_sign_accuracy",
                        "value_outcome_accuracy"):
                value = getattr(r, key)
                if value is not None:
                    out[f"{r.name}/{key}"] = float(value)
        out["never_loses"] = float(self.never_loses)
        return out


# ---- scoring one batch of positions --------------------------------------------------------------


def score_positions(name: str, states: np.ndarray, score: np.ndarray, move_scores: np.ndarray,
                    agent, evaluate=None, batch: int = BATCH) -> EvalRow:
    """Ask ``agent`` for a move in each of ``states [P, L]`` and grade it against ``score [P]``
    (the position's exact score from the side to move; its sign is the outcome) and
    ``move_scores [P, A]`` (each action's exact score from the same side; NaN = illegal).
    ``evaluate``: the network's evaluator, for the value accuracies (None: not measured)."""
    actions = np.empty(len(states), np.int64)
    values = np.empty(len(states), np.float64) if evaluate is not None else None
    moves = np.bitwise_count(states[:, 0] | states[:, 1]).astype(np.int64)  # stones = moves played
    for start in range(0, len(states), batch):
        part = slice(start, start + batch)
        actions[part] = agent.act(states[part], moves[part]).actions
        if evaluate is not None:
            values[part] = evaluate(states[part])[2]
    legal = (actions >= 0) & (actions < move_scores.shape[1])
    chosen = np.full(len(states), np.nan)
    chosen[legal] = move_scores[np.flatnonzero(legal), actions[legal]]
    illegal = np.isnan(chosen)
    outcome = np.sign(score)
    wrong = illegal | (np.sign(np.nan_to_num(chosen)) < outcome)
    losing = (outcome >= 0) & (illegal | (np.nan_to_num(chosen) < 0))
    row = EvalRow(name, len(states), int(wrong.sum()), int(losing.sum()), int((chosen == score).sum()))
    if values is not None:
        decided = outcome != 0
        nearest = np.where(values > 0.5, 1, np.where(values < -0.5, -1, 0))
        row.value_decided = int(decided.sum())
        row.value_sign_correct = int((np.sign(values[decided]) == outcome[decided]).sum())
        row.value_outcome_correct = int((nearest == outcome).sum())
    return row


# ---- players -------------------------------------------------------------------------------------


def make_player(player, game, params: Params, *, simulations: int | None, seed: int, device: str):
    """``(agent, evaluate or None, name, simulations or None)`` for a player spec (see
    :mod:`tri.players`) or an agent object (anything with ``act`` and ``name``, e.g. a test
    oracle). ``simulations`` sets the search budget of a bare checkpoint path."""

    if not isinstance(player, str):
        return player, getattr(player, "evaluate", None), getattr(player, "name", type(player).__name__), None
    spec = parse_spec(player, game=game.name)
    if simulations is not None:
        if spec.kind != "mcts":
            raise TriError(f"--simulations applies to a checkpoint played with search "
                           f"(PATH or mcts:PATH:N), not to {player!r}")
        if spec.simulations is not None and spec.simulations != simulations:
            raise TriError(f"player {player!r} already sets {spec.simulations} simulations; "
                           f"--simulations {simulations} disagrees")
        spec = replace(spec, simulations=simulations)
    rng = np.random.default_rng(seed)
    agent = make_agent(spec, game, params.mcts, params.arena, rng, device, batch=BATCH)
    sims = (spec.simulations or params.arena.simulations) if spec.kind == "mcts" else None
    return agent, getattr(agent, "evaluate", None), player, sims


# ---- Connect Four: Pons' test sets ---------------------------------------------------------------


@dataclass(frozen=True)
class TestSet:
    """A Pons test file: ``moves`` (1-based column strings), ``score [P]`` (exact, side to move),
    ``move_scores [P, 7]`` (exact score of each column, NaN when the column is full)."""

    __test__ = False  # not a pytest test class
    name: str
    moves: list[str]
    score: np.ndarray
    move_scores: np.ndarray


def find_testsets(files: Sequence[Path], testsets: Path = DEFAULT_TESTSETS) -> list[Path]:
    """The test files to read: ``files`` as given (a ``.moves.tsv`` path names its test file),
    or every ``Test_*`` file in ``testsets``."""
    if files:
        return [Path(str(f).removesuffix(".moves.tsv")) for f in files]
    testsets = Path(testsets)
    if not testsets.is_dir():
        raise TriError(f"connect4 test sets: folder {testsets} not found (give --testsets DIR or files)")
    paths = sorted(p for p in testsets.glob("Test_*") if not p.name.endswith(".moves.tsv"))
    if not paths:
        raise TriError(f"connect4 test sets: no Test_* files in {testsets}")
    return paths


def load_testset(path: Path, limit: int | None = None, columns: int = 7) -> TestSet:
    """Read ``path`` (``moves score`` lines) and ``path.moves.tsv`` beside it, checking that they
    describe the same positions; the first ``limit`` positions. :class:`TriError` names the file
    and line of any problem."""
    path = Path(path)
    tsv = path.with_name(path.name + ".moves.tsv")
    for p in (path, tsv):
        if not p.is_file():
            raise TriError(f"connect4 test set {p}: file not found")
    plain = []
    for i, line in enumerate(_lines(path), 1):
        parts = line.split()
        if len(parts) != 2 or not parts[0].isdigit() or not _is_int(parts[1]):
            raise TriError(f"{path}:{i}: expected 'moves score' (e.g. '4453 -2'), got {line[:60]!r}")
        plain.append((parts[0], int(parts[1])))
    moves, score, move_scores = [], [], []
    for i, line in enumerate(_lines(tsv), 1):
        if line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 2 + columns or not parts[0].isdigit() or not _is_int(parts[1]) \
                or not all(p == "" or _is_int(p) for p in parts[2:]):
            raise TriError(f"{tsv}:{i}: expected moves, score and {columns} column scores, tab-separated")
        moves.append(parts[0])
        score.append(int(parts[1]))
        move_scores.append([float(p) if p else np.nan for p in parts[2:]])
    if [m for m, _ in plain] != moves or [s for _, s in plain] != score:
        raise TriError(f"{tsv}: its positions or scores differ from {path}")
    if limit is not None:
        moves, score, move_scores = moves[:limit], score[:limit], move_scores[:limit]
    return TestSet(path.name, moves, np.array(score, np.float64),
                   np.array(move_scores, np.float64).reshape(-1, columns))


def _lines(path: Path) -> list[str]:
    try:
        return [line.rstrip("\r\n") for line in path.read_text().splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError) as exc:
        raise TriError(f"connect4 test set {path}: cannot be read ({exc})") from None


def _is_int(text: str) -> bool:
    return text.lstrip("+-").isdigit()


def run_connect4(params: Params, player, files: Sequence[Path] = (), *, testsets: Path = DEFAULT_TESTSETS,
                 limit: int | None = None, simulations: int | None = None, seed: int = 0,
                 out: Path | None = None, runtime: Runtime | None = None) -> EvalResult:
    """Grade ``player`` (a spec or an agent) on Pons' test files; write ``out`` (JSON) if given."""

    start = time.perf_counter()
    config = params.game.connect4
    if config != Connect4Config():
        raise TriError(f"Pons' test sets are 7 x 6 Connect Four positions; params.yaml's game.connect4 is "
                       f"{config.cols} x {config.rows}, connect {config.connect}")
    game = Connect4Game(config)
    sets = [load_testset(p, limit) for p in find_testsets(files, testsets)]  # bad files fail first
    agent, evaluate, name, sims = make_player(player, game, params, simulations=simulations, seed=seed,
                                              device=resolve_device((runtime or Runtime()).device))
    result = EvalResult("connect4", name, sims)
    with torch_threads():  # as in the arena: results must not depend on the machine
        for ts in sets:
            states = np.stack([_position(game, ts, i) for i in range(len(ts.moves))]) if ts.moves \
                else np.zeros((0, game.state_size), np.uint64)
            result.rows.append(score_positions(ts.name, states, ts.score, ts.move_scores, agent, evaluate))
    result.seconds = time.perf_counter() - start
    if out is not None:
        atomic.write_text(out, result.to_json() + "\n")
    return result


def _position(game, ts: TestSet, i: int) -> np.ndarray:
    try:
        state = game.from_moves(ts.moves[i])
    except ValueError as exc:
        raise TriError(f"{ts.name}: position {i + 1} ({ts.moves[i]}): {exc}") from None
    legal = game.legal(state[None])[0]
    if not np.array_equal(legal, ~np.isnan(ts.move_scores[i])):
        raise TriError(f"{ts.name}: position {i + 1} ({ts.moves[i]}): its column scores do not match "
                       f"the columns that are open")
    return state


# ---- m,n,k-games: every reachable position, solved -----------------------------------------------


@dataclass(frozen=True)
class Solution:
    """Every non-terminal position reachable from the empty board: ``states [P, L]`` (by number
    of stones, then by words), ``value [P]`` (+1 won, 0 drawn, -1 lost for the side to move, with
    perfect play), ``action_values [P, A]`` (the value of each legal action for the side to move:
    its reward if the game ends, else minus the next position's value; NaN = illegal)."""

    states: np.ndarray
    value: np.ndarray
    action_values: np.ndarray


def solve(game, max_positions: int = MAX_POSITIONS) -> Solution:
    """Minimax over every reachable position, level by level (positions with ``d`` stones), with
    the game's own batched ``step``: expand every legal move, keep the distinct non-terminal
    children, then back the values up from the last level. :class:`TriError` past
    ``max_positions``."""
    too_many = TriError(f"{game.name} {game.rows}x{game.cols} k={game.k}: more than {max_positions:,} "
                        f"reachable positions; the exhaustive check is for small boards")
    levels = [game.initial(np.zeros(1, np.int64))]
    edges = []
    total = 1
    while True:
        states = levels[-1]
        b, a = np.nonzero(game.legal(states))
        if b.size > 4 * max_positions:  # before stepping them: memory grows with the moves
            raise too_many
        t = game.step(states[b], a)
        live = ~t.terminal
        children, inverse = np.unique(t.states[live], axis=0, return_inverse=True)
        edges.append((b, a, t.reward, live, inverse.reshape(-1)))
        total += len(children)
        if total > max_positions:
            raise too_many
        if not len(children):
            break
        levels.append(children)
    values: list[np.ndarray] = [np.zeros(0)] * len(levels)
    action_values = [np.zeros(0)] * len(levels)
    for d in range(len(levels) - 1, -1, -1):
        b, a, reward, live, inverse = edges[d]
        q = reward.astype(np.float64).copy()
        if live.any():
            q[live] -= values[d + 1][inverse]
        av = np.full((len(levels[d]), game.num_actions), np.nan)
        av[b, a] = q
        action_values[d] = av
        values[d] = np.nanmax(av, axis=1)
    return Solution(np.concatenate(levels), np.concatenate(values), np.concatenate(action_values))


def run_tictactoe(params: Params, player, *, simulations: int | None = None, seed: int = 0,
                  out: Path | None = None, runtime: Runtime | None = None,
                  max_positions: int = MAX_POSITIONS) -> EvalResult:
    """Grade ``player`` on every reachable position of ``params.game.tictactoe``; write ``out``."""

    start = time.perf_counter()
    game = MnkGame(params.game.tictactoe)
    solution = solve(game, max_positions)
    agent, evaluate, name, sims = make_player(player, game, params, simulations=simulations, seed=seed,
                                              device=resolve_device((runtime or Runtime()).device))
    result = EvalResult("tictactoe", name, sims)
    c = game.config
    with torch_threads():  # as in the arena: results must not depend on the machine
        result.rows.append(score_positions(f"{c.m}x{c.n} k={c.k}", solution.states, solution.value,
                                           solution.action_values, agent, evaluate))
    result.rows[0].perfect = None  # win/draw/loss values: "perfect" would be "not wrong"
    result.seconds = time.perf_counter() - start
    if out is not None:
        atomic.write_text(out, result.to_json() + "\n")
    return result


def run(params: Params, game: str, player, **kwargs) -> EvalResult:
    """``run_connect4`` or ``run_tictactoe`` by name."""
    if game == "connect4":
        return run_connect4(params, player, **kwargs)
    if game == "tictactoe":
        return run_tictactoe(params, player, **kwargs)
    raise TriError(f"no evaluation for the game {game!r} (tri evaluates connect4 and tictactoe)")


# ---- output --------------------------------------------------------------------------------------


def format_table(result: EvalResult) -> str:
    """A plain-text table, one row per file, and the never-loses verdict."""
    def pct(x: float | None) -> str:
        return "-" if x is None else f"{100 * x:.1f}%"

    head = ["positions", "wrong", "losing", "perfect", "value sign", "value outcome"]
    width = max([len("file")] + [len(r.name) for r in result.rows])
    lines = [f"{result.game}: {result.player}"
             + (f" ({result.simulations} simulations)" if result.simulations else ""),
             f"{'file':<{width}}  "
             + "  ".join(f"{h:>13}" if h.startswith("value") else f"{h:>9}" for h in head)]
    for r in result.rows:
        cells = [f"{r.positions:>9}", f"{pct(r.wrong_rate):>9}", f"{pct(r.losing_rate):>9}",
                 f"{pct(r.perfect_rate):>9}", f"{pct(r.value_sign_accuracy):>13}",
                 f"{pct(r.value_outcome_accuracy):>13}"]
        lines.append(f"{r.name:<{width}}  " + "  ".join(cells))
    losing = sum(r.losing for r in result.rows)
    lines.append("never loses: yes" if result.never_loses else
                 f"never loses: no ({losing} moves turn a won or drawn position into a lost one)")
    return "\n".join(lines)
