"""Progress of the long steps: the meter, its reports, the stages' counts."""

from __future__ import annotations

import io
import re
import threading

import pytest

from tri import arena, progress, selfplay, train

from tests.pipeline_fixtures import PARAMS, save_model, with_section


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_meter_reports_its_first_count_then_at_most_every_few_seconds_and_at_the_end():
    clock, seen = FakeClock(), []
    m = progress.Meter("self-play", 10, "games", seen.append,
                       lambda v, done, s: f"mean {v['score'] / done:.1f}", every=5.0, clock=clock)
    m.advance(score=4.0)
    clock.now = 2.0
    m.advance(score=6.0)  # too soon: no report
    clock.now = 6.0
    m.advance(score=8.0)
    m.close()
    m.close()  # once
    assert [(u.done, u.figures, u.final) for u in seen] == [(1, "mean 4.0", False), (3, "mean 6.0", False),
                                                          (3, "mean 6.0", True)]
    assert seen[-1].line() == "self-play  3/10 games  mean 6.0  0:06  done"


def test_a_meter_counts_every_thread():
    m = progress.Meter("self-play", 8000, "games", None)

    def work():
        for _ in range(1000):
            m.advance(positions=2)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert m.done == 8000 and m.values == {"positions": 16000}


def test_a_stream_that_is_not_a_terminal_gets_lines():
    out = io.StringIO()
    report = progress.for_stream(out)
    report(progress.Update("train", 5, 40, "steps", "loss 1.2500", 75.0))
    assert out.getvalue() == "train      5/40 steps  loss 1.2500  1:15\n"


def test_the_stages_report_what_they_do(tmp_path):
    params = with_section(PARAMS, "selfplay", games=6, shards=1)
    model = tmp_path / "m.pt"
    save_model(model, params)
    seen: list[progress.Update] = []
    report = progress.lines(lambda line: None)

    def keep(update):
        seen.append(update)
        report(update)

    keep.every = 0.0
    result = selfplay.run(params, model, tmp_path / "sp", generation=1, progress=keep)
    plays = [u for u in seen if u.stage == "self-play"]
    assert plays[-1].final and plays[-1].done == result.games == 6
    assert re.search(r"positions/s  mean score -?\d+\.\d\d$", plays[-1].figures)
    assert any(u.done < 6 for u in plays[:-1])  # heard while it ran, not only at the end
    train.run(params, model, [tmp_path / "sp"], tmp_path / "c.pt", generation=1, progress=keep)
    steps = [u for u in seen if u.stage == "train"]
    assert steps[-1].final and steps[-1].figures.startswith("loss ") and len(steps) > 2
    arena.run(params, str(tmp_path / "c.pt"), "greedy", generation=1, progress=keep,
              labels=("candidate", "greedy"))
    games = [u for u in seen if u.stage == "arena"]
    assert games[-1].done == 2 * params.arena.games
    assert re.fullmatch(r"mean candidate -?\d+\.\d\d, greedy -?\d+\.\d\d", games[-1].figures)
