"""Progress of the long steps: the meter, its reports, the stages' counts, and what ``tri loop``
prints when its output is not a terminal (a log, a pipe, CI): progress lines while a stage runs,
its table rows, and nothing from another tool in between."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import threading
import time

import psutil
import pytest

from tests.pipeline_fixtures import PARAMS, save_model, with_section
from tests.test_flow import git, new_project
from tests.test_signals import loop_env
from tri import arena, progress, selfplay, train
from tri.params_yaml import dump_params


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


TABLE_ROW = re.compile(r"^\s+\d+\s+-?\d+\.\d\d\s+(\d+\.\d|reused)\s+")
PROGRESS = re.compile(r"^  gen-\d{4} (self-play|reanalyse|train|arena)\s+\d+/\d+ (games|folders|steps)(  .*)?  \d+:\d\d(  done)?$")


def prefect_servers(pid: int) -> set[str]:
    """The command lines of the Prefect servers among ``pid``'s descendants: the loop's own
    (``prefect server start``) and any ephemeral one (uvicorn serving Prefect's ``create_app``)."""
    found = set()
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return found
    for child in children:
        try:
            line = " ".join(child.cmdline())
        except psutil.Error:
            continue
        if "prefect server start" in line or "prefect.server.api.server:create_app" in line:
            found.add(line)
    return found


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_tri_loop_shows_progress_and_only_its_own_lines_when_not_on_a_terminal(tmp_path):
    """Also with two workers (the arena's paired games on two threads): no thread of the loop
    reports to a Prefect server of its own (Prefect's ephemeral one, started by a thread that
    did not see the loop's server), which is how a run once got a second server."""
    from pipelines.loop import HEADER

    root, home = new_project(tmp_path / "project"), tmp_path / "home"
    home.mkdir()
    slow = with_section(PARAMS, "selfplay", games=64, concurrent=8, max_moves=30)
    (root / "params.yaml").write_text(dump_params(slow))
    git(root, "commit", "-q", "-am", "params for a generation that takes a few seconds")
    proc = subprocess.Popen([sys.executable, "-m", "tri.cli", "loop", "--root", str(root), "--generations", "1"],
                            cwd=tmp_path, env={**loop_env(home), "TRI_WORKERS": "2"}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines = []  # (seconds since start, line) as the loop printed them
    servers = set()  # the loop's Prefect servers seen, by command line
    start = time.monotonic()
    for line in proc.stdout:
        lines.append((time.monotonic() - start, line.rstrip("\n")))
        servers |= prefect_servers(proc.pid)
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == 0, err[-3000:]
    assert len(servers) == 1 and "prefect server start" in next(iter(servers)), servers
    text = [line for _, line in lines]
    assert text[0] == HEADER, text
    assert text[-1] == "loop stops: 1 generation(s) done", text
    # Nothing but tri's own lines: the table, the progress between its rows, the stop line.
    foreign = [line for line in text[1:-1] if not (TABLE_ROW.match(line) or PROGRESS.match(line))]
    assert foreign == [], foreign
    assert err == "", err
    # Each stage is heard while it runs (a line without "done"), then when it ends, before the row.
    for stage in ("self-play", "train", "arena"):
        mine = [(t, line) for t, line in lines if PROGRESS.match(line) and f" {stage} " in line]
        assert mine and not mine[0][1].endswith("done") and mine[-1][1].endswith("done"), (stage, text)
        assert mine[0][0] < mine[-1][0], (stage, lines)  # printed as it ran, not all at the end
    row = next(i for i, line in enumerate(text) if TABLE_ROW.match(line))
    assert row == len(text) - 2


def test_a_stage_that_fails_says_stopped_not_done():
    seen = []
    with pytest.raises(KeyboardInterrupt):
        with progress.Meter("train", 10, "steps", seen.append, every=0.0) as m:
            m.advance()
            raise KeyboardInterrupt
    assert [(u.final, u.stopped) for u in seen] == [(False, False), (True, True)]
    assert seen[-1].line().endswith("stopped")
