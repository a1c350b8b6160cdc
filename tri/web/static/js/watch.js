// Watch: players play a seed move by move. The page keeps every frame it was sent, so stepping
// back and forward is local; the server is asked for a move only past the last frame kept. With
// "show the search", position i is drawn with what the mover's search saw there (the decision of
// frame i + 1, fetched one move ahead). Side by side (the triangle puzzle): two players, the same
// seed, the same draws.

import { api } from "./api.js";
import { drawGhost, gridBoard, piecesBoard, shapeSvg, triangleBoard } from "./boards.js";
import { $, fillPlayers, fmt, gameInfo, say } from "./ui.js";

let panels = []; // {title, frames: [Frame], node}
let cursor = 0;
let timer = null;
let busy = false;

const analysisOn = () => $("#watch-analysis").checked;
const lastFrame = (p) => p.frames[p.frames.length - 1];
const finished = (p) => lastFrame(p).position.over;

async function ensure(index) {
  // Fetch moves until every panel has frame `index` or its game is over.
  await Promise.all(panels.map(async (p) => {
    while (p.frames.length <= index && !finished(p)) p.frames.push(await api.next(p.frames[0].id));
  }));
}

function panelNode(p) {
  const node = document.createElement("div");
  node.className = "panel watch-panel";
  node.innerHTML = `<h3></h3><div class="facts"><span>score <b class="panel-score"></b></span>
    <span>moves <b class="panel-moves"></b></span><span class="panel-lines-wrap">lines <b class="panel-lines"></b></span>
    <span>value <b class="panel-value">-</b></span></div><p class="panel-message muted small"></p>
    <div class="board"></div><div class="slots"></div><div class="analysis small"><b>search</b>
    <ol class="top"></ol></div>`;
  node.querySelector("h3").textContent = p.title;
  return node;
}

function show() {
  for (const p of panels) {
    const i = Math.min(cursor, p.frames.length - 1);
    const frame = p.frames[i], pos = frame.position, b = pos.board;
    const next = p.frames[i + 1];
    const analysis = analysisOn() && next && next.decision ? next.decision.analysis : null;
    const n = p.node;
    n.querySelector(".panel-score").textContent = Number(pos.score.toFixed(3)).toString();
    n.querySelector(".panel-moves").textContent = pos.moves;
    n.querySelector(".panel-lines-wrap").hidden = pos.kind !== "triangle";
    n.querySelector(".panel-lines").textContent = pos.stats.lines ?? 0;
    n.querySelector(".panel-value").textContent = analysis && analysis.value !== null ? fmt(analysis.value, 3) : "-";
    let text = frame.decision ? `${frame.decision.who} played ${frame.decision.move}` : "start";
    if (pos.over) text += pos.result ? ` — ${pos.result.text}` : " — game over";
    if (pos.kind === "pieces" && b.facts.length) text += ` (${b.facts.join("; ")})`;
    n.querySelector(".panel-message").textContent = text;
    const heat = analysis ? analysis.heat : null;
    const board = pos.kind === "triangle" ? triangleBoard(b, { heat })
      : pos.kind === "pieces" ? piecesBoard(b, { game: pos.game, heat }) : gridBoard(b, { game: pos.game, heat });
    if (analysis && pos.kind === "triangle" && analysis.top.length) {
      // The search's first choice, where its shape would go.
      const [s, r, c] = analysis.top[0].move.split(" ").map(Number);
      drawGhost(board, b, b.slots[s], r, c, true);
    }
    n.querySelector(".board").replaceChildren(board);
    const slots = n.querySelector(".slots");
    slots.replaceChildren(...(pos.kind === "triangle" ? b.slots.map((shape, s) => {
      const box = document.createElement("div");
      box.className = "slot" + (shape ? "" : " empty");
      box.dataset.slot = s;
      if (shape) box.append(shapeSvg(shape, 0.45));
      return box;
    }) : []));
    const box = n.querySelector(".analysis");
    box.hidden = !analysis;
    n.querySelector(".top").replaceChildren(...(analysis ? analysis.top.map((t) => {
      const li = document.createElement("li");
      li.textContent = `${t.move}: ${(100 * t.share).toFixed(1)}%`;
      const bar = document.createElement("span");
      bar.className = "bar";
      bar.style.width = `${Math.round(80 * t.share)}px`;
      li.append(bar);
      return li;
    }) : []));
  }
  const end = panels.every((p) => cursor >= p.frames.length - 1 && finished(p));
  $("#watch-counter").textContent = panels.length ? `${cursor}${end ? " (end)" : ""}` : "-";
  $("#watch-back").disabled = cursor === 0;
  $("#watch-forward").disabled = end;
  if (end) stopTimer();
}

async function step(delta) {
  if (busy || !panels.length) return;
  busy = true;
  try {
    if (delta > 0) {
      await ensure(cursor + 1);
      if (panels.some((p) => p.frames.length > cursor + 1)) cursor += 1;
      if (analysisOn()) await ensure(cursor + 1);
    } else {
      cursor = Math.max(0, cursor - 1);
    }
    say("#watch-message", "");
  } catch (err) {
    say("#watch-message", err.message, true);
    stopTimer();
  } finally {
    busy = false;
  }
  show();
}

function stopTimer() {
  if (timer !== null) clearInterval(timer);
  timer = null;
  $("#watch-play").innerHTML = "&#9654; play";
}

function toggle() {
  if (timer !== null) { stopTimer(); return; }
  $("#watch-play").innerHTML = "&#10074;&#10074; pause";
  timer = setInterval(() => step(1), Number($("#watch-speed").value));
}

async function start(event) {
  if (event) event.preventDefault();
  stopTimer();
  const game = $("#watch-game").value;
  const info = gameInfo(game);
  const seedText = $("#watch-seed").value.trim();
  const base = { game, analysis: analysisOn() };
  if (seedText !== "") base.seed = Number(seedText);
  const bodies = [];
  if (info.num_players === 2) {
    bodies.push({ ...base, player: $("#watch-player").value, opponent: $("#watch-opponent").value,
                  seat: Number($("#watch-seat").value) });
  } else {
    bodies.push({ ...base, player: $("#watch-player").value });
    if ($("#watch-side").checked) bodies.push({ ...base, player: $("#watch-player2").value });
  }
  say("#watch-message", "starting…");
  try {
    const first = await api.watch(bodies[0]);
    if (bodies.length > 1) bodies[1].seed = first.position.seed; // the same seed, the same draws
    const frames = [first, ...(bodies.length > 1 ? [await api.watch(bodies[1])] : [])];
    panels = frames.map((f, i) => ({
      title: info.num_players === 2 ? `${f.position.players[0]} (X) against ${f.position.players[1]} (O)`
        : `${bodies[i].player} — seed ${f.position.seed}`,
      frames: [f],
    }));
    cursor = 0;
    if (analysisOn()) await ensure(1);
    say("#watch-message", "");
  } catch (err) {
    say("#watch-message", err.message, true);
    return;
  }
  const holder = $("#watch-panels");
  holder.replaceChildren(...panels.map((p) => (p.node = panelNode(p))));
  show();
}

function onGame() {
  const info = gameInfo($("#watch-game").value);
  for (const node of document.querySelectorAll("#view-watch .two-player")) node.hidden = info.num_players !== 2;
  for (const node of document.querySelectorAll("#view-watch .one-player")) node.hidden = info.num_players !== 1;
  fillPlayers($("#watch-player"), info, info.default_player);
  fillPlayers($("#watch-opponent"), info, "greedy");
  fillPlayers($("#watch-player2"), info, "greedy");
}

export function initWatch(info) {
  const select = $("#watch-game");
  select.replaceChildren(...info.games.map((g) => new Option(g.name, g.name)));
  select.value = info.game;
  select.addEventListener("change", onGame);
  $("#watch-form").addEventListener("submit", start);
  $("#watch-back").addEventListener("click", () => step(-1));
  $("#watch-forward").addEventListener("click", () => step(1));
  $("#watch-play").addEventListener("click", toggle);
  $("#watch-analysis").addEventListener("change", async () => {
    if (analysisOn() && panels.length) await step(0);
    show();
  });
  $("#watch-speed").addEventListener("input", () => {
    $("#watch-speed-text").textContent = `${$("#watch-speed").value} ms`;
    if (timer !== null) { stopTimer(); toggle(); }
  });
  onGame();
  window.triWatch = () => ({ cursor, panels: panels.map((p) => p.frames.length) });
}
