"""``tri eval loss``: a network's policy and value loss on self-play it never trained on.

Play measures a network through a search and many sampled futures, so two networks need
hundreds of games to tell apart. Their losses on the same held-out positions tell far sooner
whether a change (a larger network, an auxiliary head, another target) learns the value or the
policy better, though not by how much it plays better. The positions are a self-play folder's
(``data/selfplay/gen-NNNN``, or several), read as training reads them (:func:`tri.train.load_window`:
with ``mcts.afterstates``, each drawing move's afterstate row too), with their recorded targets
(never reanalysed). Each row's losses are training's: the policy's cross-entropy over the legal
moves (rows with a policy target only), the value's two-hot cross-entropy (single-player) or
squared error (two-player), the network in evaluation mode and float32; and the value's *error*,
the squared difference between the value the search reads (the two-hot distribution's
expectation) and the target. The cross-entropy also scores how wide the predicted distribution
is, so a network trained on targets with less spread (``train.luck_samples``) pays for being
sure against noisy ones; the error scores the expectation alone. Reported (:class:`HeldOutLoss`):
each network's means, and with a baseline the paired difference PLAYER - baseline with a 95%
interval over games (each game's mean difference one sample: the positions of a game are not
independent draws: :func:`clustered_mean_ci`).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from tri.arena import t_quantile
from tri.config import Params, Runtime
from tri.device import resolve_device
from tri.games import make_game
from tri.net import load_checkpoint
from tri.train import load_window, row_losses

BATCH = 1024  # positions per forward pass


@dataclass(frozen=True)
class HeldOutLoss:
    """Mean losses of ``player`` (and ``baseline``) on ``positions`` rows of ``games`` games in
    ``data``, ``policy_positions`` of them with a policy target; ``*_diff``, ``*_low``,
    ``*_high``: the paired difference player - baseline and its 95% interval over games."""

    data: list[str]
    positions: int
    policy_positions: int
    games: int
    player: str
    policy: float
    value: float
    value_error: float
    baseline: str | None = None
    baseline_policy: float | None = None
    baseline_value: float | None = None
    baseline_value_error: float | None = None
    policy_diff: float | None = None
    policy_low: float | None = None
    policy_high: float | None = None
    value_diff: float | None = None
    value_low: float | None = None
    value_high: float | None = None
    value_error_diff: float | None = None
    value_error_low: float | None = None
    value_error_high: float | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)


def network_row_losses(model, window: dict[str, np.ndarray], game, device: str
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(policy [P], value [P], error [P])``: each row's losses under ``model`` (evaluation
    mode), as training defines them (:func:`tri.train.row_losses`), and the squared error of its
    value (:meth:`~tri.net.PolicyValueNet.value`) against the target; ``policy`` is NaN where the
    row has no policy target (an afterstate)."""
    model = model.eval().to(device)
    policy_out, value_out, error_out = [], [], []
    with torch.inference_mode():
        for start in range(0, window["state"].shape[0], BATCH):
            rows = slice(start, start + BATCH)
            logits, out = model(torch.from_numpy(game.encode(window["state"][rows])).to(device))
            legal = torch.tensor(window["legal"][rows], device=device)  # a copy: the window may be read-only
            target = torch.tensor(window["value_target"][rows], device=device)
            policy, value = row_losses(game, model.params, logits, out, legal,
                                       torch.tensor(window["policy"][rows], device=device), target)
            policy[~legal.any(dim=1)] = float("nan")
            policy_out.append(policy.cpu().numpy())
            value_out.append(value.cpu().numpy())
            error_out.append((model.value(out.float()) - target).square().cpu().numpy())
    return np.concatenate(policy_out), np.concatenate(value_out), np.concatenate(error_out)


def run(params: Params, player: Path, data: list[Path], baseline: Path | None = None, *,
        runtime: Runtime | None = None) -> HeldOutLoss:
    """The losses of the checkpoint ``player`` (and ``baseline``) on the self-play folders
    ``data``, for ``params.game``. Raises :class:`~tri.errors.TriError` for a checkpoint or a
    folder that is not the game's."""
    game = make_game(params.game)
    device = resolve_device((runtime or Runtime()).device)
    nets = [load_checkpoint(p, game) for p in ([player] if baseline is None else [player, baseline])]
    window = load_window(game, list(data), afterstates=params.mcts.afterstates and game.stochastic,
                         with_games=True)[0]
    losses = [network_row_losses(ckpt.model, window, game, device) for ckpt in nets]
    has_policy = ~np.isnan(losses[0][0])
    games = np.unique(window["game"])
    result = dict(data=[str(d) for d in data], positions=int(window["state"].shape[0]),
                  policy_positions=int(has_policy.sum()), games=int(games.size), player=str(player),
                  policy=float(losses[0][0][has_policy].mean(dtype=np.float64)),
                  value=float(losses[0][1].mean(dtype=np.float64)), value_error=float(losses[0][2].mean(dtype=np.float64)))
    if baseline is not None:
        result.update(baseline=str(baseline), baseline_policy=float(losses[1][0][has_policy].mean(dtype=np.float64)),
                      baseline_value=float(losses[1][1].mean(dtype=np.float64)),
                      baseline_value_error=float(losses[1][2].mean(dtype=np.float64)))
        for k, name in enumerate(("policy", "value", "value_error")):
            diff = losses[0][k].astype(np.float64) - losses[1][k]
            keep = has_policy if name == "policy" else np.ones(diff.size, bool)
            diff_mean, low, high = clustered_mean_ci(diff[keep], window["game"][keep])
            result.update({f"{name}_diff": diff_mean, f"{name}_low": low, f"{name}_high": high})
    return HeldOutLoss(**result)


def clustered_mean_ci(values: np.ndarray, clusters: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """``(mean, low, high)``: the mean of ``values [N]`` (so the difference of two networks'
    means exactly) with a t interval that treats each of the ``clusters [N]`` (games) as one
    sample: the ratio estimator's linearised variance, sum over clusters of (S_g - mean n_g)^2,
    times G / (G - 1), over N^2."""
    _, which = np.unique(clusters, return_inverse=True)
    sums, counts = np.bincount(which, weights=values), np.bincount(which)
    g, n = sums.size, counts.sum()
    mean = float(sums.sum() / n)
    if g < 2:
        return mean, float("-inf"), float("inf")
    half = t_quantile(0.5 + level / 2, g - 1) * math.sqrt(g / (g - 1) * float(((sums - mean * counts) ** 2).sum())) / n
    return mean, mean - half, mean + half


def format_loss(r: HeldOutLoss) -> str:
    """Plain lines: the data, each network's mean losses and value error, then the paired
    differences."""
    lines = [f"held-out loss on {r.positions:,} positions ({r.policy_positions:,} with a policy target) of "
             f"{r.games:,} games: {', '.join(r.data)}",
             f"{'network':<48} {'policy':>8} {'value':>8} {'value error':>12}",
             f"{r.player:<48} {r.policy:8.4f} {r.value:8.4f} {r.value_error:12.4f}"]
    if r.baseline is not None:
        lines += [f"{r.baseline + ' (baseline)':<48} {r.baseline_policy:8.4f} {r.baseline_value:8.4f} "
                  f"{r.baseline_value_error:12.4f}",
                  f"paired difference network - baseline, 95% interval over games: policy {r.policy_diff:+.4f} "
                  f"[{r.policy_low:+.4f}, {r.policy_high:+.4f}], value {r.value_diff:+.4f} "
                  f"[{r.value_low:+.4f}, {r.value_high:+.4f}], value error {r.value_error_diff:+.4f} "
                  f"[{r.value_error_low:+.4f}, {r.value_error_high:+.4f}]"]
    return "\n".join(lines)
