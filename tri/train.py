"""Training stage: a network continues learning on a window of recent self-play.

:func:`run` reads the positions of the given self-play folders (the newest last) with polars,
draws minibatches uniformly from the whole window, and trains

- the policy by cross-entropy to the search's policy target (the root visit distribution, or
  Gumbel's improved policy; illegal actions masked), and
- the value by cross-entropy to the two-hot encoded value target (single-player) or by squared
  error to the outcome (two-player),
- and, for a network with an occupancy head (``net.occupancy_steps``), each cell's occupancy that
  many moves later by binary cross-entropy (:mod:`tri.occupancy`), weighted
  ``train.occupancy_weight``,

with AdamW, a linear warm-up then cosine learning-rate schedule, and gradient clipping. With
``train.reanalyse`` (single-player), the value targets of the window's games another network
played are first recomputed with the starting network's value (:mod:`tri.reanalyse`). The
number of steps follows KataGo's rule of thumb: each *new* position (the newest folder) is seen
about ``train.samples_per_position`` times, capped by ``train.max_steps``. Games with symmetries
get a random symmetry per sample. The optimizer state travels in the checkpoint, so the next
generation continues it.

Training runs on the device ``TRI_DEVICE`` resolves to (:func:`tri.device.resolve_device`): the
network and each minibatch are moved there (minibatches are still drawn and augmented with numpy,
so the draws do not depend on the device), the forward pass runs under bf16 autocast on CUDA and
in float32 elsewhere (the CPU's bytes are those of a CPU-only tri), and the candidate is saved
from CPU tensors, so it loads anywhere with ``weights_only=True``. Torch runs on
``train.threads`` threads (:func:`tri.device.torch_threads`).
"""

from __future__ import annotations

import csv
import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from tri import atomic, layout
from tri import reanalyse as reanalysis
from tri.afterstates import afterstate_rows
from tri.config import Params, Runtime
from tri.device import resolve_device, resolve_precision, torch_threads, training_autocast
from tri.errors import TriError
from tri.games import make_game
from tri.luck import luck_remover
from tri.net import Checkpoint, load_checkpoint, save_checkpoint, two_hot
from tri.occupancy import future_occupancy
from tri.progress import Report, meter
from tri.resources import check_memory, plural
from tri.shards import count_positions, read_positions


@dataclass(frozen=True)
class TrainResult:
    generation: int
    steps: int
    window_positions: int
    new_positions: int
    seconds: float
    loss: float
    policy_loss: float
    value_loss: float
    model_id: str
    reanalysed_positions: int = 0  # value targets train.reanalyse recomputed
    reanalysed_change: float = 0.0  # their mean change (new - recorded): > 0, the newer network expects more
    afterstate_positions: int = 0  # afterstate rows mcts.afterstates added to the window (tri.afterstates)
    occupancy_loss: float | None = None  # the occupancy head's (net.occupancy_steps); None: no head

    def to_json(self) -> str:
        """The metrics file: everything but the wall time (so a rerun writes the same bytes) and an
        occupancy loss the network has no head for."""
        return json.dumps({k: v for k, v in asdict(self).items()
                           if k != "seconds" and not (k == "occupancy_loss" and v is None)}, indent=2)


# Loading holds a row about three times: the files' frames, their concatenation, the numpy arrays.
_ROW_COPIES = 3
# Columns :func:`tri.afterstates.afterstate_rows` reads, beside ``state`` and ``value_target``.
_AFTER_COLUMNS = ["game", "move", "action"]


def window_row_bytes(game) -> int:
    """Bytes of one loaded position: state ``[L]`` uint64, legal ``[A]`` bool, policy ``[A]``
    float32, value_target float32, held :data:`_ROW_COPIES` times while loading."""
    return _ROW_COPIES * (8 * game.state_size + 5 * game.num_actions + 4)


def load_window(game, folders: list[Path], reanalyse=None, progress: Report | None = None,
                afterstates: bool = False, occupancy_steps: int = 0, with_games: bool = False, luck=None,
                ) -> tuple[dict[str, np.ndarray], int, int, float, int]:
    """The positions of ``folders`` (validated) as arrays ``state [P, L]``, ``legal [P, A]``
    and ``policy [P, A]`` (none, and zeros, on a row without a policy target: a move playout caps
    searched fast, and the afterstate rows below), ``value_target [P]``; how many come from the last folder; with
    ``reanalyse`` (:class:`_Reanalyser`) applied to every folder but the last, or to every folder
    (``reanalyse.every_folder``; ``progress`` hears of each), how many targets it recomputed and
    their mean change; and with ``afterstates`` (``mcts.afterstates``), after the positions, each
    folder's afterstate rows (:mod:`tri.afterstates`: no legal action, no policy) and how many.
    With ``luck`` (:func:`tri.luck.luck_remover`), every folder's targets then lose the draws' luck.
    With ``occupancy_steps`` (the network's ``net.occupancy_steps``), also ``occupancy [P, H *
    W]`` bool, every row's target (:mod:`tri.occupancy`). With ``with_games``, also ``game [P]``
    int64: each row's game, unique across the folders (an afterstate row's is its move's)."""

    paths_per_folder = [layout.shard_paths(f) for f in folders]
    for folder, paths in zip(folders, paths_per_folder):
        if not paths:
            raise TriError(f"self-play folder {folder}: no shards found")
    rows = sum(count_positions(paths, game) for paths in paths_per_folder)
    # Afterstates add a row per drawing move: a third of the triangle puzzle's (a cycle of three).
    row_bytes = window_row_bytes(game) + (_ROW_COPIES * int(np.prod(game.obs_shape[1:])) if occupancy_steps else 0)
    check_memory(rows * row_bytes * (4 if afterstates else 3) // 3,
                 f"train.window: {plural(len(folders), 'self-play folder')} "
                 f"{'holds' if len(folders) == 1 else 'hold'} {rows:,} positions, about {{need}} once loaded",
                 "train on fewer folders (lower train.window) or smaller ones (lower selfplay.games)")
    columns = ["state", "legal", "policy", "value_target", "policy_target"]
    import polars as pl

    frames, reanalysed, change = [], 0, 0.0
    after_states, after_targets, occupancy, after_occupancy, games, after_games = [], [], [], [], [], []
    redone = 0 if reanalyse is None else len(folders) if reanalyse.every_folder else len(folders) - 1
    bar = meter("reanalyse", len(folders) if luck else redone, "folders", progress) if redone or luck else None
    for k, (folder, paths) in enumerate(zip(folders, paths_per_folder)):
        older = k < redone
        extra = (reanalyse.columns if older else []) + (_AFTER_COLUMNS if afterstates or occupancy_steps or luck else [])
        frame = read_positions(paths, game, list(dict.fromkeys(columns + extra + (["game"] if with_games else []))),
                               validate=True)
        if with_games:  # a folder's game numbers start again at 0: the folder's index above them
            games.append((k << 40) + frame["game"].to_numpy().astype(np.int64))
        states = frame["state"].to_numpy().astype(np.uint64, copy=False) \
            if older or afterstates or occupancy_steps or luck else None
        where = f"self-play folder {folder}"
        if occupancy_steps:
            history = (frame["action"].to_numpy(), frame["game"].to_numpy(), frame["move"].to_numpy())
            occupancy.append(future_occupancy(game, states, *history, occupancy_steps, where=where))
        if older:
            targets, changed = reanalyse(folder, frame, states)
            reanalysed += int(changed.sum())
            change += float((targets[changed] - frame["value_target"].to_numpy()[changed]).sum())
            frame = frame.with_columns(value_target=pl.Series(targets))
        after_luck = None
        if luck is not None:
            targets, after_luck = luck(k, folder, frame, states)
            frame = frame.with_columns(value_target=pl.Series(targets))
        if older or luck:
            bar.advance()
        if afterstates:
            after, target, followed = afterstate_rows(
                game, states, frame["action"].to_numpy(), frame["game"].to_numpy(), frame["move"].to_numpy(),
                frame["value_target"].to_numpy(), where=where, with_moves=True)
            after_states.append(after)
            after_targets.append(target if after_luck is None else (target - after_luck[followed]).astype(np.float32))
            if with_games:
                after_games.append(games[-1][followed])
            if occupancy_steps:  # an afterstate is the board one move on
                after_occupancy.append(future_occupancy(game, states, *history, occupancy_steps, rows=followed,
                                                        offset=1, where=where))
        frames.append(frame.select(columns))
    if bar is not None:
        bar.close()
    new = len(frames[-1])
    df = pl.concat(frames).rechunk()
    legal = df["legal"].to_numpy().astype(bool, copy=False)
    policy = df["policy"].to_numpy().astype(np.float32, copy=False)
    fast = ~df["policy_target"].to_numpy()
    if fast.any():  # playout caps' fast moves: no policy target, as an afterstate row (no legal action, no policy)
        legal, policy = legal.copy(), policy.copy()
        legal[fast], policy[fast] = False, 0.0
    data = {"state": df["state"].to_numpy().astype(np.uint64, copy=False),
            "legal": legal,
            "policy": policy,
            "value_target": df["value_target"].to_numpy().astype(np.float32, copy=False)}
    added = sum(len(t) for t in after_targets)
    if added:
        data = {"state": np.concatenate([data["state"], *after_states]),
                "legal": np.concatenate([data["legal"], np.zeros((added, game.num_actions), bool)]),
                "policy": np.concatenate([data["policy"], np.zeros((added, game.num_actions), np.float32)]),
                "value_target": np.concatenate([data["value_target"], *after_targets])}
    if occupancy_steps:
        data["occupancy"] = np.concatenate(occupancy + after_occupancy)
    if with_games:
        data["game"] = np.concatenate(games + after_games)
    return data, new, reanalysed, change / reanalysed if reanalysed else 0.0, added


@dataclass(frozen=True)
class _Reanalyser:
    """Value targets recomputed before training: ``fn(folder, positions, states [P, L]) ->
    (targets [P], changed [P])`` on each folder's ``columns``, the newest folder too when
    ``every_folder``."""

    fn: Callable[[Path, object, np.ndarray], tuple[np.ndarray, np.ndarray]]
    columns: list[str]
    every_folder: bool

    def __call__(self, folder: Path, positions, states: np.ndarray):
        return self.fn(folder, positions, states)


def _reanalyser(params: Params, game, best: Checkpoint, device: str) -> _Reanalyser | None:
    """The targets' recomputation with the starting network ``best``'s values, on training's
    ``device`` in its number format (``train.precision``): ``train.bootstrap: afterstate``
    (:func:`tri.reanalyse.afterstate_targets`, every folder), else ``train.reanalyse``
    (:func:`tri.reanalyse.reanalysed_targets`, the older folders' games another network played);
    None when neither, and for a two-player game (its targets are outcomes: nothing to bootstrap)."""
    tp, single = params.train, game.num_players == 1
    dtype = getattr(torch, resolve_precision(tp.precision, device))
    discount, td_steps, bonus = params.mcts.discount, params.selfplay.td_steps, params.mcts.move_bonus

    def values(states: np.ndarray) -> np.ndarray:
        return reanalysis.network_values(best.model, game, states, dtype, device)

    def at_afterstates(folder: Path, positions, states: np.ndarray):
        step = game.step(states, positions["action"].to_numpy())
        drew = np.ones(len(states), bool) if step.chance is None else np.asarray(step.chance, bool)
        targets = reanalysis.afterstate_targets(
            positions, reanalysis.game_ends(folder), drew, lambda rows: values(game.afterstate(step.states[rows])),
            discount=discount, td_steps=td_steps, where=f"self-play folder {folder}", bonus=bonus)
        return targets, np.ones(len(states), bool)

    def reanalyse(folder: Path, positions, states: np.ndarray):
        return reanalysis.reanalysed_targets(
            positions, reanalysis.game_ends(folder), lambda rows: values(states[rows]),
            keep_model=best.model_id, discount=discount, td_steps=td_steps, where=f"self-play folder {folder}",
            bonus=bonus)

    if single and tp.bootstrap == "afterstate" and game.stochastic:
        return _Reanalyser(at_afterstates, reanalysis.COLUMNS + ["root_value", "action"], every_folder=True)
    if single and tp.reanalyse:
        return _Reanalyser(reanalyse, reanalysis.COLUMNS, every_folder=False)
    return None


def _lr(step: int, total: int, params) -> float:
    warm = min(params.warmup_steps, max(total // 10, 1))
    if step < warm:
        return params.lr * (step + 1) / warm
    progress = (step - warm) / max(total - warm, 1)
    return params.lr_min + 0.5 * (params.lr - params.lr_min) * (1 + math.cos(math.pi * progress))


def run(params: Params, model: Path, data: list[Path], out: Path, *, generation: int | None = None,
        metrics: Path | None = None, losses: Path | None = None, runtime: Runtime | None = None,
        progress: Report | None = None) -> TrainResult:
    """Train ``model`` (the previous candidate or the best, see ``train.continue_from``) on the
    self-play ``data`` folders (oldest first; the last is the new data) and write the candidate
    checkpoint ``out`` labelled ``generation`` (default: the model's + 1), the summary ``metrics``
    (JSON) and per-step ``losses`` (CSV: step, lr, loss, policy_loss, value_loss). On the device
    ``runtime.device`` resolves to (default :class:`Runtime`: ``TRI_DEVICE``); ``progress``
    hears how far it is (steps, the latest loss: :mod:`tri.progress`)."""
    tp = params.train
    if not data:
        raise TriError("train: no self-play folders given")
    start = time.perf_counter()
    device = resolve_device((runtime or Runtime()).device)
    with torch_threads(tp.threads):
        return _train(params, model, data, out, generation, metrics, losses, progress, start, device)


def _train(params: Params, model: Path, data: list[Path], out: Path, generation: int | None,
           metrics: Path | None, losses: Path | None, progress: Report | None, start: float,
           device: str) -> TrainResult:

    tp = params.train
    game = make_game(params.game)
    best = load_checkpoint(model, game)
    parent_id = best.model_id  # before training changes the weights
    generation = best.generation + 1 if generation is None else generation
    afterstates = params.mcts.afterstates and game.stochastic
    occupancy_steps = best.net_params.occupancy_steps  # the network's head, not params.net's
    window, new, reanalysed, change, added = load_window(game, [Path(d) for d in data],
                                                         _reanalyser(params, game, best, device), progress,
                                                         afterstates, occupancy_steps,
                                                         luck=luck_remover(params, game, best.model, device, generation))
    size = window["state"].shape[0]
    steps = min(tp.max_steps, max(1, math.ceil(new * tp.samples_per_position / tp.batch_size)))
    rng = np.random.default_rng([tp.seed, generation])
    torch.manual_seed(tp.seed + generation)

    net = best.model.to(device)
    net.train()
    optimizer = torch.optim.AdamW(net.parameters(), lr=tp.lr, weight_decay=tp.weight_decay)
    if best.optimizer:
        try:
            optimizer.load_state_dict(best.optimizer)  # its tensors follow the parameters' device
        except (ValueError, KeyError):
            pass  # a different network shape: start the optimizer afresh
    symmetries = game.symmetries()
    rows = []
    bar = meter("train", steps, "steps", progress, lambda v, done, seconds: f"loss {v['loss']:.4f}")
    for step in range(steps):
        batch = _minibatch(game, symmetries, window, rng.integers(0, size, size=tp.batch_size), rng)
        lr = _lr(step, steps, tp)
        for group in optimizer.param_groups:
            group["lr"] = lr
        losses_now = _losses(net, game, tp, batch, device)  # loss, policy, value[, occupancy]
        optimizer.zero_grad(set_to_none=True)
        losses_now[0].backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), tp.grad_clip)
        optimizer.step()
        rows.append((step, lr, *torch.stack(losses_now).tolist()))  # one wait per step
        bar.set(loss=rows[-1][2])
        bar.advance()
    bar.close()
    net.eval().to("cpu")
    provenance = {"parent_model_id": parent_id, "parent_generation": str(best.generation),
                  "data": ",".join(Path(d).name for d in data), "train_steps": str(steps)}
    state = optimizer.state_dict()
    candidate = Checkpoint(game=game.name, game_config=game.config.model_dump(mode="json"),
                           net_params=best.net_params, generation=generation, model=net,
                           provenance=provenance, optimizer=state if device == "cpu" else on_cpu(state))
    save_checkpoint(candidate, out)
    tail = rows[-max(1, len(rows) // 10):]
    result = TrainResult(generation=generation, steps=steps, window_positions=size - added, new_positions=new,
                         seconds=time.perf_counter() - start,
                         loss=float(np.mean([r[2] for r in tail])),
                         policy_loss=float(np.mean([r[3] for r in tail])),
                         value_loss=float(np.mean([r[4] for r in tail])), model_id=candidate.model_id,
                         reanalysed_positions=reanalysed, reanalysed_change=change,
                         afterstate_positions=added,
                         occupancy_loss=float(np.mean([r[5] for r in tail])) if occupancy_steps else None)
    if metrics is not None:
        atomic.write_text(metrics, result.to_json() + "\n")
    if losses is not None:
        write_losses(Path(losses), rows)
    return result


def _minibatch(game, symmetries, window: dict[str, np.ndarray], idx: np.ndarray,
               rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The rows ``idx`` of the window as network input ``x``, ``policy``, ``legal`` and
    ``value_target``, each sample under a random one of the game's ``symmetries`` or none (drawn
    from ``rng``)."""
    states = window["state"][idx]
    x = game.encode(states)
    policy, legal = window["policy"][idx], window["legal"][idx]
    if symmetries:
        which = rng.integers(0, len(symmetries) + 1, size=idx.size)
        for k, sym in enumerate(symmetries, start=1):
            sel = which == k
            x[sel] = sym.apply_planes(x[sel])
            policy[sel], legal[sel] = sym.apply_targets(policy[sel], legal[sel], states[sel])
    batch = {"x": x, "policy": policy, "legal": legal, "value_target": window["value_target"][idx]}
    if "occupancy" in window:  # the triangle puzzle's only (no symmetries to apply)
        batch["occupancy"] = window["occupancy"][idx].astype(np.float32)
    return batch


def row_losses(game, net_params, logits: torch.Tensor, value_out: torch.Tensor, legal: torch.Tensor,
               policy: torch.Tensor, value_target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(policy [B], value [B])``: each row's losses as training defines them, in float32, from
    the network's ``logits [B, A]`` and ``value_out`` (``[B, V]`` support logits for a
    single-player game, ``[B]`` otherwise) against the row's ``legal [B, A]`` (bool),
    ``policy [B, A]`` and ``value_target [B]``. The policy's is the cross-entropy over the legal
    moves (0 on a row with no legal move: an afterstate row, which has no policy target); the
    value's is the two-hot cross-entropy over ``net_params``' support (single-player) or the
    squared error (two-player). :func:`_losses` takes their means; ``tri eval loss`` reports them
    on held-out rows."""
    log_p = torch.log_softmax(logits.float().masked_fill(~legal, -1e9), dim=1)
    policy_rows = -(policy * log_p).sum(dim=1)
    if game.num_players == 1:
        target = two_hot(value_target, net_params.support_max, net_params.support_eps)
        return policy_rows, -(target * torch.log_softmax(value_out.float(), dim=1)).sum(dim=1)
    return policy_rows, F.mse_loss(value_out.float(), value_target, reduction="none")


def _losses(net, game, tp, batch: dict[str, np.ndarray], device: str):
    """``(loss, policy_loss, value_loss)`` of one minibatch on ``device``, then ``occupancy_loss``
    for a network with an occupancy head: the forward pass under
    :func:`tri.device.training_autocast` (``train.precision``), the losses (:func:`row_losses`,
    averaged) in float32."""

    def tensor(name: str) -> torch.Tensor:
        return torch.from_numpy(batch[name]).to(device)

    with training_autocast(device, resolve_precision(tp.precision, device)):
        logits, value_out, occupancy = net.forward_all(tensor("x"))
    legal = tensor("legal")
    policy_rows, value_rows = row_losses(game, net.params, logits, value_out, legal, tensor("policy"),
                                         tensor("value_target"))
    has_policy = legal.any(dim=1)  # afterstate rows (mcts.afterstates) have no legal action, no target
    policy_loss = policy_rows.mean() if bool(has_policy.all()) else \
        policy_rows.sum() / has_policy.sum().clamp(min=1)
    value_loss = value_rows.mean()
    loss = policy_loss + tp.value_weight * value_loss
    if occupancy is None:
        return loss, policy_loss, value_loss
    occupancy_loss = F.binary_cross_entropy_with_logits(occupancy.float(), tensor("occupancy"))
    return loss + tp.occupancy_weight * occupancy_loss, policy_loss, value_loss, occupancy_loss


def on_cpu(state):
    """``state`` (an optimizer's state dict: nested dicts, lists and tuples) with every tensor
    copied to the CPU, so a checkpoint saved from a GPU run loads on any machine."""
    if isinstance(state, torch.Tensor):
        return state.cpu()
    if isinstance(state, dict):
        return {k: on_cpu(v) for k, v in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(on_cpu(v) for v in state)
    return state


def write_losses(path: Path, rows: list[tuple]) -> None:
    """``rows``: ``(step, lr, loss, policy_loss, value_loss[, occupancy_loss])``, the last only
    for a network with an occupancy head (a column then)."""
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    occupancy = bool(rows) and len(rows[0]) > 5
    writer.writerow(["step", "lr", "loss", "policy_loss", "value_loss"] + (["occupancy_loss"] if occupancy else []))
    writer.writerows((s, f"{lr:.6g}", *(f"{x:.6f}" for x in losses)) for s, lr, *losses in rows)
    atomic.write_text(path, buffer.getvalue())
