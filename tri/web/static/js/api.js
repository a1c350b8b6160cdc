// The server's JSON API (documented in tri/web/__init__.py). Every call resolves to the parsed
// body, or rejects with an Error whose message is the server's one-line `error`.

export class ApiError extends Error {
  constructor(message, status) {
    super(message);
    this.status = status;
  }
}

async function call(method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (err) {
    throw new ApiError("the tri server does not answer (is tri web still running?)", 0);
  }
  let data = null;
  try {
    data = await response.json();
  } catch (err) {
    throw new ApiError(`unexpected answer from the server (HTTP ${response.status})`, response.status);
  }
  if (!response.ok) throw new ApiError(data && data.error ? data.error : `HTTP ${response.status}`, response.status);
  return data;
}

export const api = {
  info: () => call("GET", "/api/info"),
  play: (body) => call("POST", "/api/play", body),
  position: (id) => call("GET", `/api/play/${id}`),
  move: (id, move) => call("POST", `/api/play/${id}/move`, { move }),
  watch: (body) => call("POST", "/api/watch", body),
  next: (id) => call("POST", `/api/watch/${id}/next`),
  compare: () => call("GET", "/api/compare"),
};
