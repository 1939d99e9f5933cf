// A reader of Server-Sent Events (the text/event-stream format).

/** One event of a stream. */
export interface ServerSentEvent {
	/** The event's id ("" for none). */
	id: string;
	/** The event's name ("message" for none). */
	event: string;
	/** The event's data, its lines joined with "\n". */
	data: string;
}

/** Reads the events of an event stream until it ends; a "retry" field calls onRetry with its milliseconds. */
export async function* readEvents(body: ReadableStream<Uint8Array>, onRetry?: (ms: number) => void): AsyncGenerator<ServerSentEvent> {
	const reader = body.getReader();
	const decoder = new TextDecoder();
	let buf = "";
	let ev = { id: "", event: "", data: [] as string[] };
	try {
		for (;;) {
			const { value, done } = await reader.read();
			buf += done ? decoder.decode() : decoder.decode(value, { stream: true });
			let m: RegExpExecArray | null;
			// A line ends with CRLF, LF or CR; a CR at the very end may start a CRLF.
			while ((m = /\r\n|\n|\r(?!$)/.exec(buf)) !== null) {
				const line = buf.slice(0, m.index);
				buf = buf.slice(m.index + m[0].length);
				if (line === "") {
					if (ev.data.length > 0 || ev.event !== "") yield { id: ev.id, event: ev.event || "message", data: ev.data.join("\n") };
					ev = { id: "", event: "", data: [] };
					continue;
				}
				if (line.startsWith(":")) continue; // a comment: the heartbeat
				const colon = line.indexOf(":");
				const field = colon < 0 ? line : line.slice(0, colon);
				let value = colon < 0 ? "" : line.slice(colon + 1);
				if (value.startsWith(" ")) value = value.slice(1);
				if (field === "data") ev.data.push(value);
				else if (field === "event") ev.event = value;
				else if (field === "id") ev.id = value;
				else if (field === "retry" && /^\d+$/.test(value)) onRetry?.(Number(value));
			}
			if (done) return;
		}
	} finally {
		await reader.cancel().catch(() => {});
	}
}
