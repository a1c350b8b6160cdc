"""``tri champions publish GAME --project DIR``: make a project's best network the shipped champion
of its game, with a model card whose every figure comes from a command written on it.

The project must be one ``tri new`` made and ``tri loop`` trained (git + DVC, a tag per
generation). Publishing:

1. takes the checkpoint of the generation that was promoted last (or ``--generation``), checks
   its content hash against the project's promotion log, and writes it without its optimizer
   state (a smaller file that loads the same network);
2. reads the training record: the tag ``tri/gen-NNNN`` and its commit, generations and
   promotions up to it, and the wall time of those generations (their ``9 timing/generation seconds`` in
   the project's MLflow store);
3. runs each evaluation command of the game (:data:`EVALUATIONS`, and the small :data:`CHECKS`
   slice the tests replay) as a separate ``tri`` process from the checkout's root, with
   ``TRI_CHAMPIONS`` pointing at the staged champion, and keeps the JSON each writes;
4. writes ``GAME.pt``, ``GAME.json`` and ``GAME.md`` (:func:`tri.champions.render_card`), each
   under a temporary name, renamed into place only when everything succeeded.

``tri champions remeasure GAME`` (:func:`remeasure`) runs steps 3 and 4 again for the shipped
champion with a new search (settings, budget, trees), keeping its checkpoint and training record:
a champion's search can improve after its project is gone.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tri import atomic, layout
from tri.atomic import sha256
from tri.champions import (ChampionCard, Evaluation, Member, Training, card_path, champion, champions_dir,
                           play_search, render_card)
from tri.config import MctsParams, Params, project_params
from tri.errors import TriError
from tri.games import make_game
from tri.ensemble import ensemble_of, members_of
from tri.net import Checkpoint, load_checkpoint, save_checkpoint
from tri.players import trees_per_move
from tri.record import mlstore
from tri.record.lineage import started_from, started_with, taught_by
from tri.record.outputs import GENERATION_SECONDS, read_metric
from tri.record.versioning import git_run

CHECKOUT = Path(__file__).resolve().parents[2]

# Per game: (title, command) run from the checkout's root; "--out FILE" is added when run.
EVALUATIONS: dict[str, list[tuple[str, str]]] = {
    "triangle": [
        ("200 seeds training never used, paired against greedy", "tri eval triangle champion --games 200"),
        ("the same seeds with one tree of 32 simulations, the arena's budget (issue 16)",
         "tri eval triangle mcts:champion:32x1 --games 200"),
    ],
    "connect4": [
        ("Pascal Pons' test sets, with the champion's search", "tri eval connect4 champion"),
        ("Pascal Pons' test sets, the network alone", "tri eval connect4 net:champion:connect4"),
        ("against greedy, both colours", "tri arena champion:connect4 greedy --games 50"),
    ],
    "tictactoe": [
        ("every reachable position against minimax, with the champion's search", "tri eval tictactoe champion"),
        ("every reachable position, the network alone", "tri eval tictactoe net:champion:tictactoe"),
        ("against greedy, both colours", "tri arena champion:tictactoe greedy --games 50"),
    ],
    "gobang": [  # issue 19's yardsticks, 100 seeds x both colours, from sampled 4-move openings
        ("against greedy, both colours, 4-move openings",
         "tri arena champion:gobang greedy --games 100 --openings 4"),
        ("against random, both colours, 4-move openings",
         "tri arena champion:gobang random --games 100 --openings 4"),
        ("against uct:1000, both colours, 4-move openings",
         "tri arena champion:gobang uct:1000 --games 100 --openings 4"),
    ],
    "othello": [  # issue 19's yardsticks, 100 seeds x both colours, from sampled 4-move openings
        ("against greedy, both colours, 4-move openings",
         "tri arena champion:othello greedy --games 100 --openings 4"),
        ("against random, both colours, 4-move openings",
         "tri arena champion:othello random --games 100 --openings 4"),
        ("against alphabeta:3, both colours, 4-move openings",
         "tri arena champion:othello alphabeta:3 --games 100 --openings 4"),
        ("against uct:1000, both colours, 4-move openings",
         "tri arena champion:othello uct:1000 --games 100 --openings 4"),
    ],
    "santorini": [  # issue 20's yardsticks, 100 seeds x both colours, from sampled 4-move openings
        ("against greedy, both colours, 4-move openings",
         "tri arena champion:santorini greedy --games 100 --openings 4"),
        ("against random, both colours, 4-move openings",
         "tri arena champion:santorini random --games 100 --openings 4"),
        ("against uct:1000, both colours, 4-move openings",
         "tri arena champion:santorini uct:1000 --games 100 --openings 4"),
    ],
    "pyrga": [  # issue 20's yardsticks, 100 seeds x both colours, from sampled 4-move openings
        ("against greedy, both colours, 4-move openings",
         "tri arena champion:pyrga greedy --games 100 --openings 4"),
        ("against random, both colours, 4-move openings",
         "tri arena champion:pyrga random --games 100 --openings 4"),
        ("against uct:1000, both colours, 4-move openings",
         "tri arena champion:pyrga uct:1000 --games 100 --openings 4"),
    ],
}
CHECKS: dict[str, tuple[str, str]] = {
    "triangle": ("4 seeds of the evaluation", "tri eval triangle champion --games 4"),
    "connect4": ("the first 10 positions of each Pons test set", "tri eval connect4 champion --limit 10"),
    "tictactoe": ("4 games against greedy", "tri arena champion:tictactoe greedy --games 2"),
    "gobang": ("4 games against greedy", "tri arena champion:gobang greedy --games 2 --openings 4"),
    "othello": ("4 games against alphabeta:3", "tri arena champion:othello alphabeta:3 --games 2 --openings 4"),
    "santorini": ("4 games against greedy", "tri arena champion:santorini greedy --games 2 --openings 4"),
    "pyrga": ("4 games against greedy", "tri arena champion:pyrga greedy --games 2 --openings 4"),
}


def publish(game: str, project: Path, *, loop: str, tri_commit: str, generation: int | None = None,
            simulations: int | None = None, determinizations: int | None = None, search: dict | None = None,
            folder: Path | None = None,
            notes: tuple[str, ...] = (), echo=print) -> ChampionCard:
    """Publish the champion of ``game`` from ``project`` into ``folder`` (default: the champions
    folder); returns its card. ``loop``: the ``tri loop`` command(s) that trained it;
    ``tri_commit``: the tri commit(s) it was trained with; ``simulations``: its search budget
    (default: the project's ``arena.simulations``), in ``determinizations`` trees per move
    (default: the project's ``arena.determinizations``); ``search``: ``mcts`` settings it plays with
    over the project's (e.g. ``{"solver": True}``); without ``precision`` among them, it plays in
    ``float32`` (the project's ``mcts.precision`` may be ``auto`` or ``bfloat16``). Raises
    :class:`TriError` (one line)."""
    project, folder = Path(project).resolve(), Path(folder or champions_dir())
    if game not in EVALUATIONS:
        raise TriError(f"tri champions publish: no evaluations defined for {game}")
    params = project_params(project)
    if params.game.name != game:
        raise TriError(f"{project}: trains {params.game.name}, not {game}")
    search = _in_float32(params.mcts, search or {})
    play = play_search(params.mcts, search)  # checked before anything runs
    ckpt, training = _network(game, Source(project, loop, tri_commit, generation), folder)
    generation = ckpt.generation
    card = ChampionCard(game=game, checkpoint=f"{game}.pt", sha256="0" * 64, model_id=ckpt.model_id,
                        generation=generation, simulations=simulations or params.arena.simulations,
                        determinizations=_trees(params, play, determinizations or params.arena.determinizations),
                        params=params.model_dump(mode="json"), search=search, training=training,
                        evaluations=[], check=Evaluation(title="pending", command="", result={}),
                        notes=list(notes))
    return _measure(card, folder, lambda path: save_checkpoint(ckpt, path), echo)


@dataclass(frozen=True)
class Source:
    """A project's network for :func:`publish_ensemble`: ``project``, the ``loop`` command(s)
    and ``tri_commit`` that trained it (for the card), a promoted ``generation`` (None: the last)."""

    project: Path
    loop: str
    tri_commit: str
    generation: int | None = None


def publish_ensemble(game: str, sources: list[Source], *, join: bool = False, simulations: int | None = None,
                     determinizations: int | None = None, search: dict | None = None,
                     notes: tuple[str, ...] = (), folder: Path | None = None, echo=print) -> ChampionCard:
    """Publish an ensemble (:mod:`tri.ensemble`) as the champion of ``game``: the network of each
    of ``sources`` (as :func:`publish` takes one), after the shipped champion's own network or
    networks with ``join``. The card lists every member's training (the shipped card's for its
    members). With ``join`` it plays with the shipped card's params, search and budget unless
    ``simulations``, ``determinizations`` or ``search`` say otherwise; without, with the first
    project's, as :func:`publish`. Raises :class:`TriError`."""
    folder = Path(folder or champions_dir())
    if game not in EVALUATIONS:
        raise TriError(f"tri champions publish: no evaluations defined for {game}")
    if len(sources) + join < 2:
        raise TriError("an ensemble takes at least two networks: more than one --project, or --join")
    for source in sources:
        if project_params(Path(source.project).resolve()).game.name != game:
            raise TriError(f"{source.project}: does not train {game}")
    if join:
        path, shipped = champion(game, folder)
        params = Params(**shipped.params)
        search = shipped.search if search is None else _in_float32(params.mcts, search)
        simulations, asked = simulations or shipped.simulations, determinizations or shipped.determinizations
    else:
        params = project_params(Path(sources[0].project).resolve())
        search = _in_float32(params.mcts, search or {})
        simulations = simulations or params.arena.simulations
        asked = determinizations or params.arena.determinizations
    play = play_search(params.mcts, search)  # checked before anything runs
    networks, members, names = [], [], []
    if join:
        held = shipped.members or [Member(model_id=shipped.model_id, generation=shipped.generation,
                                          training=shipped.training)]
        networks += members_of(load_checkpoint(path, ensemble=True), [m.generation for m in held])
        members += held
        names += [f"the shipped champion's network {k + 1}" for k in range(len(held))]
    for source in sources:
        ckpt, training = _network(game, source, folder)
        networks.append(ckpt)
        members.append(Member(model_id=ckpt.model_id, generation=ckpt.generation, training=training))
        names.append(f"{source.project} generation {ckpt.generation}")
    ckpt = ensemble_of(networks, names)
    card = ChampionCard(game=game, checkpoint=f"{game}.pt", sha256="0" * 64, model_id=ckpt.model_id,
                        generation=ckpt.generation, simulations=simulations,
                        determinizations=_trees(params, play, asked), params=params.model_dump(mode="json"),
                        search=search, training=members[0].training, members=members, evaluations=[],
                        check=Evaluation(title="pending", command="", result={}), notes=list(notes))
    return _measure(card, folder, lambda staged: save_checkpoint(ckpt, staged), echo)


def _network(game: str, source: Source, folder: Path | None) -> tuple[Checkpoint, Training]:
    """The network of ``source``'s promoted generation, checked against the project's promotion
    log, without its optimizer state, and how it was trained."""
    project = Path(source.project).resolve()
    log = _promotions(project)
    generation, entry = _promotion(project, log, source.generation, tagged=_tags(project))
    candidate = layout.candidate_path(project, generation)
    ckpt = load_checkpoint(candidate if candidate.is_file() else layout.best_path(project))
    if ckpt.model_id != entry["model_id"]:
        raise TriError(f"{candidate}: model {ckpt.model_id}, but the promotion log says {entry['model_id']}")
    ckpt.optimizer, ckpt.generation = {}, generation  # (the generation its file says, as checked by its id)
    return ckpt, _training(project, game, log, generation, source.loop, source.tri_commit, folder)


def remeasure(game: str, *, simulations: int | None = None, determinizations: int | None = None,
              search: dict | None = None, notes: tuple[str, ...] = (), folder: Path | None = None,
              echo=print) -> ChampionCard:
    """Measure the shipped champion of ``game`` again, from this checkout, playing with a new
    search: ``simulations``, ``determinizations`` and ``search`` (the ``mcts`` settings over its
    params' that it plays with; None: the card's) replace the card's, the game's evaluation
    commands (the card's) are run again, and the card is rewritten with their results (its checkpoint,
    training record and params unchanged; ``notes`` replace the card's when given). How a
    champion whose training project is gone gets a better search. Raises :class:`TriError`."""
    folder = Path(folder or champions_dir())
    path, card = champion(game, folder)
    trained = Params(**card.params)
    mcts = trained.mcts
    search = card.search if search is None else _in_float32(mcts, search)
    play = play_search(mcts, search)  # checked before anything runs
    card = card.model_copy(update={
        "simulations": simulations or card.simulations,
        "determinizations": _trees(trained, play, determinizations or card.determinizations),
        "search": search, "notes": list(notes) if notes else card.notes})
    return _measure(card, folder, lambda staged: shutil.copyfile(path, staged), echo)


def _trees(params: Params, play: MctsParams, asked: int) -> int:
    """The trees per move a champion of ``params``' game searching with ``play`` grows when
    ``asked`` for some, as a player grows them (:func:`tri.players.trees_per_move`), so that its
    card says what it plays."""
    return trees_per_move(make_game(params.game), play, asked)


def _in_float32(mcts, search: dict) -> dict:
    """``search`` with ``precision: float32`` unless it names a precision or ``mcts`` is float32
    already: bfloat16 (or auto) gives other bits on a CPU that emulates it (far slower there) than
    on one that computes it natively; float32 search replayed the same figures on both kinds of
    CPU tri has run on (AVX512 and AVX2)."""
    search = dict(search)
    if "precision" not in search and mcts.precision != "float32":
        search["precision"] = "float32"
    return search


def _measure(card: ChampionCard, folder: Path, write_checkpoint, echo) -> ChampionCard:
    """Stage ``card``'s checkpoint (``write_checkpoint(path)``) and card in ``folder``, run the
    game's evaluation commands (:data:`EVALUATIONS`) and its check (:data:`CHECKS`) against the
    staged champion, then rename the checkpoint and the finished card into place; on any failure
    or a stop, nothing is renamed."""
    game = card.game
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".staging-") as staging:
        staging = Path(staging)
        write_checkpoint(staging / f"{game}.pt")
        card = card.model_copy(update={"sha256": sha256(staging / f"{game}.pt")})
        _write_card(staging, card)  # the commands below need it to find the champion
        evaluations = []
        for title, command in EVALUATIONS[game]:
            echo(f"running: {command}")
            evaluations.append(Evaluation(title=title, command=command, result=run_command(command, staging)))
        title, command = CHECKS[game]
        check = Evaluation(title=title, command=command, result=run_command(command, staging))
        card = card.model_copy(update={"evaluations": evaluations, "check": check})
        _write_card(staging, card)
        for name in (f"{game}.pt", f"{game}.json", f"{game}.md"):
            os.replace(staging / name, folder / name)
    return card


def run_command(command: str, champions: Path | None = None, cwd: Path = CHECKOUT) -> dict:
    """Run the ``tri`` command line ``command`` with ``--out`` a temporary file, from ``cwd``,
    tracking off and ``TRI_CHAMPIONS=champions`` if given; returns the JSON it wrote."""
    args = shlex.split(command)
    if not args or args[0] != "tri":
        raise TriError(f"not a tri command: {command!r}")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        env = {**os.environ, "TRI_TRACKING": "false"}
        if champions is not None:
            env["TRI_CHAMPIONS"] = str(champions)
        proc = subprocess.run([sys.executable, "-m", "tri.cli", *args[1:], "--out", str(out)], cwd=cwd, env=env,
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0 or not out.is_file():
            last = (proc.stderr.strip() or proc.stdout.strip() or "no output").splitlines()[-1]
            raise TriError(f"{command}: failed ({last})")
        return json.loads(out.read_text())


def _write_card(folder: Path, card: ChampionCard) -> None:
    atomic.write_text(card_path(card.game, folder), card.model_dump_json(indent=1) + "\n")
    atomic.write_text(card_path(card.game, folder).with_suffix(".md"), render_card(card))


def _tags(project: Path) -> set[int]:
    """Generations with a ``tri/gen-NNNN`` tag: committed by ``tri loop``."""
    tags = git_run(project, "tag", "--list", "tri/gen-*", check=False).stdout.split()
    return {int(t.removeprefix("tri/gen-")) for t in tags if t.removeprefix("tri/gen-").isdigit()}


def _promotions(project: Path) -> list[dict]:
    """The project's promotion log, one entry per generation decided."""
    path = layout.promotions_log(project)
    try:
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except (OSError, json.JSONDecodeError) as exc:
        raise TriError(f"{path}: cannot be read ({exc})") from None


def _promotion(project: Path, log: list[dict], generation: int | None, tagged: set[int]) -> tuple[int, dict]:
    """The generation to publish (the last promoted one the loop has tagged, or the one asked
    for, which must have been promoted and tagged) and its entry in the promotion ``log``."""
    promoted = {int(e["generation"]): e for e in log if e.get("promoted")}
    if generation is None:
        ready = sorted(set(promoted) & tagged)
        if not ready:
            raise TriError(f"{project}: no promoted generation has a tri/gen-NNNN tag yet (run tri loop)")
        generation = ready[-1]
    if generation not in promoted:
        raise TriError(f"{project}: generation {generation} was not promoted")
    if generation not in tagged:
        raise TriError(f"{project}: no git tag tri/gen-{generation:04d} (publish a generation tri loop committed)")
    return generation, promoted[generation]


def _training(project: Path, game: str, log: list[dict], generation: int, loop: str, tri_commit: str,
              folder: Path | None = None) -> Training:
    tag = f"tri/gen-{generation:04d}"  # _promotion checked that it exists
    commit = git_run(project, "rev-parse", f"{tag}^{{commit}}")
    upto = [e for e in log if int(e["generation"]) <= generation]
    made = (f"tri new {project.name} --game {game}{started_from(project, game, folder)}"
            f"{taught_by(project, game, folder)}{started_with(project)}")
    return Training(project=made, loop=loop,
                    tag=tag, project_commit=commit.stdout.strip(), tri_commit=tri_commit,
                    generations=len({int(e["generation"]) for e in upto}),
                    promoted=sum(bool(e.get("promoted")) for e in upto),
                    wall_minutes=_generation_seconds(project, game, generation) / 60, machine=machine())


def _generation_seconds(project: Path, game: str, generation: int) -> float:
    """Sum of ``9 timing/generation seconds`` (``generation_seconds`` in older runs) over the
    project's recorded generations up to ``generation`` (each generation once: its last complete
    run)."""
    client, s = mlstore.open_store(project, None, create=False)
    if client is None:
        raise TriError(f"{project}: no MLflow store to read the generations' wall time from")
    exp = client.get_experiment_by_name(mlstore.experiment_name(game))
    if exp is None:
        raise TriError(f"{project}: its MLflow store has no generations")
    runs = client.search_runs([exp.experiment_id], "tags.`tri.kind` = 'generation' and tags.`tri.logged` = 'true'",
                              max_results=50_000)
    seconds: dict[int, float] = {}
    for run in sorted(runs, key=lambda r: r.info.start_time):
        g = int(run.data.tags.get("tri.generation", -1))
        if 0 < g <= generation and (value := read_metric(run.data.metrics, GENERATION_SECONDS)) is not None:
            seconds[g] = value
    return sum(seconds.values())


def machine() -> str:
    """This machine in a few words: cores, memory, CPU or GPU."""
    import torch  # only to say whether a GPU trained it; importing it is slow

    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        memory = float("nan")
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    return (f"{os.cpu_count()} cores ({platform.machine()}), {memory:.0f} GiB, {gpu}, "
            f"{platform.system()}, Python {platform.python_version()}, torch {torch.__version__}")
