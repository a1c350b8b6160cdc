"""Where the orchestration tools keep their state: inside the project, never the home folder.

:func:`configure` sets environment defaults before Prefect, MLflow or DVC is imported (Prefect
reads its settings at import). A setting the user made already wins, so ``PREFECT_API_URL`` (a
running server), ``PREFECT_HOME``, ``TRI_MLFLOW_URI`` or a DVC remote point anywhere they like.
Every tool's telemetry is switched off: no call leaves the machine.
"""

from __future__ import annotations

import os
from pathlib import Path

TELEMETRY_OFF = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "DVC_NO_ANALYTICS": "1",
    "DO_NOT_TRACK": "1",
}


def prefect_home(root: Path) -> Path:
    return Path(root).resolve() / ".prefect"


def mlflow_dir(root: Path) -> Path:
    return Path(root).resolve() / ".mlflow"


def cache_dir(root: Path) -> Path:
    """Caches of the tools tri uses (``.cache``, ignored by git)."""
    return Path(root).resolve() / ".cache"


def dvc_site_cache(root: Path) -> Path:
    """DVC's per-repository state (file hashes, its index), which it keeps under ``/var/tmp/dvc``
    unless told otherwise; ``.dvc/tmp`` is DVC's own scratch folder, ignored by git."""
    return Path(root).resolve() / ".dvc" / "tmp" / "site-cache"


def configure(root: Path) -> dict[str, str]:
    """Point Prefect's home (its SQLite database, logs, local results) at ``<root>/.prefect`` and
    DVC's site cache at :func:`dvc_site_cache`, give Prefect's server time to start on slow
    machines, and switch telemetry off. Returns what it set."""
    wanted = {"PREFECT_HOME": str(prefect_home(root)),
              "DVC_SITE_CACHE_DIR": str(dvc_site_cache(root)),
              # Other tools' caches: matplotlib's font list (learning curves, rendered games), the
              # XDG cache (fontconfig's, for one), torch's compile cache (made at import, in $TMPDIR)
              "MPLCONFIGDIR": str(cache_dir(root) / "matplotlib"),
              "XDG_CACHE_HOME": str(cache_dir(root)),
              "TORCHINDUCTOR_CACHE_DIR": str(cache_dir(root) / "torchinductor"),
              "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
              # Run logs (INFO and up, errors with their tracebacks) go to the Prefect server, so the
              # UI shows them; the terminal gets tri's own lines only (a row per generation, and
              # one line per problem), not Prefect's copies of them.
              "PREFECT_LOGGING_LEVEL": "INFO",
              "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "CRITICAL",
              # Task runs' own INFO lines ("Finished in state Completed()", one per task) would bury
              # the flow's lines with the stages' figures: only their warnings and errors are kept.
              "PREFECT_LOGGING_LOGGERS_PREFECT_TASK_RUNS_LEVEL": "WARNING",
              **TELEMETRY_OFF}
    done = {}
    for key, value in wanted.items():
        if key not in os.environ:
            os.environ[key] = value
            done[key] = value
    return done
