// Play: a person against a player of the allow-list (the triangle puzzle alone). The current
// Position is kept in window.triPlay for the tests and the curious.

import { api } from "./api.js";
import { drawGhost, gridBoard, shapeSvg, triangleBoard } from "./boards.js";
import { $, fillPlayers, gameInfo, say } from "./ui.js";

let position = null;
let selected = null; // the triangle slot chosen, or null
let busy = false;
let latest = 0; // numbers each new game's request: an answer to an older one is dropped

function legalSet(board) {
  return new Set(board.legal.map((m) => m.join(" ")));
}

function render() {
  window.triPlay = position;
  if (!position) return;
  const p = position, b = p.board;
  $("#play-turn").textContent = p.over ? "-" : (p.players.length === 1 ? "you" : p.players[p.turn]);
  $("#play-score").textContent = Number(p.score.toFixed(3)).toString();
  $("#play-lines").textContent = p.stats.lines ?? 0;
  $("#play-moves").textContent = p.moves;
  $("#play-result").textContent = p.over ? (p.result ? p.result.text : "game over") : "";
  $("#play-seed-shown").textContent = p.seed;
  $("#play-help").textContent = p.kind === "triangle"
    ? "Click a shape, then the cell where its outlined triangle goes: the ghost is green where it fits, red where not."
    : p.game === "connect4" ? "Click a column to drop your disc."
      : p.game === "othello" ? "Click a marked cell: your disc must close a line of the opponent's discs. Pass when you have no move."
        : p.game === "gobang" ? "Click an empty cell: five or more in a row (across, down or diagonal) wins."
          : "Click an empty cell.";
  const history = $("#play-history");
  history.replaceChildren(...p.history.map((h) => {
    const li = document.createElement("li");
    li.textContent = `${h.who}: ${h.move}`;
    return li;
  }));
  const holder = $("#play-board");
  const slots = $("#play-slots");
  if (p.kind === "triangle") {
    if (selected !== null && (!b.slots[selected] || p.over)) selected = null;
    const legal = legalSet(b);
    let svg;
    svg = triangleBoard(b, {
      onHover: (r, c) => {
        if (selected === null || p.over) return;
        drawGhost(svg, b, b.slots[selected], r, c, legal.has(`${selected} ${r} ${c}`));
      },
      onLeave: () => drawGhost(svg, b, null),
      onCell: (r, c) => {
        if (p.over) return;
        if (selected === null) { say("#play-message", "choose a shape first (click one on the right)", true); return; }
        send(`${selected} ${r} ${c}`);
      },
    });
    holder.replaceChildren(svg);
    slots.hidden = false;
    slots.replaceChildren(...b.slots.map((shape, s) => {
      const box = document.createElement("button");
      box.type = "button";
      box.className = "slot" + (shape ? "" : " empty") + (shape && !shape.fits ? " nofit" : "") +
        (selected === s ? " selected" : "");
      box.dataset.slot = s;
      box.setAttribute("aria-label", shape ? `shape ${s}${shape.fits ? "" : " (fits nowhere)"}` : `slot ${s} (empty)`);
      const label = document.createElement("span");
      label.className = "label";
      label.textContent = shape ? `slot ${s}${shape.fits ? "" : ": fits nowhere"}` : `slot ${s}: empty`;
      box.append(label);
      if (shape) box.append(shapeSvg(shape));
      box.disabled = !shape || p.over;
      box.addEventListener("click", () => { selected = s; render(); });
      return box;
    }));
    $("#play-extra").replaceChildren();
  } else {
    slots.hidden = true;
    $("#play-extra").replaceChildren(...(b.extra || []).map((m) => {
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = m.move;
      button.dataset.move = m.move;
      button.disabled = !m.legal || p.over;
      button.addEventListener("click", () => send(m.move));
      return button;
    }));
    holder.replaceChildren(gridBoard(b, {
      game: p.game,
      onCell: (r, c) => {
        if (p.over) return;
        const move = b.moves[r][c];
        if (move) send(move);
      },
    }));
  }
}

async function send(move) {
  if (busy) return;
  busy = true;
  const game = latest;
  say("#play-message", "…");
  try {
    const answer = await api.move(position.id, move);
    if (game !== latest) return; // a new game started meanwhile
    position = answer;
    say("#play-message", position.message);
  } catch (err) {
    if (game === latest) say("#play-message", err.message, true); // the game goes on, unchanged
  } finally {
    busy = false;
  }
  render();
}

async function newGame(event) {
  if (event) event.preventDefault();
  const game = $("#play-game").value;
  const info = gameInfo(game);
  const body = { game };
  const seed = $("#play-seed").value.trim();
  if (seed !== "") body.seed = Number(seed);
  if (info.num_players === 2) {
    body.opponent = $("#play-opponent").value;
    body.seat = Number($("#play-colour").value);
  }
  selected = null;
  const mine = ++latest;
  say("#play-message", info.num_players === 2 && body.seat === 1 ? "the opponent opens…" : "");
  try {
    const answer = await api.play(body);
    if (mine !== latest) return; // a newer game was asked for (changing the game, then New game)
    position = answer;
    say("#play-message", position.message || "your move");
  } catch (err) {
    if (mine === latest) say("#play-message", err.message, true);
    return;
  }
  render();
}

function onGame() {
  const info = gameInfo($("#play-game").value);
  for (const node of document.querySelectorAll("#view-play .two-player")) node.hidden = info.num_players !== 2;
  for (const node of document.querySelectorAll("#view-play .one-player")) node.hidden = info.num_players !== 1;
  fillPlayers($("#play-opponent"), info, info.default_player);
  newGame();
}

export function initPlay(info) {
  const select = $("#play-game");
  select.replaceChildren(...info.games.map((g) => new Option(g.name, g.name)));
  select.value = info.game;
  select.addEventListener("change", onGame);
  $("#play-form").addEventListener("submit", newGame);
  onGame();
}
