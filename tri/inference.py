"""Search-only snapshots of networks, faster on a CPU than the modules they fold:
:class:`InferenceNet` of one :class:`~tri.net.PolicyValueNet`, :class:`StackedInferenceNet`
of an ensemble's members (:class:`~tri.net.EnsembleNet`) in one pass. The search's evaluator
picks one (:func:`tri.evaluator.make_evaluator`)."""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn

from tri.net import EnsembleNet, PolicyValueNet


class _Snapshot(nn.Module):
    """What both snapshots share: a folded stem and residual blocks run channels-last in
    ``dtype``, and a batch over ``chunk`` in pieces (their outputs joined on ``cat_dim``)."""

    cat_dim = 0

    def _ready(self) -> None:
        self.to(memory_format=torch.channels_last)
        for conv in (self.stem, *(c for pair in self.blocks for c in pair), self.policy_conv, self.value_conv):
            conv.to(self.dtype)
        self.eval()

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if x.shape[0] > self.chunk:
            parts = [self.forward(x[i:i + self.chunk]) for i in range(0, x.shape[0], self.chunk)]
            return (torch.cat([p for p, _ in parts], dim=self.cat_dim),
                    torch.cat([v for _, v in parts], dim=self.cat_dim))
        x = x.to(dtype=self.dtype, memory_format=torch.channels_last)
        z = F.relu_(self.stem(x))  # in place: each activation is a fresh tensor nothing else holds
        for conv1, conv2 in self.blocks:
            y = conv2(F.relu_(conv1(z)))
            z = F.relu_(y.add_(z))
        return self._heads(z)

    value = PolicyValueNet.value


class InferenceNet(_Snapshot):
    """A search-only snapshot of a :class:`PolicyValueNet`: each BatchNorm folded into the
    convolution before it (its running statistics and affine become the convolution's weight
    and bias), weights in channels-last layout, and one plain forward with no module call per
    layer. The same ``forward``/``value`` as the model up to float rounding (about 1e-7 on the
    outputs: the folded weights round differently), and faster on a CPU (``tri bench search``
    measures both at the same batch). A snapshot: training the model afterwards does not change
    it. Self-play's searches use it (:func:`make_evaluator` with ``fast=True``), and so do a
    single-player game's players (the arena's gate included) and players with several trees per
    move (:func:`tri.players.player_evaluator`); a two-player game's one-tree players use the
    model itself.

    A batch of more than ``chunk`` positions goes through in pieces of ``chunk`` (the same
    numbers up to float rounding: the convolution may pick another kernel for another batch
    size): on this machine's CPU (2 MB of L2 cache per core) 64 positions' activations stay in
    cache where 128's do not, and go about 1.1-1.3x faster per position.

    ``dtype``: the convolutions' number format (``mcts.precision``). In ``torch.bfloat16`` the
    trunk and the heads' 1x1 convolutions, nearly all the arithmetic, run in bfloat16 (inputs,
    weights and activations rounded to 8 significant bits, sums kept in float32 by the
    kernels); the heads' fully connected layers, the policy logits and the value stay float32."""

    def __init__(self, model: PolicyValueNet, chunk: int = 64, dtype: torch.dtype = torch.float32):
        super().__init__()
        self.dtype = dtype
        self.chunk = chunk
        from torch.nn.utils.fusion import fuse_conv_bn_eval

        model = model.eval()
        self.num_players, self.params = model.num_players, model.params
        self.stem = fuse_conv_bn_eval(model.stem[0], model.stem[1])
        self.blocks = nn.ModuleList(nn.ModuleList([fuse_conv_bn_eval(b.conv1, b.bn1), fuse_conv_bn_eval(b.conv2, b.bn2)])
                                    for b in model.trunk)
        self.policy_conv = fuse_conv_bn_eval(model.policy_head[0], model.policy_head[1])
        self.policy_out = copy.deepcopy(model.policy_head[4])
        self.value_conv = fuse_conv_bn_eval(model.value_head[0], model.value_head[1])
        self.value_hidden, self.value_out = copy.deepcopy(model.value_head[4]), copy.deepcopy(model.value_head[6])
        self.register_buffer("support", model.support.clone(), persistent=False)
        self._ready()

    def _heads(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        policy = self.policy_out(F.relu_(self.policy_conv(z)).float().flatten(1))
        v = self.value_out(F.relu_(self.value_hidden(F.relu_(self.value_conv(z)).float().flatten(1))))
        return policy, (v if self.num_players == 1 else torch.tanh(v[:, 0]))


class StackedInferenceNet(_Snapshot):
    """An :class:`EnsembleNet`'s K members in one search-only pass: each member folded as
    :class:`InferenceNet` folds one (BatchNorm into the convolution before it,
    channels-last, ``dtype`` for the convolutions), then stacked: member k's channels are the
    k-th of K groups of every convolution, and its fully connected layers the k-th matrices of
    batched products. ``forward(x [B, C, H, W]) -> (policy logits [K, B, A], value outputs [K,
    B, V])``, each member's as its own InferenceNet gives it up to float rounding; ``value`` ->
    ``[K, B]``. Batches over ``chunk`` go through in pieces, as InferenceNet's do."""

    def __init__(self, ensemble: EnsembleNet, chunk: int = 64, dtype: torch.dtype = torch.float32):
        super().__init__()
        folded = [InferenceNet(m, chunk, dtype) for m in ensemble.members]
        self.k, self.chunk, self.dtype = len(folded), chunk, dtype
        self.num_players, self.params = ensemble.num_players, ensemble.params
        self.stem = _side_by_side([f.stem for f in folded], groups=1)
        self.blocks = nn.ModuleList(
            nn.ModuleList([_side_by_side([f.blocks[i][j] for f in folded], groups=self.k) for j in (0, 1)])
            for i in range(len(folded[0].blocks)))
        self.policy_conv = _side_by_side([f.policy_conv for f in folded], groups=self.k)
        self.value_conv = _side_by_side([f.value_conv for f in folded], groups=self.k)
        for name in ("policy_out", "value_hidden", "value_out"):
            layers = [getattr(f, name) for f in folded]
            # [K, in, out] and [K, 1, out]: x [K, B, in] @ weight + bias in one torch.baddbmm
            self.register_buffer(f"{name}_weight", torch.stack([m.weight.detach().T for m in layers]).contiguous())
            self.register_buffer(f"{name}_bias", torch.stack([m.bias.detach()[None] for m in layers]))
        self.register_buffer("support", ensemble.support.clone(), persistent=False)
        self._ready()

    cat_dim = 1  # outputs [K, B, ...]: pieces of the batch join on B

    def _heads(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b = z.shape[0]

        def per_member(conv: nn.Conv2d) -> torch.Tensor:  # [B, K * c, H, W] -> [K, B, c * H * W]
            return F.relu_(conv(z)).float().reshape(b, self.k, -1).transpose(0, 1)

        policy = torch.baddbmm(self.policy_out_bias, per_member(self.policy_conv), self.policy_out_weight)
        hidden = F.relu_(torch.baddbmm(self.value_hidden_bias, per_member(self.value_conv), self.value_hidden_weight))
        v = torch.baddbmm(self.value_out_bias, hidden, self.value_out_weight)
        return policy, (v if self.num_players == 1 else torch.tanh(v[..., 0]))


def _side_by_side(convs: list[nn.Conv2d], groups: int) -> nn.Conv2d:
    """One convolution computing each of ``convs`` (folded, with a bias) on its own group of the
    input's channels (``groups`` = their number), or all on the whole input (``groups=1``), their
    outputs side by side on the channel axis."""
    first = convs[0]
    out = nn.Conv2d(first.in_channels * groups, first.out_channels * len(convs), first.kernel_size,
                    padding=first.padding, groups=groups, bias=True)
    with torch.no_grad():
        out.weight.copy_(torch.cat([c.weight.float() for c in convs]))
        out.bias.copy_(torch.cat([c.bias.float() for c in convs]))
    return out
