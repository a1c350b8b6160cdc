"""What grading against perfect play reports (``tri eval connect4``, ``tri eval tictactoe``): the
counts of one file or game (:class:`EvalRow`), a whole evaluation (:class:`EvalResult`: JSON, the
flat metrics a tracker logs) and its plain-text table (:func:`format_table`). Apart from the
playing code, so that what reads results imports no search or network."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field


@dataclass
class EvalRow:
    """One file (Connect Four) or the whole game (m,n,k): counts over ``positions``; the value
    counts are None for a player without a network, ``perfect`` for m,n,k."""

    name: str
    positions: int
    wrong: int
    losing: int
    perfect: int | None = None
    value_decided: int | None = None
    value_sign_correct: int | None = None
    value_outcome_correct: int | None = None

    @property
    def wrong_rate(self) -> float:
        return self.wrong / self.positions if self.positions else float("nan")

    @property
    def losing_rate(self) -> float:
        return self.losing / self.positions if self.positions else float("nan")

    @property
    def perfect_rate(self) -> float | None:
        return None if self.perfect is None or not self.positions else self.perfect / self.positions

    @property
    def value_sign_accuracy(self) -> float | None:
        if self.value_sign_correct is None or not self.value_decided:
            return None
        return self.value_sign_correct / self.value_decided

    @property
    def value_outcome_accuracy(self) -> float | None:
        if self.value_outcome_correct is None or not self.positions:
            return None
        return self.value_outcome_correct / self.positions

    def to_dict(self) -> dict:
        return {**asdict(self), "wrong_rate": self.wrong_rate, "losing_rate": self.losing_rate,
                "perfect_rate": self.perfect_rate, "value_sign_accuracy": self.value_sign_accuracy,
                "value_outcome_accuracy": self.value_outcome_accuracy}


@dataclass
class EvalResult:
    """``game``, ``player`` (its spec), ``simulations`` (search budget, None without search),
    one row per file, ``seconds``."""

    game: str
    player: str
    simulations: int | None
    rows: list[EvalRow] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def never_loses(self) -> bool:
        return all(r.losing == 0 for r in self.rows)

    def to_dict(self) -> dict:
        return {"game": self.game, "player": self.player, "simulations": self.simulations,
                "never_loses": self.never_loses, "seconds": self.seconds,
                "rows": [r.to_dict() for r in self.rows]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def metrics(self) -> dict[str, float]:
        """Flat ``{"<row>/<metric>": value}`` for a tracker (the hook for MLflow logging)."""
        out: dict[str, float] = {}
        for r in self.rows:
            for key in ("wrong_rate", "losing_rate", "perfect_rate", "value_sign_accuracy",
                        "value_outcome_accuracy"):
                value = getattr(r, key)
                if value is not None:
                    out[f"{r.name}/{key}"] = float(value)
        out["never_loses"] = float(self.never_loses)
        return out


def format_table(result: EvalResult) -> str:
    """A plain-text table, one row per file, and the never-loses verdict."""
    def pct(x: float | None) -> str:
        return "-" if x is None else f"{100 * x:.1f}%"

    head = ["positions", "wrong", "losing", "perfect", "value sign", "value outcome"]
    width = max([len("file")] + [len(r.name) for r in result.rows])
    lines = [f"{result.game}: {result.player}"
             + (f" ({result.simulations} simulations)" if result.simulations else ""),
             f"{'file':<{width}}  "
             + "  ".join(f"{h:>13}" if h.startswith("value") else f"{h:>9}" for h in head)]
    for r in result.rows:
        cells = [f"{r.positions:>9}", f"{pct(r.wrong_rate):>9}", f"{pct(r.losing_rate):>9}",
                 f"{pct(r.perfect_rate):>9}", f"{pct(r.value_sign_accuracy):>13}",
                 f"{pct(r.value_outcome_accuracy):>13}"]
        lines.append(f"{r.name:<{width}}  " + "  ".join(cells))
    losing = sum(r.losing for r in result.rows)
    lines.append("never loses: yes" if result.never_loses else
                 f"never loses: no ({losing} moves turn a won or drawn position into a lost one)")
    return "\n".join(lines)
