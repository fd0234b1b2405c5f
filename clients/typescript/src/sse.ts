/** One dispatched Server-Sent Events message. */
export interface SSEMessage {
  /** The event type; "message" when the stream named none. */
  event: string;
  data: string;
  /** The id the message set, if it set one (Cairn: the event's seq). */
  id?: string;
}

/**
 * Reads the messages of an event stream (the WHATWG event-stream format)
 * until it ends. Comment lines (keep-alives) are skipped, and a message
 * without data is not dispatched. Stopping the iteration cancels the body.
 */
export async function* readMessages(body: ReadableStream<Uint8Array>): AsyncGenerator<SSEMessage> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let event = "";
  let data: string[] = [];
  let id: string | undefined;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buffer.search(/\r\n|\r|\n/)) >= 0) {
        if (buffer[nl] === "\r" && nl === buffer.length - 1) break; // maybe half of a \r\n
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(buffer[nl] === "\r" && buffer[nl + 1] === "\n" ? nl + 2 : nl + 1);
        if (line === "") {
          if (data.length > 0) yield { event: event || "message", data: data.join("\n"), id };
          event = "";
          data = [];
          id = undefined;
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const name = colon < 0 ? line : line.slice(0, colon);
        let val = colon < 0 ? "" : line.slice(colon + 1);
        if (val.startsWith(" ")) val = val.slice(1);
        if (name === "event") event = val;
        else if (name === "data") data.push(val);
        else if (name === "id" && !val.includes("\0")) id = val;
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}
