"""Shared fixtures: one default triangle game per session (building its tables takes ~0.5 s), and
one Prefect test server per session for the flow tests."""

from __future__ import annotations

import os
import sys

import pytest

from tri.games.triangle.game import TriangleGame


# The slowest modules, slowest first (seconds a module took in a full run with two workers on this
# 2-core machine, 2026-11-27): flow 429, soak 234, signals 231, champions 171, loop 129, serve 115,
# outside 76, tracking 59, progress 57, bench 55, selfplay 53, arena 45; every other module under
# 45. pyproject's ``--dist loadscope`` keeps each module on one xdist worker (its module fixtures
# are built once, not once per worker) and ``--no-loadscope-reorder`` hands modules out in the
# order below: the long ones start first, and the short ones fill in, so both workers end together.
SLOWEST_FIRST = ("test_flow", "test_soak", "test_signals", "test_champions", "test_loop", "test_serve",
                 "test_outside", "test_tracking", "test_progress", "test_bench", "test_selfplay", "test_arena")


def pytest_configure(config):
    """Python's bytecode cache on, for this process and every process the tests start (xdist's
    workers, ``tri`` commands, loops, servers): the test command installs with ``pip install
    --no-compile`` (compiling every installed module took about 100 s of CI's install), so each
    module is compiled once, when first imported, and cached in its ``__pycache__``; where the
    environment sets ``PYTHONDONTWRITEBYTECODE`` (as some containers do), every one of the
    suite's hundreds of processes would otherwise compile its imports again."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.module.__name__.rpartition(".")[2], len(rank)))  # stable


def pytest_addoption(parser):
    parser.addoption("--record-hashes", action="store_true",
                     help="test_behaviour: print each case's file hashes instead of comparing them")


@pytest.fixture(scope="session")
def game() -> TriangleGame:
    """The triangle puzzle with the reference (default) rules."""
    return TriangleGame()


@pytest.fixture
def one_torch_thread():
    """torch on one thread: two threads on a busy 2-core machine spin against each other (25 ms
    instead of 1 ms per tiny forward pass)."""
    from tri.device import torch_threads

    with torch_threads(1):
        yield


@pytest.fixture(scope="session")
def prefect_server(tmp_path_factory):
    """A temporary Prefect server and database for the session (Prefect's test harness), with
    Prefect's home in a temporary folder and every tool's telemetry off. Import ``pipelines``
    only after this fixture: Prefect reads its settings at import."""
    from tri.record import stores

    os.environ["PREFECT_HOME"] = str(tmp_path_factory.mktemp("prefect-home"))
    stores.configure(tmp_path_factory.getbasetemp())
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield
