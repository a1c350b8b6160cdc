"""Growing a network (``tri new --from`` with a larger ``net.channels`` or ``net.blocks``,
:mod:`tri.grow`): the grown network computes what the source computes, in evaluation and in
training mode, every new weight learns, and shrinking or reshaping a head is refused in one
line. On the small triangle board's tiny network (8 channels, 1 block)."""

from __future__ import annotations

import pytest
import torch

from tri.errors import TriError
from tri.net import load_checkpoint, save_checkpoint, started_checkpoint

from tests.pipeline_fixtures import PARAMS, game_of, save_model, with_section

GROWN = with_section(PARAMS, "net", channels=PARAMS.net.channels + 5, blocks=PARAMS.net.blocks + 2)


def inputs(game, n: int = 32, seed: int = 0) -> torch.Tensor:
    """``[n, C, H, W]`` planes of 0s and 1s, as the game's observations are."""
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(n, *game.obs_shape, generator=g) < 0.3).float()


def trained_source(game, path):
    """A saved tiny network whose BatchNorm statistics and weights are not at their start, so
    that copying them wrongly shows: a few training-mode passes and a random nudge."""
    ckpt = save_model(path, seed=3)
    with torch.no_grad():
        ckpt.model.train()
        for seed in range(4):
            ckpt.model(inputs(game, seed=10 + seed) * 2)
        for p in ckpt.model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    ckpt.model.eval()
    save_checkpoint(ckpt, path)
    return ckpt


@pytest.mark.parametrize("grown", [GROWN, with_section(PARAMS, "net", channels=PARAMS.net.channels + 4),
                                   with_section(PARAMS, "net", blocks=PARAMS.net.blocks + 1)],
                         ids=["wider-and-deeper", "wider", "deeper"])
def test_a_grown_network_computes_what_its_source_does(tmp_path, grown):
    game = game_of()
    source = trained_source(game, tmp_path / "source.pt")
    started = started_checkpoint(game, grown.net, tmp_path / "source.pt")
    assert (started.net_params.channels, started.net_params.blocks) == (grown.net.channels, grown.net.blocks)
    x = inputs(game)
    with torch.no_grad():
        for mode in ("eval", "train"):  # training mode: each channel normalised by its batch's statistics
            getattr(source.model, mode)(), getattr(started.model, mode)()
            (p0, v0), (p1, v1) = source.model(x), started.model(x)
            torch.testing.assert_close(p1, p0, rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(v1, v0, rtol=1e-5, atol=1e-5)
    save_checkpoint(started, tmp_path / "grown.pt")  # and it travels with its own shape
    again = load_checkpoint(tmp_path / "grown.pt", game)
    assert again.net_params.channels == grown.net.channels and again.model_id == started.model_id


def test_every_weight_of_a_grown_network_learns(tmp_path):
    """No new channel or block is dead: a few steps of plain SGD on the policy and value move
    every parameter tensor, the new channels' incoming weights and the new blocks' included."""
    game = game_of()
    trained_source(game, tmp_path / "source.pt")
    model = started_checkpoint(game, GROWN.net, tmp_path / "source.pt").model.train()
    before = {k: v.clone() for k, v in model.named_parameters()}
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    x = inputs(game, seed=1)
    target_policy = torch.randint(0, game.num_actions, (x.shape[0],), generator=torch.Generator().manual_seed(2))
    for _ in range(3):
        policy, value = model(x)
        loss = torch.nn.functional.cross_entropy(policy, target_policy) + value.logsumexp(1).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    c = PARAMS.net.channels
    still = [k for k, v in model.named_parameters() if torch.equal(v, before[k])]
    assert not still, still
    new_rows = dict(model.named_parameters())["trunk.0.conv1.weight"][c:]
    assert not torch.equal(new_rows, before["trunk.0.conv1.weight"][c:])
    assert not torch.equal(dict(model.named_parameters())["trunk.0.conv2.weight"][:c, c:],
                           before["trunk.0.conv2.weight"][:c, c:])  # old channels start reading new ones


@pytest.mark.parametrize("change, words", [
    ({"channels": PARAMS.net.channels - 2}, "channels 8 (params.yaml: 6)"),
    ({"blocks": 0}, "blocks 1 (params.yaml: 0)"),
    ({"value_hidden": 32}, "value_hidden 16 (params.yaml: 32)"),
    ({"channels": 16, "policy_channels": 2}, "policy_channels 4 (params.yaml: 2)"),
])
def test_a_network_only_grows_in_width_and_depth(tmp_path, change, words):
    game = game_of()
    save_model(tmp_path / "source.pt")
    with pytest.raises(TriError) as raised:
        started_checkpoint(game, with_section(PARAMS, "net", **change).net, tmp_path / "source.pt")
    message = str(raised.value)
    assert "\n" not in message and words in message and "only channels and blocks may grow" in message
    assert "channels 8 (params.yaml: 16)" not in message  # a growth is not named as a difference
