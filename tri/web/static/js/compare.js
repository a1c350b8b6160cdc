// Compare: the project's learning curve and generations, its last ladder, the champions, and
// links to the Prefect and MLflow pages.

import { api } from "./api.js";
import { $, fmt, link, table } from "./ui.js";

function note(text) {
  const p = document.createElement("p");
  p.className = "muted";
  p.textContent = text;
  return p;
}

function image(src, alt) {
  const img = document.createElement("img");
  img.src = `${src}?t=${Date.now()}`; // drawn again when the records change
  img.alt = alt;
  img.className = "plot";
  return img;
}

export async function showCompare() {
  let view;
  $("#compare-curve").replaceChildren(note("loading the project's records…"));
  try {
    view = await api.compare();
  } catch (err) {
    $("#compare-curve").replaceChildren(note(err.message));
    return;
  }
  $("#compare-title").textContent = `Compare: ${view.project} (${view.game})`;
  const links = $("#compare-links");
  const items = [];
  if (view.links.prefect) items.push(link(`${view.links.prefect}/runs`, "Prefect flow runs"));
  for (const page of view.links.mlflow_pages || []) items.push(link(page.url, page.label));
  links.replaceChildren(...(items.length ? items
    : [document.createTextNode("tri serve starts the Prefect and MLflow UIs beside this page, with links here.")]));

  const gens = view.generations;
  $("#compare-curve").replaceChildren(view.curve ? image(view.curve, "learning curve")
    : note("no generations yet: run tri loop in this project."));
  $("#compare-generations").replaceChildren(gens.length ? table(
    ["generation", "candidate mean", "best mean (its seeds)", "best mean (pooled)", "promoted"],
    gens.map((g) => [g.generation, fmt(g.candidate, 2), fmt(g.best, 2), fmt(g.best_pooled, 2), g.promoted ? "yes" : "no"]),
  ) : document.createTextNode(""));

  const ladder = view.ladder;
  if (!ladder) {
    $("#compare-ladder").replaceChildren(note("no ladder yet: tri ladder --run . greedy champion ranks the generations."));
  } else {
    const ratings = ladder.kind === "ratings";
    const rows = ladder.standings.map((s) => ratings
      ? [s.name, fmt(s.value, 0), `[${fmt(s.low, 0)}, ${fmt(s.high, 0)}]`, fmt(s.score_rate, 3), `${s.wins}/${s.draws}/${s.losses}`]
      : [s.name, fmt(s.value, 2), `[${fmt(s.low, 2)}, ${fmt(s.high, 2)}]`, s.diff === null ? "-" : fmt(s.diff, 2), `${s.wins}/${s.draws}/${s.losses}`]);
    const parts = [note(`${ladder.method} (${ladder.games} ${ratings ? "seeds per pairing, both colours" : "seeds"}; anchor ${ladder.anchor})`),
      table(ratings ? ["player", "rating (Elo)", "95% interval", "score rate", "wins/draws/losses"]
        : ["player", "mean score", "95% interval", "paired difference", "seeds won/tied/lost"], rows)];
    if (view.ladder_plot) parts.push(image(view.ladder_plot, "ladder"));
    $("#compare-ladder").replaceChildren(...parts);
  }
  $("#compare-champions").replaceChildren(view.champions.length ? table(
    ["game", "generation", "search", "measured", "card"],
    view.champions.map((c) => [c.game, c.generation,
      `${c.simulations} simulations${c.trees > 1 ? ` x ${c.trees} trees` : ""}`, c.summary, c.card]), "text",
  ) : note("no champions found"));
}
