"""`dvc plots show` in a project ``tri new`` made renders offline: its page comes from
``.dvc/plots.html`` (``plots.html_template`` in ``.dvc/config``), which loads nothing from the
network, and the ``dvc_plots/`` folder it writes is ignored by git."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tri import layout
from tri.config import recipe_params
from tri.record import versioning
from tri.record.project import CHECKOUT, new_project

URL = re.compile(r"https?://", re.IGNORECASE)


def test_the_page_template_needs_no_network():
    page = (CHECKOUT / ".dvc" / "plots.html").read_text()
    assert not URL.search(page), URL.search(page)
    assert "{plot_divs}" in page  # where DVC puts the plots
    assert "{scripts}" not in page  # where DVC would put its <script src=...cdn...> tags
    assert "function vegaEmbed" in page  # what DVC's plot divs call
    config = (CHECKOUT / ".dvc" / "config").read_text()
    assert re.search(r"^\[plots\]\s*$(?:\n\s*#.*$)*\n\s*html_template = plots.html$", config, re.MULTILINE), config


def test_dvc_plots_folder_is_ignored_by_the_repository():
    lines = (CHECKOUT / ".gitignore").read_text().splitlines()
    assert "/dvc_plots/" in lines


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


def test_dvc_plots_show_in_a_new_project_renders_offline(tmp_path):
    root = new_project(tmp_path / "p", recipe_params("triangle"))
    assert (root / ".dvc" / "plots.html").read_bytes() == (CHECKOUT / ".dvc" / "plots.html").read_bytes()
    # A generation's files as far as the plots go: the plan, the losses, the picture.
    versioning.write_plan(root, versioning.Plan(1, "models/gen-0000.pt", "models/gen-0000.pt"))
    losses = layout.train_losses_path(root, 1)
    losses.parent.mkdir(parents=True)
    losses.write_text("step,lr,loss,policy_loss,value_loss\n0,0.002,9.5,3.25,6.25\n1,0.002,8.75,3.0,5.75\n")
    picture = layout.game_picture_path(root, 1)
    picture.parent.mkdir(parents=True)
    picture.write_bytes(b"\x89PNG\r\n\x1a\n")
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    proc = subprocess.run([sys.executable, "-m", "dvc", "plots", "show"], cwd=root, capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    page = (root / "dvc_plots" / "index.html").read_text()
    assert "<script src" not in page and "cdn" not in page.lower()
    assert "function vegaEmbed" in page and "vegaEmbed('#data_train_gen-0001_losses_csv'" in page
    assert '"policy_loss": "3.25"' in page  # the losses' columns, drawn by the page itself
    assert "training loss per step, generation 1" in page
    assert '<img src="static/workspace_data_pictures_gen-0001.png">' in page  # the game picture, as an image
    assert "dvc_plots" not in git(root, "status", "--porcelain", "--untracked-files=all")
    assert git(root, "check-ignore", "dvc_plots/index.html").strip() == "dvc_plots/index.html"
