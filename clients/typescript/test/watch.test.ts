// watch: committed entries streamed from transcript-serve, resumable, keeping
// the storage's cache (and so Pi's Session) current.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Session, type SessionTreeEntry } from "@earendil-works/pi-agent-core";
import { HttpSessionRepo, HttpSessionStorage, type HttpClientOptions, type WatchedEntry } from "../src/index.js";

const baseUrl = process.env.TRANSCRIPT_SERVE_URL ?? "";
const alice: HttpClientOptions = { baseUrl, token: process.env.TRANSCRIPT_TOKEN_ALICE ?? "", pageSize: 2 };
if (!baseUrl) throw new Error("TRANSCRIPT_SERVE_URL is not set: run these tests with npm test");

const user = (text: string) => ({ role: "user", content: text, timestamp: 1 }) as any;

/** Takes n entries from a watch, failing after timeoutMs. */
async function take(it: AsyncGenerator<WatchedEntry>, n: number, timeoutMs = 10_000): Promise<WatchedEntry[]> {
	const out: WatchedEntry[] = [];
	const timer = setTimeout(() => void it.return(undefined), timeoutMs);
	try {
		while (out.length < n) {
			const r = await it.next();
			if (r.done) break;
			out.push(r.value);
		}
	} finally {
		clearTimeout(timer);
	}
	assert.equal(out.length, n, `${n} entries within ${timeoutMs} ms (got ${out.length})`);
	return out;
}

function texts(ws: WatchedEntry[]): string[] {
	return ws.map((w) => {
		const e = w.entry as SessionTreeEntry & { message?: { content?: string } };
		return e.type === "message" ? String(e.message?.content) : e.type;
	});
}

test("watch delivers another writer's entries in order, once, and keeps Pi's Session current", async () => {
	const repo = new HttpSessionRepo(alice);
	const writer = await repo.create({ cwd: "/watch" });
	await writer.appendMessage(user("one"));
	const meta = await writer.getMetadata();
	const reader = await repo.open(meta);
	const storage = reader.getStorage() as HttpSessionStorage;
	assert.equal(storage.getSeq(), 1);
	const abort = new AbortController();
	const it = storage.watch({ signal: abort.signal });
	const first = take(it, 3);
	await writer.appendMessage(user("two"));
	await writer.appendMessage(user("three"));
	await writer.appendSessionName("watched");
	const got = await first;
	assert.deepEqual(got.map((w) => w.seq), [2, 3, 4]);
	assert.deepEqual(texts(got), ["two", "three", "session_info"]);
	// The reader's Pi Session builds what the writer's does, and appends at the
	// head it learned from the watch.
	assert.deepEqual(await reader.buildContext(), await writer.buildContext());
	assert.equal(await reader.getSessionName(), "watched");
	assert.equal(storage.getHead(), await writer.getLeafId());
	const next = take(it, 1);
	await reader.appendMessage(user("from the reader"));
	assert.deepEqual(texts(await next), ["from the reader"], "its own commits are delivered too");
	abort.abort();
	assert.equal((await it.next()).done, true, "an aborted watch ends");
	await repo.delete(meta);
});

test("watch resumes exactly where it stopped", async () => {
	const repo = new HttpSessionRepo(alice);
	const s = await repo.create({});
	for (const t of ["a", "b", "c"]) await s.appendMessage(user(t));
	const storage = await HttpSessionStorage.open(alice, (await s.getMetadata()).id);
	const abort = new AbortController();
	const first = storage.watch({ after: 0, signal: abort.signal });
	const seen = await take(first, 2);
	abort.abort();
	await first.return(undefined);
	await s.appendMessage(user("d"));
	const again = new AbortController();
	const rest = await take(storage.watch({ after: seen[seen.length - 1].seq, signal: again.signal }), 2);
	again.abort();
	assert.deepEqual(texts([...seen, ...rest]), ["a", "b", "c", "d"]);
	assert.deepEqual([...seen, ...rest].map((w) => w.seq), [1, 2, 3, 4]);
	await repo.delete(await s.getMetadata());
});

test("watching a session that is deleted ends with not_found", async () => {
	const repo = new HttpSessionRepo(alice);
	const s = await repo.create({});
	await s.appendMessage(user("x"));
	const storage = s.getStorage() as HttpSessionStorage;
	// After the entry this storage appended: the next event is the deletion.
	const it = storage.watch({ after: 1 });
	const ended = it.next().then(
		() => "no error",
		(e: { code?: string }) => e.code,
	);
	await new Promise((r) => setTimeout(r, 200));
	await repo.delete(await s.getMetadata());
	assert.equal(await ended, "not_found");
});

test("a Session made from a watched storage stays a Pi Session", async () => {
	const repo = new HttpSessionRepo(alice);
	const s = await repo.create({});
	const storage = await HttpSessionStorage.open(alice, (await s.getMetadata()).id);
	const session = new Session(storage);
	assert.equal(await session.getLeafId(), null);
	await repo.delete(await s.getMetadata());
});
