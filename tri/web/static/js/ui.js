// Small helpers the views share: element lookup, messages, the allow-list in a <select>.

export const $ = (selector) => document.querySelector(selector);

let info = null;

export function setInfo(value) {
  info = value;
}

export function gameInfo(name) {
  return info.games.find((g) => g.name === name);
}

export function say(selector, text, error = false) {
  const node = $(selector);
  node.textContent = text || "";
  node.classList.toggle("error", error);
}

export function fillPlayers(select, game, chosen) {
  const keep = chosen ?? select.value;
  select.replaceChildren(...game.players.map((p) => new Option(p.label, p.name)));
  if (game.players.some((p) => p.name === keep)) select.value = keep;
}

export function link(href, text) {
  const a = document.createElement("a");
  a.href = href;
  a.textContent = text;
  a.target = "_blank";
  a.rel = "noopener noreferrer";
  return a;
}

export function table(headers, rows, className = "") {
  const t = document.createElement("table");
  if (className) t.className = className;
  const head = t.createTHead().insertRow();
  for (const h of headers) {
    const th = document.createElement("th");
    th.textContent = h;
    head.appendChild(th);
  }
  const body = t.createTBody();
  for (const row of rows) {
    const tr = body.insertRow();
    for (const v of row) tr.insertCell().textContent = v;
  }
  return t;
}

export const fmt = (v, digits = 1) => (v === null || v === undefined ? "-" : Number(v).toFixed(digits));
