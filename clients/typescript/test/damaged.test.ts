// A damaged strict session (its head commits entries the bucket lost) says so
// in its metadata, in each entries page and with a "damaged" event of its
// stream; the storage tells its user (getDamaged) whichever it read last.
// Damaging a session needs the bucket, so a fetch adds what transcript-serve
// answers for one to a whole session's responses.
import assert from "node:assert/strict";
import { test } from "node:test";
import { HttpSessionRepo, HttpSessionStorage, type HttpClientOptions } from "../src/index.js";

const baseUrl = process.env.TRANSCRIPT_SERVE_URL ?? "";
const alice: HttpClientOptions = { baseUrl, token: process.env.TRANSCRIPT_TOKEN_ALICE ?? "", pageSize: 2 };
if (!baseUrl) throw new Error("TRANSCRIPT_SERVE_URL is not set: run these tests with npm test");

const user = (text: string) => ({ role: "user", content: text, timestamp: 1 }) as any;
const reason = "the head commits 2 segments, 1 are missing (run transcript verify)";

/** A fetch that marks every page answered as damaged, and prepends a "damaged" event to every stream. */
const damaging: typeof fetch = async (input, init) => {
	const res = await fetch(input, init);
	const url = String(input);
	if (res.status === 200 && url.includes("/entries?")) {
		const page = (await res.json()) as Record<string, unknown>;
		return new Response(JSON.stringify({ ...page, damaged: reason }), { status: 200, headers: res.headers });
	}
	if (res.status === 200 && url.endsWith("/events") && res.body) {
		const head = new TextEncoder().encode(`event: damaged\ndata: ${JSON.stringify({ damaged: reason })}\n\n`);
		const reader = res.body.getReader();
		const body = new ReadableStream<Uint8Array>({
			start(c) {
				c.enqueue(head);
			},
			async pull(c) {
				const r = await reader.read();
				if (r.done) c.close();
				else c.enqueue(r.value);
			},
			cancel(why) {
				return reader.cancel(why);
			},
		});
		return new Response(body, { status: 200, headers: res.headers });
	}
	return res;
};

test("a damaged session's pages and events say so; a whole one's do not", async () => {
	const repo = new HttpSessionRepo(alice);
	const s = await repo.create({});
	for (let i = 0; i < 3; i++) await s.appendMessage(user(`q${i}`));
	const id = (await s.getMetadata()).id;

	const whole = await HttpSessionStorage.open(alice, id);
	assert.equal(whole.getDamaged(), undefined);
	await whole.getEntries();
	assert.equal(whole.getDamaged(), undefined);

	const damaged = await HttpSessionStorage.open({ ...alice, fetch: damaging }, id);
	assert.equal(damaged.getDamaged(), reason, "from the pages open reads");
	const fresh = await HttpSessionStorage.open({ ...alice, pageSize: 10 }, id);
	assert.equal(fresh.getDamaged(), undefined);
	const abort = new AbortController();
	const watching = await HttpSessionStorage.open({ ...alice, fetch: damaging, pageSize: 10 }, id);
	const it = watching.watch({ after: 2, signal: abort.signal });
	const first = await it.next();
	assert.equal(first.done, false);
	assert.equal(first.value?.seq, 3);
	assert.equal(watching.getDamaged(), reason, "from the stream's event");
	abort.abort();
	await it.return(undefined);
	await repo.delete(await s.getMetadata());
});
