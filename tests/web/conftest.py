"""The web page's server for the tests: the real application over a temporary project, served by
uvicorn in a thread on a free loopback port (``web_url``), and a FastAPI test client
(``client``) for the API tests."""

from __future__ import annotations

import socket
import threading
import time

import pytest


@pytest.fixture(scope="module")
def web_project(tmp_path_factory):
    """An empty project folder: the page offers the champions and the baselines."""
    return tmp_path_factory.mktemp("webproject")


@pytest.fixture(scope="module")
def web_url(web_project):
    import uvicorn

    from tri.web.app import create_app

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = create_app(web_project)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the web page's server did not start")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)
    sock.close()


@pytest.fixture(scope="module")
def client(web_project):
    from fastapi.testclient import TestClient

    from tri.web.app import create_app

    with TestClient(create_app(web_project), raise_server_exceptions=False) as test_client:
        yield test_client
