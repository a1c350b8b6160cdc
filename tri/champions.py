"""Champions: the trained agent each game ships with, and its model card.

``models/champions/GAME.pt`` is a checkpoint (weights and their own config, no optimizer state;
loaded with ``weights_only=True`` like any other), ``GAME.json`` its model card: how it was
trained (the project's params in full, its git tag, the tri commit, generations, wall time,
machine), the sha256 of the checkpoint, how it plays (its search settings and budget), and each
evaluation with the exact command that produced it. ``GAME.md`` is the same card for people,
rendered from the JSON by :func:`render_card` (a test keeps the two equal).

The player specs ``champion`` (the game being played) and ``champion:GAME`` name the champion
wherever a player is accepted (:mod:`tri.player_specs`): it searches with the settings and budget on
its card, whatever the project's ``mcts`` section says, so it plays as it was measured.

``TRI_CHAMPIONS=DIR`` points at another folder of champions (default: the checkout's
``models/champions``).
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tri.atomic import sha256
from tri.config import MctsParams, Params, Runtime
from tri.errors import TriError

CHECKOUT_CHAMPIONS = Path(__file__).resolve().parents[1] / "models" / "champions"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Training(_Frozen):
    """How the champion was trained: a ``tri new`` project run with ``tri loop``."""

    project: str = Field(description="the command that made the project, e.g. tri new runs/connect4 --game connect4")
    loop: str = Field(description="the command(s) that trained it, e.g. tri loop --root runs/connect4 --minutes 160")
    tag: str = Field(description="the project's git tag of the champion's generation; dvc repro there re-creates it")
    project_commit: str = Field(description="the project's commit at that tag")
    tri_commit: str = Field(description="the tri commit the project was trained with")
    generations: int = Field(ge=0, description="generations run up to the tag")
    promoted: int = Field(ge=0, description="candidates promoted up to the tag")
    wall_minutes: float = Field(ge=0, description="wall time of those generations (sum of their durations)")
    machine: str = Field(description="the machine it trained on")


class Member(_Frozen):
    """One network of an ensemble champion (``tri ensemble``): its model id, generation, training."""

    model_id: str = Field(description="content hash of the member's weights as its project promoted them")
    generation: int = Field(ge=0)
    training: Training


class Evaluation(_Frozen):
    """One measurement: the command, run from the checkout's root, and what it printed/wrote."""

    title: str
    command: str
    result: dict = Field(description="the JSON the command writes with --out")


# (section, setting) -> its value before the setting existed, where today's default differs:
# searching and training were float32 (now auto), and training did not reanalyse (now on).
_BEFORE = {("mcts", "precision"): "float32", ("train", "precision"): "float32", ("train", "reanalyse"): False}


class ChampionCard(_Frozen):
    game: str
    checkpoint: str = Field(pattern=r"^[\w.-]+\.pt$", description="file name of the checkpoint, beside the card")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    model_id: str = Field(description="content hash of the weights (tri.net)")
    generation: int = Field(ge=0)
    simulations: int = Field(gt=0, description="search budget the champion plays with")
    determinizations: int = Field(1, gt=0, le=1024,
                                  description="trees per move the champion grows, each on its own sampled "
                                              "future (games with chance; arena.determinizations)")
    params: dict = Field(description="the project's params, in full: mcts is the champion's search, but for "
                                     "search below")
    search: dict = Field(default_factory=dict, description="mcts settings the champion plays with where they "
                                                           "differ from the params (its training), e.g. "
                                                           "{'solver': true}")
    training: Training = Field(description="how it was trained (an ensemble: its first member)")
    members: list[Member] = Field(default_factory=list,
                                  description="an ensemble champion's networks, in its checkpoint's order, each "
                                              "with its training (generation: the latest member's); empty for "
                                              "one network")
    evaluations: list[Evaluation]
    check: Evaluation = Field(description="a small slice of the evaluations that the tests replay")
    notes: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _settings_before_they_existed(cls, data):
        """A card written before a setting existed trained as the code then did, not as today's
        default says (:data:`_BEFORE`): its params say so."""
        if isinstance(data, dict) and isinstance(data.get("params"), dict):
            for (section, key), then in _BEFORE.items():
                values = data["params"].get(section)
                if isinstance(values, dict) and key not in values:
                    data = {**data, "params": {**data["params"], section: {**values, key: then}}}
        return data

    @property
    def mcts(self) -> MctsParams:
        return play_search(Params(**self.params).mcts, self.search)


def play_search(mcts: MctsParams, search: dict) -> MctsParams:
    """``mcts`` with a card's ``search`` settings over it; :class:`TriError` (one line) naming a
    setting that is not one of ``mcts``'s or a value it refuses."""
    unknown = sorted(set(search) - set(MctsParams.model_fields))
    if unknown:
        raise TriError(f"search setting {unknown[0]!r} is not an mcts setting ({', '.join(MctsParams.model_fields)})")
    try:
        return MctsParams(**{**mcts.model_dump(), **search})
    except ValidationError as exc:
        err = exc.errors()[0]
        raise TriError(f"search setting {'.'.join(map(str, err['loc']))}: {err['msg']}") from None


def champions_dir() -> Path:
    """The folder of champions: ``TRI_CHAMPIONS``, else the checkout's ``models/champions``."""
    folder = Runtime().champions
    return Path(folder) if folder else CHECKOUT_CHAMPIONS


def card_path(game: str, folder: Path | None = None) -> Path:
    return (folder or champions_dir()) / f"{game}.json"


def load_card(game: str, folder: Path | None = None) -> ChampionCard:
    """The card of ``game``'s champion; :class:`TriError` (one line) if there is none or it is
    malformed."""
    path = card_path(game, folder)
    if not path.is_file():
        raise TriError(f"no champion for {game}: {path} not found (train one: tri new DIR --game {game}, "
                       f"then tri loop --root DIR)")
    try:
        card = ChampionCard(**json.loads(path.read_text()))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, TypeError, ValidationError) as exc:
        first = " ".join(str(exc).split())[:160]
        raise TriError(f"champion card {path}: not a valid card ({first})") from None
    if card.game != game:
        raise TriError(f"champion card {path}: is for {card.game}, not {game}")
    return card


def champion(game: str, folder: Path | None = None) -> tuple[Path, ChampionCard]:
    """``(checkpoint path, card)`` of ``game``'s champion, the file checked against the card's
    sha256 (a replaced or damaged file is refused, not played)."""
    card = load_card(game, folder)
    path = card_path(game, folder).with_name(card.checkpoint)
    if not path.is_file():
        raise TriError(f"champion of {game}: {path} not found (its card is there)")
    if sha256(path) != card.sha256:
        raise TriError(f"champion of {game}: {path} does not match the sha256 on its card")
    return path, card


def available(folder: Path | None = None) -> list[str]:
    """Games with a champion card in the folder."""
    folder = folder or champions_dir()
    return sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []


def spec_game(text: str) -> str | None:
    """The game a spec names by itself: GAME of ``champion:GAME`` (also in ``net:`` and
    ``mcts:...:N``), else None."""
    for prefix in ("net:", "mcts:", ""):
        if text.startswith(prefix + "champion:"):
            return text[len(prefix) + len("champion:"):].split(":")[0] or None
    return None


def _search_text(search: dict) -> str:
    """How a card's play differs from its params' search, for its Markdown."""
    if not search:
        return ""
    return ", with " + ", ".join(f"`{k}: {json.dumps(v)}`" for k, v in sorted(search.items())) + " over it"


def made_of(card: ChampionCard) -> str:
    """``generation N``, or an ensemble's networks and their generations."""
    if not card.members:
        return f"generation {card.generation}"
    gens = [str(m.generation) for m in card.members]
    return f"an ensemble of {len(gens)} networks (generations {', '.join(gens[:-1])} and {gens[-1]})"


def render_card(card: ChampionCard) -> str:
    """The card as Markdown (``GAME.md``): what it is, how to use it, how it was trained and
    measured, with every command."""
    t = card.training
    lines = [
        f"# {card.game} champion",
        "",
        (f"`{card.checkpoint}`: {made_of(card)}, model id `{card.model_id}`, "
         f"sha256 `{card.sha256}`. It plays with {card.simulations} simulations of search "
         + (f"in each of {card.determinizations} trees per move, each on its own sampled future "
            if card.determinizations > 1 else "")
         + f"(`mcts` below{_search_text(card.search)})."),
        "",
        (f"Use it as the player `champion:{card.game}` (or `champion` where {card.game} is the game), e.g. "
         f"`tri arena --game {card.game} champion greedy`."),
        "",
        "## Training",
        "",
        *(_training_lines(t) if not card.members else _members_lines(card.members)),
        "## Evaluations",
        "",
    ]
    for e in card.evaluations:
        lines += [f"### {e.title}", "", "```bash", e.command, "```", "", _summary(e.result), ""]
    lines += ["## Check (replayed by the tests)", "", "```bash", card.check.command, "```", "",
              _summary(card.check.result), ""]
    if card.notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in card.notes] + [""]
    lines += ["## Params", "", "```json", json.dumps(card.params, indent=1), "```", ""]
    return "\n".join(lines)


def _training_lines(t: Training) -> list[str]:
    return [f"- project: `{t.project}`, trained with `{t.loop}`",
            (f"- tag `{t.tag}` (project commit `{t.project_commit}`; `dvc repro` there re-creates it), "
             f"tri commit `{t.tri_commit}`"),
            f"- {t.generations} generations, {t.promoted} promoted, {t.wall_minutes:.0f} minutes of generations",
            f"- machine: {t.machine}", ""]


def _members_lines(members: list[Member]) -> list[str]:
    lines = [f"An ensemble of {len(members)} networks (`tri ensemble`): its search averages their priors and "
             f"values at every position it evaluates. Each was trained as below (a project that went on from "
             f"another network says so, and its minutes count only its own generations).", ""]
    for k, m in enumerate(members, start=1):
        lines += [f"### Member {k}: generation {m.generation}, model id `{m.model_id}`", "",
                  *_training_lines(m.training)]
    return lines


def _summary(result: dict) -> str:
    """One evaluation's figures as Markdown: an eval table (rows), a triangle evaluation, or an
    arena result."""
    if "rows" in result:  # tri eval connect4 / tictactoe
        head = ("| file | positions | wrong | losing | value sign accuracy |\n"
                "| --- | ---: | ---: | ---: | ---: |")
        rows = [f"| {r['name']} | {r['positions']} | {r['wrong']} ({_pct(r['wrong_rate'])}) "
                f"| {r['losing']} ({_pct(r['losing_rate'])}) "
                f"| {_pct(r.get('value_sign_accuracy'))} |" for r in result["rows"]]
        tail = [] if result.get("game") == "connect4" else \
            ["", f"never loses: {'yes' if result.get('never_loses') else 'no'}"]
        return "\n".join([head, *rows, *tail])
    if "baseline" in result:  # tri eval triangle
        return "\n".join([
            "| player | mean score [95% interval] | mean steps |", "| --- | ---: | ---: |",
            f"| {result['player']} | {result['mean']:.2f} [{result['low']:.2f}, {result['high']:.2f}] "
            f"| {result['mean_steps']:.1f} |",
            f"| {result['baseline']} | {result['baseline_mean']:.2f} [{result['baseline_low']:.2f}, "
            f"{result['baseline_high']:.2f}] | {result['baseline_mean_steps']:.1f} |",
            "",
            f"paired difference {result['diff_mean']:+.2f} [{result['diff_low']:+.2f}, {result['diff_high']:+.2f}] "
            f"on {result['games']} seeds; seeds won / tied / lost: {result['wins']} / {result['ties']} / "
            f"{result['losses']}"])
    if "a" in result and "b" in result:  # tri arena (two-player: score rates)
        a, b = result["a"], result["b"]
        return (f"{a['name']} against {b['name']}, {result['games']} games: {result['wins']} wins, "
                f"{result['ties']} draws, {result['losses']} losses; score rate {a['mean']:.3f} "
                f"[{a['low']:.3f}, {a['high']:.3f}]")
    return "\n".join(f"- {k}: {_fmt(v)}" for k, v in result.items() if isinstance(v, (int, float, str)))


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _fmt(x) -> str:
    return f"{x:.2f}" if isinstance(x, float) else str(x)
