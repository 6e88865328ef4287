// Server-sent events, as the service frames them (the WHATWG event-stream
// format, the subset a client needs): lines end with \n, \r\n or \r; a
// line "field: value" sets a field (one leading space after the colon is
// dropped); "data" lines accumulate, joined with \n; a blank line ends the
// event; lines that start with ":" are comments (the server's ": ping").
// An event with no data line is not dispatched, as in the standard.

/**
 * Events from a stream of byte chunks.
 * @param {AsyncIterable<Uint8Array>} chunks
 * @returns {AsyncGenerator<{event: string, data: string, id: string|null}>}
 */
export async function* parseEvents(chunks) {
  const decoder = new TextDecoder("utf-8");
  const state = { event: "", data: [], id: null };
  let pending = "";
  let skipLf = false; // the previous chunk ended with \r: a leading \n belongs to it
  for await (const chunk of chunks) {
    let text = decoder.decode(chunk, { stream: true });
    if (skipLf && text.startsWith("\n")) text = text.slice(1);
    if (text.length > 0) skipLf = text.endsWith("\r");
    pending += text;
    const lines = pending.split(/\r\n|\r|\n/);
    pending = lines.pop();
    for (const line of lines) {
      const event = takeLine(state, line);
      if (event) yield event;
    }
  }
  pending += decoder.decode();
  // A stream that ends without a blank line: the standard drops the last
  // incomplete event, and so do we (the server always ends its events).
}

function takeLine(state, line) {
  if (line === "") {
    const done = state.data.length > 0
      ? { event: state.event || "message", data: state.data.join("\n"), id: state.id }
      : null;
    state.event = "";
    state.data = [];
    return done;
  }
  if (line.startsWith(":")) return null;
  const colon = line.indexOf(":");
  const field = colon < 0 ? line : line.slice(0, colon);
  let value = colon < 0 ? "" : line.slice(colon + 1);
  if (value.startsWith(" ")) value = value.slice(1);
  if (field === "event") state.event = value;
  else if (field === "data") state.data.push(value);
  else if (field === "id") state.id = value;
  return null;
}
