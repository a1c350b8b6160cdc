"""Configuration: result-affecting ``params.yaml`` and the runtime settings that are not.

``params.yaml`` has one section per stage; each section is a small frozen pydantic model and
``dvc.yaml`` lists, per stage, only the sections it reads. The root :class:`Params` is read with
pydantic-settings' YAML source and nothing else: environment variables must not change results.

:class:`Runtime` holds what does not change results (device, worker count, store locations);
it reads ``TRI_``-prefixed environment variables (``TRI_DEVICE=cpu``, ``TRI_WORKERS=2``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, \
    YamlConfigSettingsSource

from tri.errors import ParamsError, format_errors
from tri.games import DEFAULT_GAME, GAMES, REGISTRY, entry

DEFAULT_PARAMS = Path("params.yaml")

# Hard upper bounds: values past these overflow a type, whatever the machine's memory (what does
# fit in memory is checked separately, see tri.resources).
MAX_SIMULATIONS = 2**31 - 2  # the search numbers its simulations + 1 tree nodes in int32
MAX_INT32 = 2**31 - 1  # shard columns `move` and games' `steps` are int32
MAX_SEED = 2**63 - 1  # numpy's SeedSequence takes non-negative integers, torch.manual_seed 64 bits


def _game_params() -> type[BaseModel]:
    """``game``: which game (``name``), and one section with the rules of each registered game
    (:data:`tri.games.REGISTRY`: a new game's section appears here by itself)."""
    fields: dict = {"name": (Literal[GAMES], Field(DEFAULT_GAME, description=f"the game to train: {', '.join(GAMES)}"))}
    for name, e in REGISTRY.items():
        fields[name] = (e.config, Field(e.config(), description=f"rules of {e.title}"))
    return create_model("GameParams", __config__=ConfigDict(frozen=True, extra="forbid"),
                        __doc__=_game_params.__doc__, __module__=__name__, **fields)


GameParams = _game_params()


class NetParams(BaseModel):
    """``net``: the network's shape, and the seed of its initial weights."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    channels: int = Field(32, gt=0, description="filters of every convolution in the residual trunk (the "
                                                "network's width); more: stronger, slower, bigger")
    blocks: int = Field(4, ge=0, description="residual blocks (two 3x3 convolutions each) after the stem "
                                             "(the network's depth); 0: the stem alone")
    policy_channels: int = Field(4, gt=0, description="policy head: 1x1 convolution channels, flattened into "
                                                      "a linear layer to one logit per action")
    value_channels: int = Field(2, gt=0, description="value head: 1x1 convolution channels, flattened into "
                                                     "its hidden layer")
    value_hidden: int = Field(64, gt=0, description="value head: units of its hidden fully connected layer")
    support_max: int = Field(30, gt=0, description="single-player value head: two-hot bins 0..support_max in h-space; "
                             "returns past h^-1(support_max) (about 900 by default) or below 0 are clipped")
    support_eps: float = Field(0.001, ge=0, description="single-player: eps of the squashing h(x) = sign(x) (sqrt(|x| + "
                               "1) - 1) + eps x; larger: more linear, a smaller largest return")
    seed: int = Field(0, ge=0, le=MAX_SEED, description="seed of the initial weights (generation 0); at most "
                                                        "2**63 - 1 (torch's seeds are 64-bit)")
    occupancy_steps: int = Field(0, ge=0, le=1000,
                                 description="triangle: > 0 adds a head that predicts which cells are "
                                             "occupied this many moves later (KataGo's ownership, for a "
                                             "puzzle: a dense target that teaches the trunk how boards "
                                             "fill and clear; tri.occupancy); trained with weight "
                                             "train.occupancy_weight, never read by the search; 0: no head")


class MctsParams(BaseModel):
    """``mcts``: the search."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    simulations: int = Field(16, gt=0, le=MAX_SIMULATIONS,
                             description="self-play's search budget per move: tree nodes added, each "
                                         "evaluated by the network (the arena's: arena.simulations); at most "
                                         "2**31 - 2 (nodes are numbered in int32)")
    c_puct: float = Field(1.25, gt=0, description="PUCT's prior weight c in Q + c * P * sqrt(N) / (1 + n), Q "
                                                  "in [0, 1] (single-player) or [-1, 1]; higher: explore "
                                                  "wider, trust the prior more")
    discount: float = Field(0.95, gt=0, le=1, description="single-player: per-move discount of future rewards, "
                            "in the search's Q and the value targets; lower: a shorter horizon (two-player: unused)")
    value_scale: float = Field(1.0, gt=0, le=10, description="single-player: the network's values are multiplied by "
                               "this in the search (Q = reward + discount * scale * V), so a value that runs low weighs "
                               "as much as the rewards it forecasts; the search's root value is its estimate in those "
                               "terms (self-play's value targets bootstrap from it); the triangle network's values run "
                               "11-17% low against realised returns, and its champion plays 1.15 (README, line 30); "
                               "two-player: unused")
    move_bonus: float = Field(0.0, ge=0, le=100, description="single-player: a reward the search's Q and the value "
                              "targets add to every move (never the score), so an end costs bonus / (1 - discount) more "
                              "than the moves it cuts off would score (2, from the champion: no better, README line "
                              "38); 0: none")
    avoid_dead_ends: bool = Field(False, description="triangle: a chosen move after which the shapes in hand can no "
                                  "longer all be placed (the game ends within the cycle) is replaced by the search's "
                                  "favourite move that keeps them placeable (an exact check)")
    plan_cycle: int = Field(0, ge=0, le=65536, description="triangle: where the rest of the cycle (every order and "
                            "placement of the shapes in hand) has at most this many distinct positions at each level, "
                            "its end boards included, each way is valued (its rewards plus the discounted, scaled value "
                            "of its afterstate) and the best first move is played unsearched (tri/plan.py); 0: off")
    dirichlet_alpha: float = Field(0.1, gt=0, description="concentration of the Dirichlet root noise (PUCT "
                                                          "with selfplay.noise); smaller: noise on fewer "
                                                          "actions")
    dirichlet_fraction: float = Field(0.25, ge=0, le=1, description="root priors become (1 - f) * P + f * "
                                                                    "noise (PUCT with selfplay.noise); 0: no "
                                                                    "noise")
    leaves_per_step: int = Field(1, gt=0, le=65536, description="leaves per tree per network call, kept "
                                                                "apart by virtual visits: fewer, bigger "
                                                                "calls, a slightly weaker search (gumbel: "
                                                                "the halving schedule's next root visits, "
                                                                "pending ones counted); at most 65536 (more "
                                                                "only piles virtual visits on the same paths)")
    solver: bool = Field(False, description="two-player: prove wins and losses inside the tree "
                                             "(MCTS-Solver): a proven win is taken, proven losses "
                                             "avoided, proven nodes back up their exact value; same "
                                             "simulations")
    gumbel: bool = Field(True, description="Gumbel sequential halving at the root instead of PUCT + noise: "
                                            "the search picks the move (no temperature) and trains on its "
                                            "improved policy")
    gumbel_actions: int = Field(16, gt=0, description="gumbel: root actions considered (the top by Gumbel "
                                                      "noise + logit), then halved over the simulations "
                                                      "until the best is left")
    gumbel_c_visit: float = Field(50.0, gt=0, description="gumbel: c_visit in sigma(q) = (c_visit + max root "
                                                          "visits) * c_scale * q; higher: the value weighs "
                                                          "more")
    gumbel_c_scale: float = Field(1.0, gt=0, description="gumbel: c_scale in sigma(q), q normalised to [0, "
                                                         "1]; higher: the value outweighs the prior's logits "
                                                         "more")
    precision: Literal["auto", "float32", "bfloat16"] = Field(
        "auto", description="the number format of the network's convolutions during search (their heads "
                            "stay float32); bfloat16: about 2x the evaluations per second where the hardware "
                            "is faster at it (AMX, an AMD CPU's AVX512-BF16, a CUDA GPU), 0.66x on an Intel "
                            "CPU with AVX512-BF16 but no AMX, far slower where emulated; auto: bfloat16 where "
                            "faster, else float32 (tri.device.resolve_precision); a champion searches as its "
                            "card says")
    chance_outcomes: int = Field(1, ge=1, le=64, description="games with random draws (triangle): the "
                                                          "most outcomes a chance edge of the tree (a move "
                                                          "whose step drew new shapes) gets, each a node "
                                                          "on its own draw from the search's generator, "
                                                          "added as the edge's visits reach 1, 4, 9, ... "
                                                          "(progressive widening); the edge's visits and "
                                                          "value combine its outcomes'; 1: one draw per "
                                                          "edge; with afterstates the first outcome is the "
                                                          "afterstate and the others search past the draw")
    afterstates: bool = Field(True, description="games with random draws (triangle): a move whose step "
                                                 "draws (the refill) ends its path in the tree at the "
                                                 "afterstate, the position before the draw, valued by "
                                                 "the network on it (no shapes in hand): the expected "
                                                 "value over every draw instead of one sampled draw's; "
                                                 "training then also learns that value (one afterstate "
                                                 "per drawing move, its target the next position's; "
                                                 "0 where the draw ended the game); the triangle "
                                                 "recipe since 2026-11-27 (README, \"Lines 19-20\"); "
                                                 "with chance_outcomes > 1, an edge's first outcome; "
                                                 "false: one sampled draw per path, or chance nodes "
                                                 "(chance_outcomes > 1); games without draws: unused")
    symmetrize: bool = Field(False, description="evaluate each position together with its images under "
                                                 "the game's symmetries (Connect Four's mirror; 7 on a "
                                                 "square board) in the same network call, and search on "
                                                 "the averaged priors and value: a steadier evaluation for "
                                                 "(1 + symmetries)x the network's work per simulation; "
                                                 "not for a game whose action map depends on the position "
                                                 "(Santorini)")


class SelfplayParams(BaseModel):
    """``selfplay``: how many games, how they are split into shards, and how moves are chosen."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    games: int = Field(512, gt=0, description="games per self-play run: a generation's new training data")
    shards: int = Field(2, gt=0, description="files the games are split into, one task each; part of the "
                                             "result (each has its own random stream)")
    concurrent: int = Field(128, gt=0, description="games in flight per shard: every network call evaluates "
                                                  "leaves of all of them; more: faster, more memory")
    max_moves: int = Field(500, gt=0, le=MAX_INT32, description="a game is cut after this many moves (single-"
                           "player: its targets bootstrap from the search value); at most 2**31 - 1 (int32 in shards)")
    temperature: float = Field(1.0, ge=0, description="sampled moves are drawn in proportion to "
                                                      "visits**(1/temperature); 0: the most visited; not "
                                                      "with gumbel")
    temperature_moves: int = Field(0, ge=0, description="each game's first moves sampled at temperature; then "
                                                        "the most visited (0: none)")
    noise: bool = Field(False, description="root exploration noise: Dirichlet (mcts.dirichlet_*), or with "
                                           "mcts.gumbel Gumbel's sampling of the considered actions")
    td_steps: int = Field(10, ge=0, description="single-player value targets: n-step returns bootstrapped "
                                                "from the search value n moves later (0: full returns)")
    full_fraction: float = Field(1.0, gt=0, le=1, description="playout cap randomisation (KataGo): the share of moves "
                                 "searched in full (mcts.simulations, with noise), whose policy is a training target; "
                                 "the others search fast_simulations without noise, play the game on and train the "
                                 "value only; 1: every move in full")
    fast_simulations: int = Field(16, gt=0, le=MAX_SIMULATIONS,
                                  description="search budget of a move not searched in full (full_fraction "
                                              "below 1); at most 2**31 - 2")
    seed: int = Field(0, ge=0, le=MAX_SEED, description="seed of the games' draws and the search's "
                                                        "randomness (with the generation); at most 2**63 - 1")


class TrainParams(BaseModel):
    """``train``: the replay window and the optimisation."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    window: int = Field(6, gt=0, description="self-play generations trained on, sampled uniformly together "
                                             "(the newest is the new data)")
    batch_size: int = Field(256, gt=0, description="positions per gradient step, drawn uniformly with "
                                                   "replacement from the window")
    lr: float = Field(2e-3, gt=0, description="AdamW's peak learning rate, reached after the warm-up; then a "
                                              "cosine decay to lr_min over the generation's steps")
    lr_min: float = Field(1e-4, ge=0, description="learning rate at the end of each generation's cosine decay")
    warmup_steps: int = Field(20, ge=0, description="steps of linear warm-up to lr at the start of each "
                                                    "generation, at most a tenth of its steps")
    weight_decay: float = Field(1e-4, ge=0, description="AdamW's decoupled weight decay")
    grad_clip: float = Field(1.0, gt=0, description="largest global L2 norm of the gradients; larger ones are "
                                                    "scaled down to it")
    value_weight: float = Field(1.0, ge=0, description="loss = policy cross-entropy + value_weight * value loss "
                                                       "(cross-entropy single-player, squared error two-player)")
    occupancy_weight: float = Field(1.0, ge=0, description="loss weight of the occupancy head's mean per-cell binary "
                                                           "cross-entropy, for a network with one (net.occupancy_steps > 0)")
    samples_per_position: float = Field(3.0, gt=0, description="about how often each new position is "
                                                               "sampled: steps = new positions * this / "
                                                               "batch_size, at most max_steps")
    max_steps: int = Field(500, gt=0, description="most gradient steps per generation")
    continue_from: Literal["latest", "best"] = Field("best",
                                                     description="network training starts from: the best "
                                                                 "model, or the previous generation's "
                                                                 "candidate (latest: rejected training is "
                                                                 "kept; measured worse, see README)")
    reanalyse: bool = Field(True, description="single-player: before training, recompute the value targets of the "
                            "window's games another network played, bootstrapped from the starting network's value "
                            "(one forward pass per position, no search; selfplay.td_steps moves on, mcts.discount) "
                            "instead of their own search's (tri.reanalyse; +16 per generation, see README); "
                            "two-player: unused")
    bootstrap: Literal["position", "afterstate"] = Field(
        "position", description="single-player: where a value target bootstraps, selfplay.td_steps moves on at "
                                "most; position: the value of the position reached (its search's, or reanalysed); "
                                "afterstate: the starting network's value of the afterstate of the last refill "
                                "within reach (needs mcts.afterstates), so no draw after it moves the target; "
                                "every game of the window is recomputed (tri.reanalyse)")
    luck_samples: int = Field(4, ge=0, le=1024, description="games with draws (triangle): > 0 takes each refill's luck "
                              "out of the value targets that sum over it: the real draw's reward + discount * V less "
                              "the mean over this many other draws of the same move, V the starting network's "
                              "(tri.luck: no bias, less spread; a forward pass per draw; README, line 40); 0: off")
    threads: int = Field(2, gt=0, le=1024, description="torch threads: part of the result (float summation "
                                                       "order); at most 1024, more than any machine has "
                                                       "cores")
    precision: Literal["auto", "float32", "bfloat16"] = Field(
        "auto", description="the number format of training's forward pass (bfloat16 autocast; the weights, "
                            "optimizer and losses stay float32); bfloat16: about 1.8x the steps per second "
                            "where the hardware is faster at it (AMX, an AMD CPU's AVX512-BF16), 0.9x on "
                            "an Intel CPU with AVX512-BF16 but no AMX, far slower where emulated; auto: "
                            "as mcts.precision resolves (a CUDA GPU with bfloat16 too), else float32")
    seed: int = Field(0, ge=0, le=MAX_SEED, description="seed of the minibatches, their symmetries and torch "
                                                        "(with the generation); at most 2**63 - 1")


class ArenaParams(BaseModel):
    """``arena``: how a candidate is compared with the best, and the promotion rule."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    games: int = Field(32, gt=1, description="paired seeds (single-player); games per colour (two-player); "
                                             "more: a tighter comparison, a longer arena")
    simulations: int = Field(32, gt=0, le=MAX_SIMULATIONS,
                             description="search budget per move of a checkpoint player (arena, play, "
                                         "evaluate) unless given as mcts:PATH:N; at most 2**31 - 2 (nodes "
                                         "are numbered in int32)")
    determinizations: int = Field(1, gt=0, le=1024,
                                  description="games with chance (the triangle puzzle): trees a checkpoint "
                                              "player grows per move, each on its own sampled future and "
                                              "with the full simulations, combined by vote (unless given "
                                              "as mcts:PATH:NxK); costs K times the search; games without "
                                              "chance search one tree; so does a search with "
                                              "mcts.afterstates alone (chance_outcomes 1), where no path "
                                              "reaches a draw and more trees would only repeat the search")
    temperature: float = Field(0.0, ge=0, description="sampled moves are drawn in proportion to visits**(1/"
                                                      "temperature); 0: the most visited; not with gumbel")
    temperature_moves: int = Field(0, ge=0, description="each game's first moves sampled at temperature; then "
                                                        "the most visited (0: none)")
    max_moves: int = Field(1000, gt=0, description="a game is cut after this many moves")
    concurrent: int = Field(32, gt=0, description="games in flight at once: the batch of the players' "
                                                  "searches; more: faster, more memory")
    rule: Literal["ci_lower", "mean", "always"] = Field(
        "mean", description="single-player: promote when the paired difference's lower 95% bound "
                            "(ci_lower) or its mean (mean) is above threshold; always (any game): promote "
                            "every candidate, no gate (as AlphaZero), the arena only measures: cut games "
                            "to make it cheap")
    threshold: float = Field(0.0, description="single-player: the score difference (candidate - best) that "
                                              "rule's bound must exceed to promote")
    win_rate: float = Field(0.55, ge=0, le=1, description="two-player: promote when the candidate's score "
                                                          "rate (win 1, draw 1/2) reaches this (unless "
                                                          "rule is always)")
    seed: int = Field(1, ge=0, le=MAX_SEED, description="seed of the arena's games and searches (with the "
                                                        "generation; never self-play's); at most 2**63 - 1")


class Params(BaseSettings):
    """Every result-affecting number, one section per stage."""

    model_config = SettingsConfigDict(frozen=True, extra="forbid")
    game: GameParams = GameParams()
    net: NetParams = NetParams()
    mcts: MctsParams = MctsParams()
    selfplay: SelfplayParams = SelfplayParams()
    train: TrainParams = TrainParams()
    arena: ArenaParams = ArenaParams()

    @model_validator(mode="after")
    def _bootstrap_needs_afterstates(self) -> Params:
        if self.train.bootstrap == "afterstate" and not self.mcts.afterstates:
            raise ValueError("train.bootstrap: afterstate needs mcts.afterstates: true")
        if self.train.bootstrap == "afterstate" and self.train.luck_samples:
            raise ValueError("train.bootstrap: afterstate needs train.luck_samples: 0 (a target bootstrapped at "
                             "an afterstate holds no draw's luck)")
        return self

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings],
                                   init_settings: PydanticBaseSettingsSource,
                                   **_: PydanticBaseSettingsSource) -> tuple[PydanticBaseSettingsSource, ...]:
        # Only what load_params passes in (the YAML file): no environment, no dotenv.
        return (init_settings,)


class Runtime(BaseSettings):
    """Settings that do not change results on a given device (a GPU gives other float sums than
    the CPU); ``TRI_<NAME>`` environment variables override."""

    model_config = SettingsConfigDict(env_prefix="TRI_", frozen=True, extra="ignore")
    device: str = Field("auto", description="torch device: auto (CUDA if torch sees one, then MPS, else the CPU), cpu, cuda, cuda:N or mps; results are reproducible per device (a GPU's float sums differ from the CPU's)")
    workers: int = Field(default_factory=lambda: os.cpu_count() or 1, gt=0,
                         description="worker processes for self-play")
    tracking: bool = Field(True, description="log generations to MLflow (TRI_TRACKING=false: off)")
    mlflow_uri: str | None = Field(None, description="MLflow tracking URI (a server URL or any URI); "
                                                     "default: a SQLite file under <project>/.mlflow")
    mlflow_ui: str | None = Field(None, description="address of an MLflow UI showing the project's runs, "
                                                    "for links on the Prefect pages (tri serve sets it)")
    versioning: bool = Field(True, description="in a DVC project, record each generation in dvc.lock and "
                                               "commit it to git (TRI_VERSIONING=false: off)")
    task_runner: Literal["threads", "processes", "dask"] = Field(
        "threads", description="how the generation flow runs self-play shards: Prefect's thread pool (the "
                               "search kernels release the GIL), its process pool, or Dask (prefect-dask; a "
                               "local cluster unless dask_address)")
    dask_address: str | None = Field(None, description="scheduler of an existing Dask cluster, "
                                                       "e.g. tcp://10.0.0.5:8786")
    champions: Path | None = Field(None, description="folder of the shipped champions (GAME.pt and its card "
                                                     "GAME.json); default: the checkout's models/champions")


def load_params(path: str | Path | None = None) -> Params:
    """Read and validate ``params.yaml``.

    ``path=None`` reads ``./params.yaml`` when it exists and the embedded defaults otherwise; an
    explicit path must exist, and must not be empty (no sections: a mistake, not a way to ask for
    the defaults). Raises :class:`ParamsError` with one line per problem.
    """
    if path is None:
        if not DEFAULT_PARAMS.exists():
            return Params()
        path = DEFAULT_PARAMS
    path = Path(path)
    if not path.is_file():
        raise ParamsError(str(path), ["file not found"])
    try:
        data = YamlConfigSettingsSource(Params, yaml_file=path)()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ParamsError(str(path), [f"not valid YAML{where}: {problem}"]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ParamsError(str(path), [f"cannot be read: {exc}"]) from None
    except (TypeError, ValueError):
        # pydantic-settings dict.update()s the document: a top-level list or scalar fails there.
        raise ParamsError(str(path), ["must be a mapping of sections (game: ...)"]) from None
    if not isinstance(data, dict):
        raise ParamsError(str(path), ["must be a mapping of sections (game: ...)"])
    if not data:  # an empty file, only comments, or {}: most likely a mistake, so say so
        raise ParamsError(str(path), [("is empty; write the sections to change (see tri params) or delete it "
                                       "to use the embedded defaults")])
    try:
        return Params(**data)
    except ValidationError as exc:
        raise ParamsError(str(path), format_errors(exc)) from None


def project_params(root: str | Path, params_file: str | Path | None = None) -> Params:
    """The params a project runs on: ``params_file`` (relative to the project), or the project's
    params.yaml if it has one, else the embedded defaults."""
    root = Path(root)
    if params_file is None:
        default = root / "params.yaml"
        return load_params(default) if default.is_file() else Params()
    path = Path(params_file)
    return load_params(path if path.is_absolute() else root / path)


def recipe_params(game: str) -> Params:
    """The embedded defaults with ``game.name`` set to ``game`` and its registry recipe (the
    sections that trained it best on record) applied: what ``tri new DIR --game GAME`` writes."""
    e = entry(game)  # one line naming the known games if it is not one
    base = Params()
    update: dict = {"game": GameParams(**{**base.game.model_dump(), "name": game})}
    for section, values in e.recipe.items():
        model = getattr(base, section)
        update[section] = type(model)(**{**model.model_dump(), **values})
    return base.model_copy(update=update)


def params_for_game(params_path: str | Path | None, game: str | None) -> Params:
    """The params a command comparing players runs on: :func:`load_params` ``(params_path)``, or,
    when ``game`` names another game than that file selects and no file was named, that game's
    recipe (:func:`recipe_params`), so ``tri arena --game connect4 ...`` works from any project.
    A named file of another game is an error (its sections were written for its own game)."""
    params = load_params(params_path)
    if game is None or game == params.game.name:
        return params
    if params_path is not None:
        problem = f"selects game.name: {params.game.name}, not {game} (drop --params to use {game}'s recipe)"
        raise ParamsError(str(params_path), [problem])
    return recipe_params(game)
