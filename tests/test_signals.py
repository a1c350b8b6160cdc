"""Stopping ``tri loop`` every way a person or a machine does, in a git + DVC project with MLflow on.

Each scenario runs ``tri loop`` as a user would (its own session, its own Prefect server) and
signals it in the middle of generation 2's self-play or training, as its progress lines show
(the first run finishes generation 1 first; every later run redoes generation 2 from what the
one before it left: finished shards are kept, the rest played again):

- SIGINT to the process group (a terminal's Ctrl-C reaches every process in it), SIGTERM to the
  process alone (one handler takes SIGINT and SIGTERM): it exits within seconds with one line and
  status 130, no traceback, the loop's MLflow run KILLED;
- SIGINT and SIGTERM leave the loop's and the generation's flow runs Cancelled on the Prefect
  server, saying what was recorded and that the next loop redoes the generation (Prefect's own
  engine would have said Crashed);
- SIGKILL: it cannot clean up; the Prefect server it started dies with it, and the next start
  marks the MLflow run it left RUNNING as KILLED and its flow runs as Crashed.

Afterwards no process the run started is alive, the lock is free, the best model loads, the
interrupted generation left no decision and generation 1 its git tag; a last run completes
generation 2, and then ``git status`` and ``dvc status`` are clean.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from tri import layout
from tri.params_yaml import dump_params
from tri.record import mlstore, versioning
from tri.net import load_checkpoint

from tests.pipeline_fixtures import PARAMS, with_section
from tests.test_flow import git, new_project

# Self-play and training each last a few seconds, so a signal can land inside either.
SLOW = with_section(with_section(with_section(PARAMS, "selfplay", games=256, concurrent=8, max_moves=30),
                                 "train", max_steps=400, samples_per_position=100.0),
                    "arena", rule="mean", threshold=-1e9)
# Ctrl-C (SIGINT to the group) in self-play, SIGTERM to the process alone in training (one handler
# takes both signals, and each phase is stopped by one of them); SIGKILL in both (what it leaves
# behind differs by phase). Self-play first: once a run has played all its shards, the next reuses
# them.
SCENARIOS = [("INT", "group", "selfplay"), ("KILL", "process", "selfplay"), ("TERM", "process", "train"),
             ("KILL", "process", "train")]
# The progress line a phase prints when it starts (tri.progress: the first report is at once).
STARTED = {"selfplay": "gen-0002 self-play", "train": "gen-0002 train"}
STOPPED = "tri loop: stopped; the generation in flight was not recorded (run tri loop again to redo it)"


def loop_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PREFECT_", "MLFLOW_", "TRI_", "DVC_", "XDG_")) and k != "MPLCONFIGDIR"}
    return {**env, "HOME": str(home), "TRI_WORKERS": "1",
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])}


def started_by(root: Path) -> list[psutil.Process]:
    """Live processes started with the project's stores in their environment: ``tri loop``'s
    children after it configured them (its Prefect server among them)."""
    marker = f"PREFECT_HOME={root}/.prefect".encode()
    found = []
    for p in psutil.process_iter():
        try:
            if marker in Path(f"/proc/{p.pid}/environ").read_bytes():
                found.append(p)
        except OSError:  # gone, or not ours
            pass
    return found


def wait_until(condition, timeout: float, proc: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None, f"tri loop exited before {what}: {proc.stderr.read()[-3000:]}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def read_lines(stream, into: list[str]) -> threading.Thread:
    """Collect ``stream``'s lines into ``into`` on a thread (a loop's progress, as it prints it)."""
    def read():
        for line in stream:
            into.append(line)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def loop_runs(root: Path) -> dict[str, str]:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=mlstore.store(root).tracking_uri)
    runs = client.search_runs([client.get_experiment_by_name("tri-triangle").experiment_id])
    return {r.info.run_id: r.info.status for r in runs if r.data.tags.get("tri.kind") == "loop"}


def loop_descriptions(root: Path) -> dict[str, str | None]:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=mlstore.store(root).tracking_uri)
    runs = client.search_runs([client.get_experiment_by_name("tri-triangle").experiment_id])
    return {r.info.run_id: r.data.tags.get("mlflow.note.content") for r in runs if r.data.tags.get("tri.kind") == "loop"}


def flow_runs(root: Path) -> dict[str, tuple[str, str, str | None]]:
    """The project's Prefect flow runs, ``id: (name, state type, state message)``, from its server's
    database (read once the loop, and so its server, has stopped)."""
    with contextlib.closing(sqlite3.connect(root / ".prefect" / "prefect.db")) as db:
        rows = db.execute("SELECT r.id, r.name, r.state_type, s.message FROM flow_run r "
                          "LEFT JOIN flow_run_state s ON s.id = r.state_id").fetchall()
    return {run_id: (name, state, message) for run_id, name, state, message in rows}


def check_generation_recorded(root: Path, generation: int) -> None:
    tags = git(root, "tag", "--list", "tri/*").split()
    assert tags == [f"tri/gen-{g:04d}" for g in range(1, generation + 1)]
    assert git(root, "status", "--porcelain") == ""
    assert versioning.dvc_status_clean(root)


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_every_way_of_stopping_the_loop_leaves_a_project_that_goes_on(tmp_path):
    root, home = new_project(tmp_path / "project"), tmp_path / "home"
    home.mkdir()
    (root / "params.yaml").write_text(dump_params(SLOW))
    git(root, "commit", "-q", "-am", "params for a slower generation")
    env = loop_env(home)
    done, g = 1, 2  # the first run records generation 1; every run is stopped in generation 2
    folder = layout.selfplay_dir(root, g)
    for n, (sig, target, phase) in enumerate(SCENARIOS):
        runs_before = loop_runs(root) if n else {}
        flows_before = flow_runs(root) if n else {}
        proc = subprocess.Popen([sys.executable, "-m", "tri.cli", "loop", "--root", str(root), "--generations", "2"],
                                cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        lines: list[str] = []
        reader = read_lines(proc.stdout, lines)
        try:
            wait_until(lambda: any(STARTED[phase] in line for line in lines), 300, proc, phase)
            time.sleep(0.5)
            if phase == "selfplay":
                assert len(layout.shard_paths(folder)) < SLOW.selfplay.shards, "self-play ended before the signal"
            else:
                assert not layout.candidate_path(root, g).exists(), "training ended before the signal"
            assert versioning.next_generation(root) == g
            sent = time.monotonic()
            if target == "group":
                os.killpg(proc.pid, getattr(signal, f"SIG{sig}"))
            else:
                proc.send_signal(getattr(signal, f"SIG{sig}"))
            _, err = proc.communicate(timeout=60)
            seconds = time.monotonic() - sent
            reader.join(timeout=10)
            out = "".join(lines)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        what = f"SIG{sig} to the {target} during {phase}"
        # Every finished generation is committed and tagged; the stopped one's plan and archived
        # inputs stay in the work tree until the next run redoes it (checked clean at the end).
        assert git(root, "tag", "--list", "tri/*").split() == [f"tri/gen-{k:04d}" for k in range(1, done + 1)]
        if sig == "KILL":
            assert proc.returncode == -signal.SIGKILL
        else:
            assert proc.returncode == 130, (what, proc.returncode, err)
            said = err.strip().splitlines()
            assert said[0] == STOPPED and "Traceback" not in out, (what, err)
            # ... and why git status is not clean: what the stopped generation began.
            pending = versioning.uncommitted(root)
            assert "models/generation.yaml" in pending and any(p.endswith(".dvc") for p in pending), pending
            assert len(said) == 2 and said[1].startswith(f"tri loop: git status shows {', '.join(pending[:3])}") and \
                said[1].endswith("its commit takes them when tri loop runs it again"), (what, err)
            assert seconds < 15, (what, seconds)
            new = {k: v for k, v in loop_runs(root).items() if k not in runs_before}
            assert list(new.values()) == ["KILLED"], (what, new)
            story = loop_descriptions(root)[next(iter(new))]  # what its run page says first
            assert story.startswith("**1 generation** recorded" if n == 0 else "No generation recorded") and \
                "the loop was stopped." in story, (what, story)
            # Prefect tells the stop as a person would: Cancelled, with what was recorded.
            flows = sorted(v for k, v in flow_runs(root).items() if k not in flows_before and v[1] != "COMPLETED")
            kept = "the next tri loop redoes it (its finished self-play shards are kept)"
            assert [(name[:5], state) for name, state, _ in flows] == [("gen-0", "CANCELLED"), ("loop-", "CANCELLED")], \
                (what, flows)
            assert flows[0][2] == f"stopped by Ctrl-C or SIGTERM to tri loop; this generation was not recorded, and {kept}"
            assert flows[1][2] == (f"stopped by Ctrl-C or SIGTERM to tri loop after {1 if n == 0 else 0} recorded "
                                   f"generation(s); the generation in flight was not recorded, and {kept}"), flows
        # Nothing it started is left (the server dies with it even after SIGKILL), the lock is free.
        deadline = time.monotonic() + 15
        while started_by(root) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert started_by(root) == [], (what, started_by(root))
        with versioning.project_lock(root):
            pass
        assert versioning.next_generation(root) == g  # the interrupted generation left no decision
        assert load_checkpoint(layout.best_path(root)).generation == done
    # A last run, after the SIGKILL: its cleanup closes the MLflow run the killed loop left open.
    proc = subprocess.run([sys.executable, "-m", "tri.cli", "loop", "--root", str(root), "--generations", "1"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "note: marked 1 MLflow run(s) a killed tri loop left RUNNING as KILLED" in proc.stdout
    assert "note: marked 2 Prefect flow run(s) a killed tri loop left running as Crashed" in proc.stdout  # loop, generation
    states = sorted((name[:4], state) for name, state, _ in flow_runs(root).values())
    kills = sum(sig == "KILL" for sig, _, _ in SCENARIOS)
    assert states == sorted([("gen-", "COMPLETED")] * 2 + [("loop", "COMPLETED")]
                            + [("gen-", "CANCELLED"), ("loop", "CANCELLED")] * (len(SCENARIOS) - kills)
                            + [("gen-", "CRASHED"), ("loop", "CRASHED")] * kills), states
    check_generation_recorded(root, done + 1)
    statuses = sorted(loop_runs(root).values())
    assert statuses == ["FINISHED"] + ["KILLED"] * len(SCENARIOS), statuses
    assert list(home.iterdir()) == []


def test_an_interrupt_python_could_not_raise_in_a_callback_is_raised_again(capfd):
    """A Ctrl-C that lands while a weakref callback runs raises there, where Python only prints
    "Exception ignored in" and goes on (a real ``tri loop`` went on to its next generation so,
    its later Ctrl-Cs ignored by design): :func:`stop_on_signals` raises it again, silently, in
    the code it was meant to stop."""
    import weakref

    from tri.cli.common import stop_on_signals

    class Thing:
        pass

    def callback(_ref):
        os.kill(os.getpid(), signal.SIGINT)
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:  # the handler runs here, inside the callback
            pass

    before = signal.getsignal(signal.SIGINT)  # Python's default, or SIG_IGN where the runner ignores it
    with pytest.raises(KeyboardInterrupt):
        with stop_on_signals():
            thing = Thing()
            ref = weakref.ref(thing, callback)  # noqa: F841 (kept alive: its callback must run)
            del thing
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:  # raised again here
                pass
            pytest.fail("the interrupt was swallowed by the callback and not raised again")
    assert "Exception ignored" not in capfd.readouterr().err
    assert signal.getsignal(signal.SIGINT) is before  # put back as it was
