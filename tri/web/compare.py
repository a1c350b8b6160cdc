"""The Compare view's data: the project's learning curve (:mod:`tri.record.report`), its last ladder
(``data/ladder/ladder.json``, written by ``tri ladder``), the shipped champions' headline figures,
and links to the Prefect and MLflow pages. Everything is read from files tri already writes;
nothing is computed that a command did not record, except the curve's picture.
"""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path

from tri import champions, layout
from tri.errors import TriError
from tri.ladder import DEFAULT_OUT
from tri.record import mlstore, report
from tri.web.players import Roster

_STANDING_KEYS = ("name", "value", "low", "high", "games", "wins", "draws", "losses", "score_rate", "diff",
                  "diff_low", "diff_high")


def ladder_dir(root: Path) -> Path:
    return Path(root) / DEFAULT_OUT


def summary(roster: Roster, links: dict[str, str | None]) -> dict:
    """The Compare view (the JSON shape is in :mod:`tri.web`)."""
    root, game = roster.root, roster.project_game
    points = _curve(root)
    ladder = _ladder(root)
    pages = dict(links)
    pages["mlflow_pages"] = []
    if links.get("mlflow"):
        for label, url in mlstore.links(root, game, links["mlflow"], runtime=roster.runtime):
            pages["mlflow_pages"].append({"label": label, "url": url})
            if label.startswith("MLflow experiment"):
                pages["experiment"] = url
            elif label.startswith("MLflow model"):
                pages["model"] = url
    pages.setdefault("experiment", None)
    pages.setdefault("model", None)
    return {
        "project": root.name, "game": game,
        "generations": [{"generation": p.generation, "candidate": round(p.candidate, 4), "best": round(p.best, 4),
                         "best_pooled": None if p.best_pooled is None else round(p.best_pooled, 4),
                         "promoted": bool(p.promoted)} for p in points],
        "curve": "/api/compare/curve.png" if points else None,
        "ladder": ladder,
        "ladder_plot": "/api/compare/ladder.png" if ladder and (ladder_dir(root) / "ladder.png").is_file() else None,
        "champions": _champions(roster),
        "links": pages,
    }


def _curve(root: Path) -> list[report.CurvePoint]:
    try:
        return report.learning_curve(root)
    except (OSError, ValueError, KeyError, TypeError, TriError):
        return []  # a damaged record: the page shows no curve rather than failing (tri curve says why)


def _ladder(root: Path) -> dict | None:
    path = ladder_dir(root) / "ladder.json"
    try:
        data = json.loads(path.read_text())
        return {"kind": data["kind"], "game": data["game"], "games": data["games"], "anchor": data["anchor"],
                "method": data["method"],
                "standings": [{k: s.get(k) for k in _STANDING_KEYS} for s in data["standings"]]}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _champions(roster: Roster) -> list[dict]:
    out = []
    for game in champions.available(roster.runtime.champions):
        try:
            card = champions.load_card(game, roster.runtime.champions)
        except TriError:
            continue
        out.append({"game": game, "generation": card.generation, "simulations": card.simulations,
                    "trees": card.determinizations,
                    "summary": headline(card), "card": str(champions.card_path(game, roster.runtime.champions)
                                                          .with_suffix(".md"))})
    return out


def headline(card: champions.ChampionCard) -> str:
    """The first evaluation on ``card`` in one line."""
    if not card.evaluations:
        return ""
    e = card.evaluations[0]
    r = e.result
    if "rows" in r:
        wrong = " / ".join(f"{100 * row['wrong_rate']:.1f}%" for row in r["rows"])
        extra = "" if r.get("game") == "connect4" else f"; never loses: {'yes' if r.get('never_loses') else 'no'}"
        return f"{e.title}: {wrong} wrong{extra}"
    if "baseline" in r:
        return (f"{e.title}: mean {r['mean']:.1f} [{r['low']:.1f}, {r['high']:.1f}] against {r['baseline']}'s "
                f"{r['baseline_mean']:.1f} on {r['games']} seeds")
    return e.title


class CurvePicture:
    """The learning curve as PNG bytes, drawn again only when the arena records change."""

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._png = b""
        self._lock = threading.Lock()

    def png(self, root: Path) -> bytes | None:
        paths = layout.arena_paths(root)
        log = layout.promotions_log(root)
        key = tuple((p.name, p.stat().st_mtime_ns) for p in paths) + \
            ((log.stat().st_mtime_ns,) if log.is_file() else ())
        with self._lock:
            if key != self._key:
                points = _curve(root)
                if not points:
                    return None
                import matplotlib.pyplot as plt  # report.figure imported it (Agg); ~1 s, only for a curve

                fig = report.figure(points, title=f"{root.name}: arena mean score per generation")
                buffer = io.BytesIO()
                fig.savefig(buffer, format="png")
                plt.close(fig)
                self._key, self._png = key, buffer.getvalue()
            return self._png
