"""The policy/value network and its self-describing checkpoints.

A residual CNN over ``game.encode`` planes ``[B, C, H, W]``:

- **policy head**: one logit per action ``[B, A]``; :func:`masked_policy` masks illegal actions
  before the softmax.
- **value head**, by game kind:
  - single-player (the triangle puzzle): the expected discounted return is unbounded (scores run
    from 0 to thousands), so the head predicts a categorical distribution over a fixed support in
    a squashed space, as MuZero does: ``h(x) = sign(x) (sqrt(|x| + 1) - 1) + eps x`` maps returns
    to a compact range, targets are *two-hot* vectors on the support (the two neighbouring bins
    share the mass so the expectation is exact), the loss is cross-entropy, and the prediction is
    ``h^-1(E[support])``. Cross-entropy on a categorical target keeps gradients well scaled
    whatever the return's magnitude, where a regression loss on raw returns is dominated by the
    largest scores and drifts as the agent improves.
  - two-player: ``tanh`` of a scalar, in ``[-1, 1]`` from the side to move.

Checkpoints are ``torch.save`` dicts of tensors and plain values, loaded with
``torch.load(weights_only=True)`` (no pickled code runs), and carry everything needed to rebuild
the network: the game and its config, the network config, generation and provenance.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from tri import atomic
from tri.config import NetParams
from tri.errors import TriError
from tri.games import game_from_meta
from tri.grow import grow_refusal, grown_weights

FORMAT = "tri-checkpoint"
FORMAT_VERSION = 1


def h(x: torch.Tensor, eps: float) -> torch.Tensor:
    """MuZero's invertible squashing transform."""
    return torch.sign(x) * (torch.sqrt(torch.abs(x) + 1) - 1) + eps * x


def h_inv(y: torch.Tensor, eps: float) -> torch.Tensor:
    """Inverse of :func:`h`."""
    if eps == 0:
        return torch.sign(y) * ((torch.abs(y) + 1) ** 2 - 1)
    # sqrt(1 + u) - 1 written as u / (sqrt(1 + u) + 1): no cancellation in float32.
    u = 4 * eps * (torch.abs(y) + 1 + eps)
    return torch.sign(y) * ((u / (torch.sqrt(1 + u) + 1) / (2 * eps)) ** 2 - 1)


def two_hot(values: torch.Tensor, support_max: int, eps: float) -> torch.Tensor:
    """``[B] -> [B, support_max + 1]``: returns as two-hot targets on the support ``0..support_max``
    in h-space (values outside are clipped to the ends)."""
    y = h(values.float(), eps).clamp(0, support_max)
    low = y.floor().long().clamp(max=support_max - 1)
    frac = y - low.float()
    out = torch.zeros(values.shape[0], support_max + 1, device=values.device)
    out.scatter_(1, low[:, None], (1 - frac)[:, None])
    out.scatter_add_(1, (low + 1)[:, None], frac[:, None])
    return out


class _Block(nn.Module):
    def __init__(self, c: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(x + self.bn2(self.conv2(y)))


class PolicyValueNet(nn.Module):
    """``forward(x [B, C, H, W]) -> (policy logits [B, A], value output)`` where the value output
    is ``[B, support_max + 1]`` logits (single-player) or ``[B]`` in ``[-1, 1]`` (two-player);
    :meth:`value` turns either into ``[B]`` values. With ``net.occupancy_steps`` a third head, a
    1x1 convolution, gives per-cell logits of occupancy that many moves later, for training only
    (:meth:`forward_all`; :mod:`tri.occupancy`)."""

    def __init__(self, obs_shape: tuple[int, int, int], num_actions: int, num_players: int,
                 params: NetParams):
        super().__init__()
        c_in, height, width = obs_shape
        p = params
        self.params, self.num_players = params, num_players
        self.stem = nn.Sequential(nn.Conv2d(c_in, p.channels, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(p.channels), nn.ReLU())
        self.trunk = nn.Sequential(*[_Block(p.channels) for _ in range(p.blocks)])
        cells = height * width
        self.policy_head = nn.Sequential(
            nn.Conv2d(p.channels, p.policy_channels, 1, bias=False), nn.BatchNorm2d(p.policy_channels),
            nn.ReLU(), nn.Flatten(), nn.Linear(p.policy_channels * cells, num_actions))
        value_out = p.support_max + 1 if num_players == 1 else 1
        self.value_head = nn.Sequential(
            nn.Conv2d(p.channels, p.value_channels, 1, bias=False), nn.BatchNorm2d(p.value_channels),
            nn.ReLU(), nn.Flatten(), nn.Linear(p.value_channels * cells, p.value_hidden), nn.ReLU(),
            nn.Linear(p.value_hidden, value_out))
        self.register_buffer("support", torch.arange(p.support_max + 1, dtype=torch.float32),
                             persistent=False)
        # Start from uniform priors and a value of 0, not from whatever the random last layers
        # say: an untrained single-player head would otherwise predict the support's midpoint
        # (h^-1(support_max / 2), hundreds of points), which takes many steps to unlearn.
        for head in (self.policy_head[-1], self.value_head[-1]):
            nn.init.zeros_(head.weight)
            nn.init.zeros_(head.bias)
        if num_players == 1:
            with torch.no_grad():
                self.value_head[-1].bias[0] = 10.0
        # Last, so the other weights draw what they drew before the head existed.
        self.occupancy_head = nn.Conv2d(p.channels, 1, 1) if p.occupancy_steps else None

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self._heads(self.trunk(self.stem(x)))  # the search's: never the occupancy head

    def forward_all(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Training's forward: :meth:`forward`'s outputs, then the occupancy head's logits ``[B, H
        * W]`` (``net.occupancy_steps``; None without the head)."""
        z = self.trunk(self.stem(x))
        occupancy = None if self.occupancy_head is None else self.occupancy_head(z).flatten(1)
        return *self._heads(z), occupancy

    def _heads(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        v = self.value_head(z)
        return self.policy_head(z), (v if self.num_players == 1 else torch.tanh(v[:, 0]))

    def value(self, value_out: torch.Tensor) -> torch.Tensor:
        """``[B]`` values from the value head's output."""
        if self.num_players != 1:
            return value_out
        expected = (torch.softmax(value_out, dim=-1) * self.support).sum(dim=-1)
        return h_inv(expected, self.params.support_eps)


class EnsembleNet(nn.Module):
    """K networks of one shape as one player (``tri ensemble``; :mod:`tri.ensemble`):
    ``forward(x [B, C, H, W]) -> (policy logits [K, B, A], value outputs [K, B, ...])``, each
    member's own, and :meth:`value` -> ``[K, B]``. The search's evaluator averages the members'
    masked priors and their values (:func:`tri.evaluator.make_evaluator`): a prediction
    ensemble, not an average of weights. Search only: training takes one network."""

    def __init__(self, members: list[PolicyValueNet]):
        super().__init__()
        self.members = nn.ModuleList(members)
        self.params, self.num_players = members[0].params, members[0].num_players
        self.register_buffer("support", members[0].support.clone(), persistent=False)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        outs = [member(x) for member in self.members]
        return torch.stack([p for p, _ in outs]), torch.stack([v for _, v in outs])

    value = PolicyValueNet.value


def masked_policy(logits: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
    """Softmax over legal actions only: ``[..., A], [..., A] bool -> [..., A]`` (rows with no legal
    action give zeros). A finite floor for the illegal logits, not -inf: such a row softmaxes to a
    uniform row, which the mask then zeroes, with no NaN to clean (and the same operations export
    to ONNX: :mod:`tri.ort`); a row with a legal action gets the same bits either way."""
    return torch.softmax(logits.masked_fill(~legal, -1e30), dim=-1) * legal


# ---- checkpoints ------------------------------------------------------------------------


@dataclass
class Checkpoint:
    """A network with what it needs to be rebuilt and traced back.

    ``game``: the game's name; ``game_config``: its ``params.yaml`` section (a dict);
    ``net_params``; ``generation``; ``provenance``: free-form strings (git commit, parent model,
    data hashes); ``optimizer``: optimizer state to continue training (may be empty). ``model``
    is an :class:`EnsembleNet` of ``net_params``-shaped members in an ensemble's checkpoint
    (``tri ensemble``; its meta's ``members``: their number), which only a search plays.
    """

    game: str
    game_config: dict[str, Any]
    net_params: NetParams
    generation: int
    model: PolicyValueNet | EnsembleNet
    provenance: dict[str, str] = field(default_factory=dict)
    optimizer: dict[str, Any] = field(default_factory=dict)

    @property
    def members(self) -> int:
        """The networks it holds: 1, or an ensemble's K."""
        return len(self.model.members) if isinstance(self.model, EnsembleNet) else 1

    def meta(self) -> dict[str, Any]:
        net = self.net_params.model_dump(mode="json")
        if not net["occupancy_steps"]:  # no head: the bytes of checkpoints from before the setting
            del net["occupancy_steps"]
        ensemble = {"members": self.members} if self.members > 1 else {}  # absent: one network's bytes as before
        return {"game": self.game, "game_config": self.game_config, "net_params": net,
                "generation": self.generation, "provenance": self.provenance, **ensemble}

    @property
    def model_id(self) -> str:
        """A short content hash of the weights: names this exact model in shards and logs."""
        digest = hashlib.sha256()
        for name, tensor in sorted(self.model.state_dict().items()):
            digest.update(name.encode())
            digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
        return digest.hexdigest()[:16]


def build_model(game, params: NetParams) -> PolicyValueNet:
    """A freshly initialised network for ``game``, its weights drawn from ``params.seed``."""
    if params.occupancy_steps and not hasattr(game, "occupied"):
        raise TriError(f"net.occupancy_steps: the game {game.name} has no occupancy target (the triangle "
                       f"puzzle has); set it to 0")
    generator_state = torch.random.get_rng_state()
    try:
        torch.manual_seed(params.seed)
        return PolicyValueNet(game.obs_shape, game.num_actions, game.num_players, params)
    finally:
        torch.random.set_rng_state(generator_state)


def initial_checkpoint(game, net_params) -> Checkpoint:
    """Generation 0: a fresh network with weights from ``net_params.seed`` (the same bytes
    whoever creates it: ``tri init``, the loop, or ``dvc repro``)."""
    return Checkpoint(game=game.name, game_config=game.config.model_dump(mode="json"), net_params=net_params,
                      generation=0, model=build_model(game, net_params), provenance={"created_by": "tri init"})


def started_checkpoint(game, net_params, source: str | Path) -> Checkpoint:
    """Generation 0 from the weights of the checkpoint ``source`` (``tri new --from``): a
    project that goes on training an earlier network, a shipped champion for one. ``source``
    must be for ``game`` with the same network shape as ``net_params`` (the seed aside, which
    only draws fresh weights); its optimizer state is dropped. ``net.occupancy_steps`` may
    differ: an occupancy head the source lacks starts from ``net_params.seed``'s weights, one
    ``net_params`` lacks is left out. ``net.channels`` and ``net.blocks`` may be larger: the
    network grows, computing at generation 0 what the source computes (:mod:`tri.grow`).
    Raises :class:`TriError`."""
    src = load_checkpoint(source, game)
    free = ("seed", "occupancy_steps")  # settings that change no weight both networks have
    shape = {k: v for k, v in net_params.model_dump().items() if k not in free}
    theirs = {k: v for k, v in src.net_params.model_dump().items() if k not in free}
    refusal = grow_refusal(theirs, shape)
    if refusal:
        raise TriError(f"checkpoint {source}: its network differs from params.yaml's net: {refusal} (only "
                       f"channels and blocks may grow)")
    model = build_model(game, net_params)
    model.load_state_dict(grown_weights(src.model, model))
    model.eval()
    return Checkpoint(game=game.name, game_config=game.config.model_dump(mode="json"), net_params=net_params,
                      generation=0, model=model,
                      provenance={"created_by": "tri init --from", "started_from": src.model_id,
                                  "started_from_generation": str(src.generation)})


def save_checkpoint(ckpt: Checkpoint, path: str | Path) -> None:
    """Write ``ckpt`` atomically: a temporary file in the same folder, then a rename, so a crash
    leaves the previous file intact."""
    payload = {"format": FORMAT, "format_version": FORMAT_VERSION, "meta": json.dumps(ckpt.meta()),
               "model": ckpt.model.state_dict(), "optimizer": ckpt.optimizer}
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    atomic.write_bytes(path, buffer.getvalue())


def load_checkpoint(path: str | Path, game=None, *, map_location: str | torch.device = "cpu",
                    ensemble: bool = False) -> Checkpoint:
    """Read a checkpoint without executing pickled code. If ``game`` is given, the checkpoint
    must be for that game and config. Raises :class:`TriError` naming the problem. Its tensors
    land on the CPU (``map_location``), whatever device saved them, so a checkpoint loads on
    any machine; a stage moves the network to its own device. ``ensemble``: an ensemble's
    checkpoint (``tri ensemble``) is accepted, for a caller that only searches with it or
    reads its id; otherwise it is refused, as training and growing need one network."""
    path = Path(path)
    if not path.is_file():
        raise TriError(f"checkpoint {path}: file not found")
    try:
        payload = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # torch raises many kinds for a damaged file
        raise TriError(f"checkpoint {path}: not a readable tri checkpoint{_load_failure(path, exc)}") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise TriError(f"checkpoint {path}: not a tri checkpoint")
    if payload.get("format_version") != FORMAT_VERSION:
        raise TriError(f"checkpoint {path}: format version {payload.get('format_version')} "
                       f"is not supported (this tri reads {FORMAT_VERSION})")
    try:
        meta = json.loads(payload["meta"])
        net_params = NetParams(**meta["net_params"])
        name, config, generation = meta["game"], meta["game_config"], int(meta["generation"])
        members = int(meta.get("members", 1))
        if members < 1:
            raise ValueError(f"members: {members}")
    except Exception as exc:
        raise TriError(f"checkpoint {path}: damaged metadata ({type(exc).__name__}: {exc})") from None
    if game is not None:
        check_game(path, name, config, game)
        ckpt_game = game
    else:

        try:
            ckpt_game = game_from_meta(name, config)
        except Exception as exc:  # unknown game, or a config its model rejects
            raise TriError(f"checkpoint {path}: cannot build its game ({_first_sentence(exc)})") from None
    if members > 1 and not ensemble:
        raise TriError(f"checkpoint {path}: an ensemble of {members} networks (tri ensemble), which only a "
                       f"player's search takes; this needs one network")

    def network() -> PolicyValueNet:
        return PolicyValueNet(ckpt_game.obs_shape, ckpt_game.num_actions, ckpt_game.num_players, net_params)

    model = network() if members == 1 else EnsembleNet([network() for _ in range(members)])
    first = "stem.0.weight" if members == 1 else "members.0.stem.0.weight"
    stem = payload["model"].get(first) if isinstance(payload.get("model"), dict) else None
    if isinstance(stem, torch.Tensor) and stem.dim() == 4 and stem.shape[1] != ckpt_game.obs_shape[0]:
        raise TriError(f"checkpoint {path}: made for {stem.shape[1]} input planes, but this tri encodes "
                       f"{name} as {ckpt_game.obs_shape[0]} (a checkpoint of an earlier tri version)")
    try:
        model.load_state_dict(payload["model"])
    except (RuntimeError, KeyError, TypeError) as exc:
        raise TriError(f"checkpoint {path}: weights do not match its network config "
                       f"({_first_sentence(exc)})") from None
    model.eval()
    return Checkpoint(game=name, game_config=config, net_params=net_params, generation=generation, model=model,
                      provenance=dict(meta.get("provenance", {})), optimizer=payload.get("optimizer") or {})


def _load_failure(path: Path, exc: Exception) -> str:
    """Why ``torch.load(path, weights_only=True)`` failed, as the end of a one-line message,
    without torch's advice to load untrusted files unsafely."""
    text = str(exc)
    if text.startswith("Weights only load failed"):
        found = re.search(r"Unsupported global: GLOBAL (\S+)", text)
        if found:
            return (f": it holds Python objects ({found[1]}) that tri will not unpickle (it loads checkpoints "
                    "with weights_only=True)")
        detail = re.search(r"WeightsUnpickler error:\s*(\S[^\n]*)", text)
        return f" (torch's weights-only loader cannot read it{': ' + _shorten(detail[1]) if detail else ''})"
    if path.stat().st_size == 0:
        return " (the file is empty)"
    return f" ({_first_sentence(exc)})"


def _first_sentence(exc: Exception, limit: int = 160) -> str:
    """The first sentence of ``exc``'s first line (its type's name if it has no message)."""
    lines = str(exc).strip().splitlines()
    if not lines:
        return type(exc).__name__
    return _shorten(re.split(r"(?<=[.!?])\s", lines[0].strip(), maxsplit=1)[0].rstrip("."), limit)


def _shorten(text: str, limit: int = 160) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, with "..." if cut."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 3]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut).rstrip(" ,;:") + "..."


def check_game(path: Path | str, name: str, config: dict[str, Any], game) -> None:
    """Raise :class:`TriError` unless a checkpoint's game matches ``game``."""
    if name != game.name:
        raise TriError(f"checkpoint {path}: it is for the game {name!r}, not {game.name!r}")
    if config != game.config.model_dump(mode="json"):
        raise TriError(f"checkpoint {path}: it is for a different {name} configuration than params.yaml")
