"""``tri serve`` end to end: started as a subprocess (``python -m tri.cli.serve``) on free ports in a
temporary project with tiny params and an empty fake HOME, it brings up the Prefect server and
the MLflow UI, registers the generation and loop deployments (the loop on an interval schedule),
runs a generation started through the Prefect API, and on SIGINT, with a loop run in flight, stops
every process it started without writing anything to HOME. Plus SIGTERM while the servers start,
and the one-line errors for a server that does not start, a taken port and a bad schedule.

The served runs use threads and one worker (tracking on), so the whole module takes about a
minute on a 2-core machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from pipelines import processes
from pipelines import serve as serving  # imports no prefect: safe before any PREFECT_HOME is set
from tests.pipeline_fixtures import PARAMS, assert_clean_error, write_params
from tri import layout
from tri.errors import TriError

READY = "Press Ctrl-C to stop"
STARTUP = 150  # seconds for both servers on a busy machine (about 10-40 s usually)
RUN = 120  # seconds for the tiny generation (about 20 s)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answers(url: str) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def get_json(url: str) -> dict:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=10) as response:
        return json.load(response)


def serve_env(home: Path) -> dict[str, str]:
    """This environment without Prefect and tri settings of the test session, with a fake HOME
    and fast settings for the served runs (tracking stays on: it must not write to HOME either)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "TRI_", "MPLCONFIGDIR"))}
    env.update(HOME=str(home), TRI_TASK_RUNNER="threads", TRI_WORKERS="1", TRI_DEVICE="cpu")
    return env


def serve_cli(*args, cwd: Path, env: dict[str, str], stdout) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tri.cli", "serve", *map(str, args)], cwd=cwd, env=env,
                            stdout=stdout, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def serve_run(*args, home: Path) -> subprocess.CompletedProcess:
    """``tri serve ARGS`` to completion (for the errors it reports before starting anything)."""
    return subprocess.run([sys.executable, "-m", "tri.cli", "serve", *map(str, args)], capture_output=True,
                          text=True, timeout=60, env=serve_env(home))


def wait_for_line(proc: subprocess.Popen, out: Path, text: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        content = out.read_text()
        if text in content:
            return content
        if proc.poll() is not None:
            pytest.fail(f"tri serve exited with {proc.returncode} before {text!r}:\n{content}")
        time.sleep(0.5)
    pytest.fail(f"no {text!r} from tri serve within {timeout} s:\n{out.read_text()}")


def kill_tree(pid: int) -> None:
    """Safety net after a failed test: the serve process, everything below it, and the servers'
    process groups (they run in sessions of their own)."""
    try:
        top = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return
    procs = [top, *top.children(recursive=True)]
    for p in procs:
        try:
            if os.getpgid(p.pid) == p.pid:  # a server: its whole group
                os.killpg(p.pid, signal.SIGKILL)
            else:
                p.kill()
        except (ProcessLookupError, psutil.NoSuchProcess):
            pass
    psutil.wait_procs(procs, timeout=10)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """``tri serve --interval 60`` on a tiny project; yields what the tests need. The last test
    stops it; the finaliser kills what is left if a test failed first."""
    base = tmp_path_factory.mktemp("serve")
    root, home = base / "project", base / "home"
    root.mkdir()
    home.mkdir()
    write_params(root / "params.yaml", PARAMS)
    ports = {"prefect": free_port(), "mlflow": free_port(), "web": free_port()}
    out = base / "serve.out"
    with open(out, "wb") as stdout:
        proc = serve_cli("--root", root, "--prefect-port", ports["prefect"], "--mlflow-port", ports["mlflow"],
                         "--web-port", ports["web"], "--interval", 60, cwd=base, env=serve_env(home), stdout=stdout)
    started = time.monotonic()
    try:
        text = wait_for_line(proc, out, READY, STARTUP)
        info = {"proc": proc, "root": root, "home": home, "out": out, "text": text,
                "startup": time.monotonic() - started,
                "prefect": f"http://127.0.0.1:{ports['prefect']}",
                "mlflow": f"http://127.0.0.1:{ports['mlflow']}", "web": f"http://127.0.0.1:{ports['web']}"}
        with pytest.MonkeyPatch.context() as mp:
            if "PREFECT_HOME" not in os.environ:  # importing prefect creates its home: not the real one
                mp.setenv("PREFECT_HOME", str(base / "client-prefect-home"))
            yield info
    finally:
        if proc.poll() is None:
            kill_tree(proc.pid)


@pytest.fixture()
def client(served):
    """A synchronous Prefect client for the served server."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: f"{served['prefect']}/api"}):
        with get_client(sync_client=True) as c:
            yield c


def test_both_uis_answer_and_addresses_are_printed(served):
    assert answers(f"{served['prefect']}/api/health")
    assert answers(served["prefect"])  # the UI's page
    assert answers(f"{served['mlflow']}/health")
    assert answers(served["mlflow"])
    # The Prefect UI asks the API on the port it was given (Prefect's default would be 4200).
    assert get_json(f"{served['prefect']}/ui-settings")["api_url"] == f"{served['prefect']}/api"
    # The web page answers beside them and links to both.
    assert answers(served["web"])
    assert get_json(f"{served['web']}/api/info")["links"] == {"prefect": served["prefect"], "mlflow": served["mlflow"]}
    text = served["text"]
    assert f"Prefect UI: {served['prefect']}" in text and f"MLflow UI:  {served['mlflow']}" in text
    assert f"web page:   {served['web']}/" in text
    assert "Traceback" not in text, text
    # Both stores and the logs are inside the project.
    for path in (".prefect/prefect.db", ".mlflow/mlflow.db", ".prefect/logs/prefect-server.log",
                 ".prefect/logs/mlflow-server.log", ".prefect/logs/web.log"):
        assert (served["root"] / path).exists(), path
    print(f"startup {served['startup']:.1f} s")


def test_a_second_serve_on_the_project_is_refused(served):
    """Two ``tri serve`` on one project would share its stores: the second is refused at once,
    before it starts anything, naming the first."""
    proc = serve_run("--root", served["root"], "--prefect-port", free_port(), "--mlflow-port", free_port(),
                     "--web-port", free_port(), home=served["home"])
    assert_clean_error(proc, 1, f"tri serve for {served['root']} is already running (pid {served['proc'].pid})")
    assert served["proc"].poll() is None and answers(f"{served['prefect']}/api/health")


def test_deployments_registered_with_the_loop_schedule(served, client):
    root = served["root"]
    deployments = {client.read_flow(d.flow_id).name: d for d in client.read_deployments()}
    assert set(deployments) == {"tri-generation", "tri-loop"}
    generation, loop = deployments["tri-generation"], deployments["tri-loop"]
    assert (generation.name, loop.name) == (f"{root.name}-generation", f"{root.name}-loop")
    assert str(root) in generation.description and str(root) in loop.description
    assert any(t.startswith(f"project:{root.name}-") for t in generation.tags)
    assert generation.parameters == {"root": str(root), "params_file": None}
    assert loop.parameters == {"root": str(root), "params_file": None, "generations": None, "minutes": None,
                               "plateau": None}
    # One run of each at a time on the server (the runner also runs one flow at a time).
    assert generation.global_concurrency_limit.limit == loop.global_concurrency_limit.limit == 1
    assert generation.schedules == []
    [schedule] = loop.schedules
    assert schedule.active and schedule.schedule.interval.total_seconds() == 3600
    assert not loop.paused


def test_a_generation_run_from_the_api_completes_in_the_project(served, client):
    deployment = client.read_deployment_by_name(f"tri-generation/{served['root'].name}-generation")
    start = time.monotonic()
    run = client.create_flow_run_from_deployment(deployment.id)
    while time.monotonic() - start < RUN:
        run = client.read_flow_run(run.id)
        if run.state is not None and run.state.is_final():
            break
        time.sleep(1)
    assert run.state is not None and run.state.is_completed(), (run.state, served["out"].read_text())
    root = served["root"]
    assert layout.promotions_log(root).exists()
    assert layout.arena_path(root, 1).exists() and layout.candidate_path(root, 1).exists()
    # Tracked in the project's store, which the MLflow UI serves.
    model = get_json(f"{served['mlflow']}/api/2.0/mlflow/registered-models/get?name=tri-triangle")
    assert [v["version"] for v in model["registered_model"]["latest_versions"]] == ["1"]
    print(f"generation run {time.monotonic() - start:.1f} s")
    # What the Prefect UI shows of it: its name, readable task names, a line per stage, artifacts.
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        FlowRunFilter,
        FlowRunFilterId,
        LogFilter,
        LogFilterFlowRunId,
    )

    assert run.name == "gen-0001"
    tasks = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[run.id])))
    assert sorted({t.name for t in tasks}) == ["arena", "draw the candidate's game", "log to MLflow", "promote",
                                               "selfplay shard 0", "selfplay shard 1", "train"]
    logs = [entry.message for entry in client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run.id])))]
    for stage in ("self-play", "train", "arena"):
        assert any(m.startswith(stage) and m.endswith("done") for m in logs), (stage, logs)
    assert any("candidate promoted" in m or "candidate rejected" in m for m in logs), logs
    artifacts = {a.key: a for a in client.read_artifacts(
        artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[run.id])))}
    assert set(artifacts) == {"arena", "generation", "mlflow-run"}, artifacts
    assert artifacts["arena"].type == "markdown" and "| candidate |" in artifacts["arena"].data
    assert artifacts["generation"].type == "table"
    link = artifacts["mlflow-run"]  # a link artifact is markdown holding the link
    assert link.data.startswith(f"[gen-0001 in MLflow]({served['mlflow']}/#/experiments/"), link.data
    assert not any(m.startswith("Finished in state") for m in logs[1:-1]), logs  # only the flow's own, last


def test_sigint_stops_a_loop_in_flight_and_every_process_and_home_stays_empty(served, client):
    root = served["root"]
    deployment = client.read_deployment_by_name(f"tri-loop/{root.name}-loop")
    run = client.create_flow_run_from_deployment(deployment.id, parameters={"generations": 5})
    deadline = time.monotonic() + 240  # a generation takes ~20 s here, minutes on a loaded machine
    while not layout.selfplay_dir(root, 2).exists():  # the loop's first generation is under way
        assert time.monotonic() < deadline, (client.read_flow_run(run.id).state, served["out"].read_text())
        time.sleep(0.5)
    proc = served["proc"]
    children = psutil.Process(proc.pid).children(recursive=True)
    assert len(children) >= 4  # the three servers and the flow run
    start = time.monotonic()
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=90) == 0, served["out"].read_text()
    stopped = time.monotonic() - start
    _, alive = psutil.wait_procs(children, timeout=5)
    assert alive == [], [(p.pid, p.cmdline()) for p in alive]
    assert not answers(f"{served['prefect']}/api/health") and not answers(f"{served['mlflow']}/health")
    assert not answers(f"{served['web']}/api/info")
    text = served["out"].read_text()
    assert text.rstrip().endswith("stopped") and "Traceback" not in text, text
    # The loop's flow run was stopped and said so: Cancelled in the server's database, with what
    # was recorded (Prefect's engine says Crashed; its own errors reach the Prefect UI, not the
    # terminal).
    import sqlite3

    with contextlib.closing(sqlite3.connect(root / ".prefect" / "prefect.db")) as db:
        state = db.execute("SELECT r.state_type, s.message FROM flow_run r JOIN flow_run_state s ON s.id = r.state_id "
                           "WHERE r.id = ?", (str(run.id),)).fetchone()
    assert state[0] == "CANCELLED" and state[1].startswith("stopped by Ctrl-C or SIGTERM to tri serve after "), state
    assert list(served["home"].iterdir()) == []
    print(f"stop {stopped:.1f} s")


def test_sigterm_while_starting_stops_the_servers(tmp_path):
    root, home = tmp_path / "project", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    out = tmp_path / "serve.out"
    with open(out, "wb") as stdout:
        proc = serve_cli("--root", root, "--prefect-port", free_port(), "--mlflow-port", free_port(),
                         "--web-port", free_port(), cwd=tmp_path, env=serve_env(home), stdout=stdout)
    try:
        deadline = time.monotonic() + 60
        while len(psutil.Process(proc.pid).children()) < 3:  # the servers launched, not yet answering
            assert proc.poll() is None and time.monotonic() < deadline, out.read_text()
            time.sleep(0.1)
        children = psutil.Process(proc.pid).children(recursive=True)
        proc.send_signal(signal.SIGTERM)
        # The servers stop one after another, each given STOP_GRACE after SIGTERM: a loaded
        # machine can use all of it (a CI run beside an evaluation once took over 60 s).
        assert proc.wait(timeout=3 * processes.STOP_GRACE + 30) == 0, out.read_text()
        _, alive = psutil.wait_procs(children, timeout=5)
        assert alive == [], [(p.pid, p.cmdline()) for p in alive]
        assert out.read_text().rstrip().endswith("stopped") and READY not in out.read_text()
        assert list(home.iterdir()) == []
    finally:
        if proc.poll() is None:
            kill_tree(proc.pid)


def test_taken_port_is_a_one_line_error(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = serve_run("--root", tmp_path / "p", "--prefect-port", port, "--mlflow-port", free_port(),
                         "--web-port", free_port(), home=tmp_path)
        assert_clean_error(proc, 1, f"port {port} is in use", "--prefect-port")
        proc = serve_run("--root", tmp_path / "p", "--prefect-port", free_port(), "--mlflow-port", free_port(),
                         "--web-port", port, home=tmp_path)
        assert_clean_error(proc, 1, f"port {port} is in use", "--web-port")
    proc = serve_run("--root", tmp_path / "p", "--prefect-port", 4999, "--mlflow-port", 5001, "--web-port", 4999,
                     home=tmp_path)
    assert_clean_error(proc, 1, "--prefect-port and --web-port are both 4999")


def fake_service(tmp_path: Path, name: str, code: str) -> processes.Service:
    """A "server" running ``code`` that never answers its health URL (a free port)."""
    port = free_port()
    return processes.Service(name, [sys.executable, "-c", code], port, f"http://127.0.0.1:{port}/health",
                           f"http://127.0.0.1:{port}", tmp_path / "logs" / f"{name}.log", "--port")


def children_pids() -> set[int]:
    """This test process's children (other fixtures of the session may have some)."""
    return {p.pid for p in psutil.Process().children()}


def test_a_server_that_exits_while_starting_is_named_with_its_log_and_the_others_stop(tmp_path):
    before = children_pids()
    silent = fake_service(tmp_path, "silent", "import time; time.sleep(60)")
    broken = fake_service(tmp_path, "broken", "import sys; print('no database'); sys.exit(3)")
    with pytest.raises(TriError) as info, processes.running([silent, broken], tmp_path, timeout=30):
        pytest.fail("running() must not yield")
    message = str(info.value)
    assert "\n" not in message and "broken exited while starting (exit code 3)" in message
    assert str(broken.log) in message and "no database" in broken.log.read_text()
    assert children_pids() == before  # the silent one was stopped too


def test_a_signal_while_the_servers_launch_stops_every_one_of_them(tmp_path, monkeypatch):
    """A SIGTERM that lands inside ``Popen`` (the server forked, ``Popen`` not yet returned) is held
    until every launched server is tracked, then stops them all (it once left both running)."""
    before = children_pids()
    stopper = serving.Stopper()
    monkeypatch.setattr(serving, "ignore_interrupts", lambda: None)  # keep pytest's own handlers
    monkeypatch.setattr(serving, "stop_workers", lambda *args, **kwargs: None)  # none here
    real_start, launched = processes.start, []

    def start_then_signal(service, cwd, **kwargs):
        proc = real_start(service, cwd, **kwargs)
        launched.append(proc)
        if len(launched) == 2:
            stopper(signal.SIGTERM, None)  # as if delivered before Popen returned
        return proc

    monkeypatch.setattr(processes, "start", start_then_signal)
    services = [fake_service(tmp_path, name, "import time; time.sleep(60)") for name in ("one", "two")]
    with pytest.raises(KeyboardInterrupt):
        with processes.running(services, tmp_path, timeout=30, launching=stopper.launching):
            pytest.fail("running() must not yield")
    assert len(launched) == 2 and all(proc.poll() is not None for proc in launched)
    assert children_pids() == before


def test_a_server_that_does_not_answer_in_time_is_named_with_its_log(tmp_path):
    before = children_pids()
    silent = fake_service(tmp_path, "silent", "import time; time.sleep(60)")
    start = time.monotonic()
    with pytest.raises(TriError, match=re.escape(f"silent did not answer on {silent.address} within 2 s; "
                                                 f"see {silent.log}")):
        with processes.running([silent], tmp_path, timeout=2):
            pass
    assert time.monotonic() - start < 15
    assert children_pids() == before


@pytest.mark.parametrize("args, needle", [(["--interval", "5", "--cron", "0 * * * *"], "not both"),
                                          (["--cron", "every hour"], "not a cron expression")])
def test_bad_schedule_is_a_one_line_error(tmp_path, args, needle):
    proc = serve_run("--root", tmp_path / "p", "--prefect-port", free_port(), "--mlflow-port", free_port(),
                     "--web-port", free_port(), *args, home=tmp_path)
    assert_clean_error(proc, 1, needle)
