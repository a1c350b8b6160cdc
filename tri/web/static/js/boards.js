// Boards as SVG: the triangle puzzle (cells, slots, the ghost of a shape under the mouse) and the
// grid games (Connect Four discs, Tic-Tac-Toe marks). Each draw function returns an <svg>.

const SVG = "http://www.w3.org/2000/svg";
export const TRI_W = 44;                       // a triangle's base, px
export const TRI_H = TRI_W * Math.sqrt(3) / 2; // its height

export function el(name, attrs = {}, parent = null) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (parent) parent.appendChild(node);
  return node;
}

// The corners of cell (r, c) pointing up or down, at scale w (base) and h (height).
export function triPoints(r, c, up, w = TRI_W, h = TRI_H, ox = 0, oy = 0) {
  const x = ox + c * w / 2, y = oy + r * h;
  const pts = up ? [[x, y + h], [x + w / 2, y], [x + w, y + h]] : [[x, y], [x + w, y], [x + w / 2, y + h]];
  return pts.map(([a, b]) => `${a.toFixed(1)},${b.toFixed(1)}`).join(" ");
}

const key = (r, c) => `${r},${c}`;

function heatAlpha(heat) {
  let max = 0;
  for (const row of heat) for (const v of row) max = Math.max(max, v);
  return (v) => (max > 0 ? 0.85 * v / max : 0);
}

// The triangle board. opts: heat ([rows][cols] or null), onCell(r, c, event) for clicks,
// onHover(r, c) / onLeave() for the ghost.
export function triangleBoard(board, opts = {}) {
  const pad = 22;
  const width = (board.cols + 1) * TRI_W / 2 + pad + 6, height = board.rows * TRI_H + pad + 6;
  const svg = el("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
                          "aria-label": "triangle board" });
  const placed = new Set(board.placed.map(([r, c]) => key(r, c)));
  const cleared = new Set(board.cleared.map(([r, c]) => key(r, c)));
  for (let c = 0; c < board.cols; c++) {
    el("text", { x: pad + c * TRI_W / 2 + TRI_W / 2, y: 13, class: "axis" }, svg).textContent = c;
  }
  for (let r = 0; r < board.rows; r++) {
    el("text", { x: 9, y: pad + r * TRI_H + TRI_H / 2 + 4, class: "axis" }, svg).textContent = r;
  }
  const cells = el("g", {}, svg);
  for (let r = 0; r < board.rows; r++) {
    for (let c = 0; c < board.cols; c++) {
      if (!board.playable[r][c]) continue;
      let state = board.filled[r][c] ? "filled" : "free";
      if (placed.has(key(r, c))) state = "placed";
      else if (cleared.has(key(r, c))) state = "cleared";
      const poly = el("polygon", { points: triPoints(r, c, board.up[r][c], TRI_W, TRI_H, pad, pad),
                                   class: `cell ${state}`, "data-r": r, "data-c": c }, cells);
      if (opts.onCell) poly.addEventListener("click", (e) => opts.onCell(r, c, e));
      if (opts.onHover) poly.addEventListener("mouseenter", () => opts.onHover(r, c));
    }
  }
  if (opts.onLeave) cells.addEventListener("mouseleave", () => opts.onLeave());
  if (opts.heat) {
    const alpha = heatAlpha(opts.heat);
    const g = el("g", { class: "heat-layer" }, svg);
    for (let r = 0; r < board.rows; r++) {
      for (let c = 0; c < board.cols; c++) {
        const a = alpha(opts.heat[r][c]);
        if (a > 0.01) {
          el("polygon", { points: triPoints(r, c, board.up[r][c], TRI_W, TRI_H, pad, pad), class: "heat",
                          "fill-opacity": a.toFixed(3), "data-r": r, "data-c": c }, g);
        }
      }
    }
  }
  svg.ghostLayer = el("g", { class: "ghost-layer" }, svg);
  svg.pad = pad;
  return svg;
}

// Draw the ghost of `shape` (cells [dr, dc, up]) anchored at (r, c): green if it fits, red if not.
export function drawGhost(svg, board, shape, r, c, fits) {
  const layer = svg.ghostLayer;
  layer.replaceChildren();
  if (!shape) return;
  for (const [dr, dc, up] of shape.cells) {
    const rr = r + dr, cc = c + dc;
    if (rr < 0 || cc < 0 || rr >= board.rows || cc >= board.cols) continue;
    el("polygon", { points: triPoints(rr, cc, up, TRI_W, TRI_H, svg.pad, svg.pad),
                    class: `ghost ${fits ? "fits" : "nofit"}` }, layer);
  }
}

// A slot's shape, small, with its anchor (the cell a move names) outlined.
export function shapeSvg(shape, scale = 0.62) {
  const w = TRI_W * scale, h = TRI_H * scale;
  const rows = shape.cells.map(([dr]) => dr), cols = shape.cells.map(([, dc]) => dc);
  const r0 = Math.min(...rows), c0 = Math.min(...cols);
  const width = (Math.max(...cols) - c0 + 2) * w / 2 + 4, height = (Math.max(...rows) - r0 + 1) * h + 4;
  const svg = el("svg", { width, height, viewBox: `0 0 ${width} ${height}`, "aria-hidden": "true" });
  for (const [dr, dc, up] of shape.cells) {
    el("polygon", { points: triPoints(dr - r0, dc - c0, up, w, h, 2, 2), class: "cell filled" }, svg);
  }
  const anchor = shape.cells.find(([dr, dc]) => dr === 0 && dc === 0);
  if (anchor) el("polygon", { points: triPoints(-r0, -c0, anchor[2], w, h, 2, 2), class: "anchor" }, svg);
  return svg;
}

// A grid game's board. opts: game (its name: connect4 draws discs), heat, onCell(r, c).
export function gridBoard(board, opts = {}) {
  const size = 64, pad = 22;
  const width = board.cols * size + pad, height = board.rows * size + pad;
  const svg = el("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
                          "aria-label": `${opts.game || "grid"} board` });
  const discs = opts.game === "connect4";
  const othello = opts.game === "othello"; // black and white discs on green
  for (let c = 0; c < board.cols; c++) {
    el("text", { x: pad + c * size + size / 2, y: 14, class: "axis" }, svg).textContent = board.col_labels[c];
  }
  if (othello) {
    for (let r = 0; r < board.rows; r++) {
      el("text", { x: 10, y: pad + r * size + size / 2 + 4, class: "axis" }, svg).textContent = board.row_labels[r];
    }
  }
  if (discs) el("rect", { x: pad, y: pad, width: board.cols * size, height: board.rows * size, rx: 10, class: "frame" }, svg);
  else if (othello) {
    el("rect", { x: pad, y: pad, width: board.cols * size, height: board.rows * size, class: "felt" }, svg);
    for (let i = 1; i < board.cols; i++) {
      el("line", { x1: pad + i * size, y1: pad, x2: pad + i * size, y2: pad + board.rows * size, class: "feltline" }, svg);
    }
    for (let i = 1; i < board.rows; i++) {
      el("line", { x1: pad, y1: pad + i * size, x2: pad + board.cols * size, y2: pad + i * size, class: "feltline" }, svg);
    }
  } else {
    for (let i = 1; i < board.cols; i++) {
      el("line", { x1: pad + i * size, y1: pad + 6, x2: pad + i * size, y2: pad + board.rows * size - 6, class: "gridline" }, svg);
    }
    for (let i = 1; i < board.rows; i++) {
      el("line", { x1: pad + 6, y1: pad + i * size, x2: pad + board.cols * size - 6, y2: pad + i * size, class: "gridline" }, svg);
    }
  }
  const alpha = opts.heat ? heatAlpha(opts.heat) : null;
  for (let r = 0; r < board.rows; r++) {
    for (let c = 0; c < board.cols; c++) {
      const cx = pad + c * size + size / 2, cy = pad + r * size + size / 2, v = board.cells[r][c];
      const last = board.last && board.last[0] === r && board.last[1] === c;
      if (discs) {
        el("circle", { cx, cy, r: size * 0.38, class: `${v ? `disc${v}` : "hole"}${last ? " last" : ""}` }, svg);
      } else if (othello) {
        if (v) el("circle", { cx, cy, r: size * 0.4, class: `${v === 1 ? "black" : "white"}${last ? " last" : ""}` }, svg);
        else if (board.legal[r][c]) el("circle", { cx, cy, r: size * 0.08, class: "hint" }, svg);
      } else if (v) {
        el("text", { x: cx, y: cy, class: `mark ${v === 1 ? "x" : "o"}` }, svg).textContent = v === 1 ? "X" : "O";
      }
      if (alpha && alpha(opts.heat[r][c]) > 0.01) {
        el("circle", { cx, cy, r: size * 0.3, class: "heat", "fill-opacity": alpha(opts.heat[r][c]).toFixed(3),
                       "data-r": r, "data-c": c }, svg);
      }
      const hit = el("rect", { x: pad + c * size, y: pad + r * size, width: size, height: size,
                               class: `hit cell${board.legal[r][c] ? " legal" : ""}`, "data-r": r, "data-c": c }, svg);
      if (opts.onCell) hit.addEventListener("click", () => opts.onCell(r, c));
    }
  }
  return svg;
}

// A "pieces" board (Santorini, Pyrga): each cell its level (nested squares) or dome, its pieces
// (workers; squares, circles and arrows) in the players' colours, a full tower's owner as a tint.
// opts: heat, next (Set of cell names a click may pick now), picked (Set of names picked so far),
// onCell(r, c).
const ARROW_ANGLE = { "^": 0, ">": 90, "v": 180, "<": 270 };

export function piecesBoard(board, opts = {}) {
  const size = 70, pad = 22;
  const width = board.cols * size + pad, height = board.rows * size + pad;
  const svg = el("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
                          "aria-label": `${opts.game || "pieces"} board` });
  for (let c = 0; c < board.cols; c++) {
    el("text", { x: pad + c * size + size / 2, y: 14, class: "axis" }, svg).textContent = board.col_labels[c];
  }
  for (let r = 0; r < board.rows; r++) {
    el("text", { x: 10, y: pad + r * size + size / 2 + 4, class: "axis" }, svg).textContent = board.row_labels[r];
  }
  const last = new Set((board.last || []).map(([r, c]) => key(r, c)));
  const alpha = opts.heat ? heatAlpha(opts.heat) : null;
  for (let r = 0; r < board.rows; r++) {
    for (let c = 0; c < board.cols; c++) {
      const cell = board.cells[r][c], name = board.names[r][c];
      const x = pad + c * size, y = pad + r * size, cx = x + size / 2, cy = y + size / 2;
      el("rect", { x: x + 1, y: y + 1, width: size - 2, height: size - 2, rx: 4,
                   class: `square tower${cell.tower}${last.has(key(r, c)) ? " changed" : ""}` }, svg);
      for (let level = 1; level <= cell.level; level++) {
        const inset = 4 + (level - 1) * 8;
        el("rect", { x: x + inset, y: y + inset, width: size - 2 * inset, height: size - 2 * inset, rx: 3,
                     class: `level level${level}` }, svg);
      }
      if (cell.dome) el("circle", { cx, cy, r: size * 0.2, class: "dome" }, svg);
      if (cell.level || cell.dome) {
        el("text", { x: x + 9, y: y + size - 7, class: "levelno" }, svg).textContent = cell.dome ? "D" : cell.level;
      }
      for (const piece of cell.pieces) {
        const who = `owner${piece.owner}`;
        if (piece.kind === "worker") {
          el("circle", { cx, cy, r: size * 0.17, class: `piece ${who}` }, svg);
        } else if (piece.kind === "square") {
          el("rect", { x: x + 10, y: y + 10, width: size - 20, height: size - 20, class: `outline ${who}` }, svg);
        } else if (piece.kind === "circle") {
          el("circle", { cx, cy, r: size * 0.24, class: `outline ${who}` }, svg);
        } else if (piece.kind === "arrow") {
          const s = size * 0.13;
          el("polygon", { points: `${cx},${cy - 1.3 * s} ${cx + s},${cy + s} ${cx},${cy + 0.4 * s} ${cx - s},${cy + s}`,
                          transform: `rotate(${ARROW_ANGLE[piece.direction] || 0} ${cx} ${cy})`,
                          class: `piece ${who}` }, svg);
        }
      }
      if (alpha && alpha(opts.heat[r][c]) > 0.01) {
        el("circle", { cx, cy, r: size * 0.3, class: "heat", "fill-opacity": alpha(opts.heat[r][c]).toFixed(3),
                       "data-r": r, "data-c": c }, svg);
      }
      const state = opts.picked && opts.picked.has(name) ? " picked" : opts.next && opts.next.has(name) ? " next" : "";
      const hit = el("rect", { x: x + 2, y: y + 2, width: size - 4, height: size - 4, rx: 4,
                               class: `hit cell${state}`, "data-r": r, "data-c": c, "data-name": name }, svg);
      if (opts.onCell) hit.addEventListener("click", () => opts.onCell(r, c));
    }
  }
  return svg;
}
