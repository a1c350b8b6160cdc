"""Shared fixtures: one default triangle game per session (building its tables takes ~0.5 s), and
one Prefect test server per session for the flow tests."""

from __future__ import annotations

import os

import pytest

from tri.games.triangle.game import TriangleGame


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
