"""``tri serve``: the local UIs and the deployments of one project, in one process.

:func:`serve` starts the Prefect server, the MLflow UI and tri's web page (:mod:`tri.web`) as child
processes (their state inside the project: ``<root>/.prefect``, ``<root>/.mlflow``; the page keeps
none; logs in ``<root>/.prefect/logs``), waits until all answer HTTP (saying so as each does), registers two deployments against that server
(``tri-generation/<name>-generation`` and ``tri-loop/<name>-loop``, ``<name>`` the project
folder's name; the loop optionally on an interval or cron schedule) and serves them from this process, one flow run at a time (a second generation
would also be refused by the project lock). Flow runs are child processes with this process's
environment (``PREFECT_API_URL`` of the local server, the ``TRI_*`` settings) and the project as
working directory.

It returns when interrupted (Ctrl-C, or SIGTERM, which it treats alike), after stopping
everything in order: any flow run in flight (with its workers), the serve loop (it pauses the
schedules), the Prefect server, MLflow, then the page. A problem starting (a port in use, a server that exits or does not answer) is a
one-line :class:`~tri.errors.TriError` naming the server and its log, and stops whatever started.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from pipelines.processes import HOST, STARTUP_TIMEOUT, Service, check_port, running, stop_workers
from tri import atomic
from tri.config import Runtime, project_params
from tri.errors import TriError
from tri.record import mlstore, stores, versioning
from tri.record.provenance import project_id

PREFECT_PORT = 4200
MLFLOW_PORT = 5000
WEB_PORT = 8765  # tri.web.app.PORT (not imported: it would load FastAPI for every flow run)


@dataclass(frozen=True)
class Schedule:
    """The loop deployment's schedule: every ``interval`` minutes, or on ``cron``, or none."""

    interval: float | None = None
    cron: str | None = None

    def check(self) -> None:
        """Raise :class:`TriError` for a schedule Prefect would refuse. Call after
        :func:`tri.record.stores.configure` (it imports prefect, which creates ``PREFECT_HOME``)."""
        if self.interval is not None and self.cron is not None:
            raise TriError("give --interval or --cron, not both")
        if self.interval is not None and self.interval <= 0:
            raise TriError(f"--interval must be > 0 minutes, not {self.interval:g}")
        if self.cron is not None:
            from prefect.client.schemas.schedules import CronSchedule

            try:
                CronSchedule(cron=self.cron)
            except ValueError:  # pydantic's ValidationError is one
                raise TriError(f"--cron {self.cron!r} is not a cron expression (e.g. '0 * * * *')") from None

    def kwargs(self) -> dict:
        """Keyword arguments for ``Runner.add_flow`` (as for ``Flow.to_deployment``)."""
        if self.interval is not None:
            return {"interval": timedelta(minutes=self.interval)}
        if self.cron is not None:
            return {"cron": self.cron}
        return {}

    def describe(self) -> str:
        if self.interval is not None:
            return f"every {self.interval:g} min"
        if self.cron is not None:
            return f"cron {self.cron!r}"
        return "no schedule: start runs from the UI"


@dataclass(frozen=True)
class LoopStop:
    """Default stop conditions of the loop deployment's runs (see :func:`pipelines.loop.loop_flow`);
    a run started from the UI can change them."""

    generations: int | None = None
    minutes: float | None = None
    plateau: int | None = None

    @property
    def endless(self) -> bool:
        return self.generations is None and self.minutes is None and self.plateau is None


# ---- the two servers ------------------------------------------------------------------------


def log_dir(root: Path) -> Path:
    """Where the servers' output goes (inside the project, ignored by git with ``.prefect/``)."""
    return stores.prefect_home(root) / "logs"


def prefect_service(root: Path, port: int, *, ui: bool = True) -> Service:
    """``prefect server start`` on ``port``; its database lives in ``PREFECT_HOME`` (the project's
    ``.prefect``, set by :func:`tri.record.stores.configure` and passed on in the environment). ``ui``:
    serve the web UI too (``tri loop``'s own server has none)."""
    command = [sys.executable, "-m", "prefect", "server", "start", "--host", HOST, "--port", str(port)]
    if not ui:
        command.append("--no-ui")
    address = f"http://{HOST}:{port}"
    # The UI asks its API at this address (Prefect's default is port 4200, whatever the port).
    return Service("Prefect server", command, port, f"{address}/api/health", address,
                   log_dir(root) / ("prefect-server.log" if ui else "loop-prefect-server.log"), "--prefect-port",
                   {"PREFECT_UI_API_URL": f"{address}/api"})


def mlflow_service(root: Path, port: int, tracking_uri: str, artifact_location: str) -> Service:
    """``mlflow server`` (the UI and the tracking API) over the project's store."""
    command = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", tracking_uri,
               "--default-artifact-root", artifact_location, "--host", HOST, "--port", str(port),
               "--workers", "1"]
    # No job runner: it serves GenAI evaluation jobs (tri has none) with four more processes.
    address = f"http://{HOST}:{port}"
    return Service("MLflow UI", command, port, f"{address}/health", address, log_dir(root) / "mlflow-server.log",
                   "--mlflow-port",
                   {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"})


def web_service(root: Path, port: int, links: dict[str, str]) -> Service:
    """``tri web`` (:mod:`tri.web`): the page that plays, watches and compares the project's agents,
    linking to the other two UIs."""
    command = [sys.executable, "-m", "tri.cli", "web", "--root", str(root), "--host", HOST, "--port", str(port)]
    for name, url in links.items():
        command += [f"--{name}-url", url]
    address = f"http://{HOST}:{port}"
    return Service("web page", command, port, f"{address}/api/info", address, log_dir(root) / "web.log", "--web-port")


# ---- flow-run processes and signals ---------------------------------------------------------


def ignore_interrupts() -> None:
    """From now on SIGINT and SIGTERM do nothing: the shutdown is bounded by :data:`STOP_GRACE`
    per step and must finish, or servers would be left behind. Call it inside
    :func:`handling_interrupts` only, which restores the handlers (a process started while
    signals are ignored would inherit that). Main thread only."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


class Stopper:
    """The SIGINT and SIGTERM handler. First it stops flow runs in flight, while the serve loop
    and the server can still record how they ended; then, once the serve loop runs, it asks the
    runner to stop (it pauses the schedules and returns), or before that it raises
    KeyboardInterrupt. Later signals are ignored: the shutdown finishes, servers last."""

    def __init__(self) -> None:
        self.runner = None
        self.loop = None
        self.task = None
        self.held: tuple | None = None  # a signal that came while servers were being launched
        self.holding = False
        self.stopped_at: datetime | None = None  # when the signal that stops everything came

    @contextmanager
    def launching(self) -> Iterator[None]:
        """A signal inside is acted on when the block ends, not in the middle of it."""
        self.holding = True
        try:
            yield
        finally:
            self.holding = False
        if self.held is not None:
            self(*self.held)

    def serving(self, runner, loop) -> None:
        """From now on a signal stops ``runner``, running on ``loop``."""
        self.runner, self.loop = runner, loop

    def __call__(self, signum, frame) -> None:
        if self.holding:
            self.held = (signum, frame)
            return
        ignore_interrupts()
        self.stopped_at = datetime.now(timezone.utc)
        stop_workers()
        if self.loop is None:
            raise KeyboardInterrupt
        # Raising inside the event loop would tear the runner's tasks down mid-flight (and log
        # their cancellations as errors); its own stop ends them in order.
        self.loop.call_soon_threadsafe(self._start_stopping)

    def _start_stopping(self) -> None:
        self.task = self.loop.create_task(self._stop())  # kept: the loop holds tasks only weakly

    async def _stop(self) -> None:
        import asyncio

        while not self.runner.started:  # the signal came while the runner was still starting
            await asyncio.sleep(0.05)
        await self.runner.astop()


@contextmanager
def handling_interrupts(handler: Callable) -> Iterator[None]:
    """Inside, Ctrl-C and SIGTERM both run ``handler`` (also when a shell started us with SIGINT
    ignored); outside, the previous handlers are back. Main thread only (signals are delivered
    there); elsewhere it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        for sig, old_handler in old.items():
            signal.signal(sig, old_handler)


# ---- deployments ----------------------------------------------------------------------------


def deployment_name(root: Path, flow: str) -> str:
    """A deployment's name: the project folder's and the flow's (``flow`` ``generation`` or
    ``loop``), e.g. ``tri-loop/triangle-loop`` in the UI; its description holds the full path,
    and its tags the project's id, for projects in folders of the same name."""
    return f"{Path(root).resolve().name or 'project'}-{flow}"


def make_runner(root: Path, params_file: str | None, schedule: Schedule, loop_stop: LoopStop,
                on_sigterm: Callable):
    """A Prefect runner serving the generation and loop flows of the project at ``root``
    (absolute), their deployments registered on the server. One flow run at a time (the
    runner's limit, and each deployment's concurrency limit): two generations never run at
    once. Schedules pause when it stops, so a stopped ``tri serve`` does not pile up late runs.

    ``add_flow`` (not ``serve(*deployments)``) keeps the flow objects: runs start as
    multiprocessing children running exactly these flows, the generation with the task runner
    the settings name, instead of re-importing them from a file entry point."""
    # Prefect (and the flows, which import it) only here: importing prefect creates and reads
    # PREFECT_HOME, which serve() sets first; pipelines.loop also imports this module.
    from prefect.runner import Runner

    from pipelines.generation import configured  # imports prefect (see above)
    from pipelines.loop import loop_flow  # imports prefect, and this module (see above)

    runner = Runner(name=f"tri-serve-{Path(root).name}", limit=1, pause_on_shutdown=True)
    # Prefect's own SIGTERM handler calls sys.exit mid-loop; stop as on Ctrl-C instead.
    runner.handle_sigterm = on_sigterm
    common = {"root": str(root), "params_file": params_file}
    tags = ["tri", f"project:{Path(root).name}-{project_id(root)[:8]}"]
    runner.add_flow(configured(), name=deployment_name(root, "generation"), parameters=common, tags=tags,
                    concurrency_limit=1,
                    description=f"One generation of {root}: self-play, train, arena, promote, record.")
    runner.add_flow(loop_flow, name=deployment_name(root, "loop"), tags=tags, concurrency_limit=1,
                    **schedule.kwargs(),
                    parameters={**common, "generations": loop_stop.generations, "minutes": loop_stop.minutes,
                                "plateau": loop_stop.plateau},
                    description=f"Generations of {root} until a stop condition (generations, minutes, "
                                "plateau; none: until cancelled).")
    return runner


def run(runner, stopper: Stopper) -> None:
    """Run ``runner`` until ``stopper`` stops it."""
    import asyncio

    async def main() -> None:
        stopper.serving(runner, asyncio.get_running_loop())
        await runner.start()

    asyncio.run(main())


@contextmanager
def prefect_api(url: str) -> Iterator[None]:
    """Point this process (and the flow runs it starts) at the server ``url``, also when prefect
    was imported (and read its settings) before, in every thread; the previous setting is back
    on exit.

    Prefect's settings are a context variable that falls back to the process-wide settings it
    read at import. A thread started without a copy of the context (the arena's paired games,
    logging from them to the flow run) sees only those; without an API URL there, Prefect would
    start an ephemeral server of its own for that thread's first call. So the process-wide
    settings are read again from the environment too, not only the context's."""
    from prefect import context
    from prefect.settings import PREFECT_API_URL, temporary_settings

    old, process_wide = os.environ.get("PREFECT_API_URL"), context.GLOBAL_SETTINGS_CONTEXT
    os.environ["PREFECT_API_URL"] = url
    try:
        context.GLOBAL_SETTINGS_CONTEXT = context.root_settings_context()  # read from the environment
        with temporary_settings(updates={PREFECT_API_URL: url}):
            yield
    finally:
        if old is None:
            os.environ.pop("PREFECT_API_URL", None)
        else:
            os.environ["PREFECT_API_URL"] = old
        context.GLOBAL_SETTINGS_CONTEXT = process_wide  # as it was (Prefect's test harness sets its own)


def mlflow_links(root: Path, address: str) -> list[tuple[str, str]]:
    """(label, address) of the project's experiment and registered model in the MLflow UI at
    ``address``, those that exist (none before the first generation is logged)."""
    try:
        game = project_params(root).game.name
    except TriError:
        return []
    return mlstore.links(root, game, address)


# ---- the command ----------------------------------------------------------------------------


def serve(root: Path, *, prefect_port: int = PREFECT_PORT, mlflow_port: int = MLFLOW_PORT,
          web_port: int | None = WEB_PORT, schedule: Schedule = Schedule(), loop_stop: LoopStop = LoopStop(), params_file: str | None = None,
          timeout: float = STARTUP_TIMEOUT, echo: Callable[[str], None] = print) -> None:
    """Run the UIs and serve the deployments of the project ``root`` until interrupted (see the
    module docstring). Changes this process's working directory to ``root`` and sets its
    ``PREFECT_HOME`` (flow runs inherit both). ``echo`` prints the addresses. Raises
    :class:`TriError` for a bad option or a server that does not start."""
    ports = {"--prefect-port": prefect_port, "--mlflow-port": mlflow_port, "--web-port": web_port}
    taken: dict[int, str] = {}
    for option, port in ports.items():
        if port is not None and port in taken:
            raise TriError(f"{taken[port]} and {option} are both {port}: give each its own port")
        if port is not None:
            taken[port] = option
    root = Path(root).resolve()
    root.mkdir(parents=True, exist_ok=True)
    versioning.check_params_file(root, params_file)
    stores.configure(root)
    # The server started here keeps its state in this project even if PREFECT_HOME points elsewhere.
    os.environ["PREFECT_HOME"] = str(stores.prefect_home(root))
    schedule.check()
    store = mlstore.store(root, Runtime())
    mlstore.follow_move(root, store)  # a moved project's UI shows, and reads, its own artifacts
    services = [prefect_service(root, prefect_port)]
    if store.artifact_location is not None:  # a local store: serve its UI (a tracking server has its own)
        services.append(mlflow_service(root, mlflow_port, store.tracking_uri, store.artifact_location))
    if web_port is not None:
        links = {"prefect": services[0].address}
        if len(services) > 1:
            links["mlflow"] = services[1].address
        services.append(web_service(root, web_port, links))
    with atomic.exclusive(stores.prefect_home(root) / "serve.lock",  # they would share its stores
                          f"tri serve for {root} is already running ({{holder}}); use it, or stop it first"):
        for service in services:
            check_port(service)
        _serve(root, services, schedule, loop_stop, params_file, timeout, echo, store.tracking_uri)


def _serve(root: Path, services: list[Service], schedule: Schedule, loop_stop: LoopStop, params_file: str | None,
           timeout: float, echo: Callable[[str], None], tracking_uri: str) -> None:
    """:func:`serve`'s body, once the options are checked and the project is ours."""
    os.chdir(root)  # flow runs are processes started from this one: they inherit the directory
    mlflow = next((s for s in services if s.name == "MLflow UI"), None)
    if mlflow is not None:  # flow runs inherit it too: their Prefect pages link to their MLflow runs
        os.environ["TRI_MLFLOW_UI"] = mlflow.address
    stopper = Stopper()
    names = [f"the {service.name}" for service in services]
    names = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    echo(f"starting {names} (their state in {root}; about 15 s) ...")

    def ready(service: Service, seconds: float) -> None:
        echo(f"  {service.name} answers on {service.address} ({seconds:.1f} s)")

    with handling_interrupts(stopper):
        try:
            with running(services, root, timeout, stopper.launching, ready=ready), \
                    prefect_api(f"{services[0].address}/api"):
                runner = make_runner(root, params_file, schedule, loop_stop, on_sigterm=stopper)
                _announce(echo, root, services, tracking_uri, schedule, loop_stop)
                try:
                    run(runner, stopper)
                finally:
                    ignore_interrupts()
                    echo("stopping: flow runs, the serve loop, then the servers ...")
                    stop_workers()  # any left (none after a signal: the handler stopped them)
                    if stopper.stopped_at is not None:  # the runs it ended: Cancelled, not Crashed
                        from pipelines.run_states import tell_stopped  # imports prefect (see make_runner)

                        tell_stopped(root, stopper.stopped_at, "Ctrl-C or SIGTERM to tri serve")
        except KeyboardInterrupt:
            pass  # interrupted while starting: running() has stopped what started
    echo("stopped")


def _announce(echo: Callable[[str], None], root: Path, services: list[Service], tracking_uri: str,
              schedule: Schedule, loop_stop: LoopStop) -> None:
    """Tell the person where to look and how to stop."""
    prefect = services[0]
    by_name = {s.name: s for s in services}
    echo(f"Prefect UI: {prefect.address}")
    echo(f"  deployments:  {prefect.address}/deployments")
    echo(f"  flow runs:    {prefect.address}/runs")
    if "MLflow UI" in by_name:
        echo(f"MLflow UI:  {by_name['MLflow UI'].address}")
        for label, url in mlflow_links(root, by_name["MLflow UI"].address):
            echo(f"  {label}: {url}")
    else:
        echo(f"MLflow:     {tracking_uri} (TRI_MLFLOW_URI; no local UI started)")
    if "web page" in by_name:
        echo(f"web page:   {by_name['web page'].address}/ (play, watch and compare the agents)")
    echo(f"serving tri-generation/{deployment_name(root, 'generation')} and tri-loop/{deployment_name(root, 'loop')} "
         f"({schedule.describe()}) for {root}")
    if loop_stop.endless and (schedule.interval is not None or schedule.cron is not None):
        echo("note: scheduled loop runs have no stop condition (--generations, --minutes, --plateau): "
             "each runs until cancelled and later ones wait")
    echo(f"logs: {log_dir(root)}")
    echo("Press Ctrl-C to stop (flow runs in flight are stopped too).")
