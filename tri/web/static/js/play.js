// Play: a person against a player of the allow-list (the triangle puzzle alone). The current
// Position is kept in window.triPlay for the tests and the curious. A "pieces" game's move is a
// path of clicks (cells, then words as buttons: Santorini's worker, move and build; Pyrga's cell
// and piece); the move is sent when the path picked so far is a whole move's.

import { api } from "./api.js";
import { drawGhost, gridBoard, piecesBoard, shapeSvg, triangleBoard } from "./boards.js";
import { $, fillPlayers, gameInfo, say } from "./ui.js";

let position = null;
let selected = null; // the triangle slot chosen, or null
let picked = []; // a "pieces" game: the tokens of the move clicked so far
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
          : p.game === "santorini" ? "Click your worker, the cell it moves to (at most one level up), then the cell " +
            "it builds on. Moving up to level 3 wins; a player who cannot move loses."
            : p.game === "pyrga" ? "Click a marked cell, then the piece to place (an arrow with its direction): " +
              "after a square play next to it, after a circle on it, after an arrow along it. Three pieces make " +
              "a tower, owned by who has two of them; more towers wins."
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
    $("#play-facts").textContent = "";
  } else if (p.kind === "pieces") {
    slots.hidden = true;
    renderPieces(p, holder);
  } else {
    slots.hidden = true;
    $("#play-facts").textContent = "";
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

// The moves whose path starts with the tokens picked so far, and the tokens that may come next.
function continuing(moves) {
  const fits = moves.filter((m) => picked.every((t, i) => m.path[i] === t));
  const next = new Set(fits.filter((m) => m.path.length > picked.length).map((m) => m.path[picked.length]));
  return { fits, next };
}

function pick(p, token) {
  const moves = p.board.moves;
  if (picked.length && token === picked[picked.length - 1]) picked.pop(); // a second click takes it back
  else if (continuing(moves).next.has(token)) picked.push(token);
  else if (moves.some((m) => m.path[0] === token)) picked = [token]; // start over from this cell
  else { say("#play-message", `no move of yours goes through ${token} now`, true); return; }
  const whole = continuing(moves).fits.find((m) => m.path.length === picked.length);
  if (whole) { picked = []; send(whole.move); return; }
  say("#play-message", picked.length ? `picked ${picked.join(" ")}` : "");
  render();
}

function renderPieces(p, holder) {
  const b = p.board;
  if (p.over) picked = [];
  const { next } = continuing(b.moves);
  const cellNames = new Set(b.names.flat());
  holder.replaceChildren(piecesBoard(b, {
    game: p.game, next: p.over ? new Set() : next, picked: new Set(picked),
    onCell: (r, c) => { if (!p.over) pick(p, b.names[r][c]); },
  }));
  const words = [...next].filter((t) => !cellNames.has(t));
  const buttons = words.map((t) => {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = t;
    button.dataset.move = t;
    button.addEventListener("click", () => pick(p, t));
    return button;
  });
  if (picked.length) {
    const clear = document.createElement("button");
    clear.type = "button";
    clear.textContent = "start the move again";
    clear.addEventListener("click", () => { picked = []; say("#play-message", ""); render(); });
    buttons.push(clear);
  }
  $("#play-extra").replaceChildren(...buttons);
  $("#play-facts").textContent = (b.facts || []).join(" · ");
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
  picked = [];
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
