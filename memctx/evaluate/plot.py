"""The evaluation's plot: evidence recall against token budget, memctx and each baseline."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping


def plot_recall(results: Mapping[str, Any], path: Path, *,
                title: str = "LoCoMo evidence recall, pooled ({questions} questions)",
                ylabel: str = "gold evidence turns found, categories 1–4 (%)") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    budgets = sorted(results["budgets"], key=int)
    xs = [int(b) for b in budgets]
    arms = {"memctx": [results["budgets"][b]["evidence_recall"] for b in budgets]}
    for name in results["budgets"][budgets[0]]["baselines"]:
        arms[name] = [results["budgets"][b]["baselines"][name]["evidence_recall"] for b in budgets]
    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    for name, ys in arms.items():
        ax.plot(xs, [100 * (y or 0) for y in ys], marker="o", linewidth=2.5 if name == "memctx" else 1.2, label=name)
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs, [str(x) for x in xs])
    ax.set_xlabel("token budget")
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title(title.format(questions=results["questions_total"]))
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
