// The page: tabs, the header's links, and the three views.

import { api } from "./api.js";
import { showCompare } from "./compare.js";
import { initPlay } from "./play.js";
import { $, link, setInfo } from "./ui.js";
import { initWatch } from "./watch.js";

function select(view) {
  for (const tab of document.querySelectorAll("nav button")) {
    const on = tab.dataset.view === view;
    tab.setAttribute("aria-selected", String(on));
    $(`#view-${tab.dataset.view}`).hidden = !on;
  }
  if (view === "compare") showCompare();
  history.replaceState(null, "", `#${view}`);
}

async function main() {
  let info;
  try {
    info = await api.info();
  } catch (err) {
    document.body.append(err.message);
    return;
  }
  setInfo(info);
  $("#project").textContent = `project ${info.project} (${info.game})`;
  const links = [];
  if (info.links.prefect) links.push(link(info.links.prefect, "Prefect"));
  if (info.links.mlflow) links.push(link(info.links.mlflow, "MLflow"));
  $("#links").replaceChildren(...links);
  for (const tab of document.querySelectorAll("nav button")) tab.addEventListener("click", () => select(tab.dataset.view));
  initPlay(info);
  initWatch(info);
  const start = location.hash.slice(1);
  select(["play", "watch", "compare"].includes(start) ? start : "play");
  document.body.dataset.ready = "true";
}

main();
