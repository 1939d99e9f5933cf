// Runs Pi's own Session class on HttpSessionStorage (through a real transcript
// serve) and on Pi's InMemorySessionStorage with the same operations, and
// compares what Pi builds from each after every step.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
	InMemorySessionRepo,
	Session,
	SessionError,
	type SessionMetadata,
	type SessionTreeEntry,
} from "@earendil-works/pi-agent-core";
import { HttpConflictError, HttpSessionRepo, HttpSessionStorage, type HttpClientOptions } from "../src/index.js";

const baseUrl = process.env.TRANSCRIPT_SERVE_URL ?? "";
const alice: HttpClientOptions = { baseUrl, token: process.env.TRANSCRIPT_TOKEN_ALICE ?? "", pageSize: 3 };
const bob: HttpClientOptions = { baseUrl, token: process.env.TRANSCRIPT_TOKEN_BOB ?? "" };
if (!baseUrl) throw new Error("TRANSCRIPT_SERVE_URL is not set: run these tests with npm test");

/** Gives a storage deterministic entry ids, so both sides name entries alike. */
function deterministicIds(session: Session<any>): void {
	let n = 0;
	const storage = session.getStorage() as { createEntryId: () => Promise<string> };
	storage.createEntryId = async () => `e${String(++n).padStart(4, "0")}`;
}

/** JSON of v without timestamps (each side stamps entries with its own clock) and leaf-entry ids. */
function comparable(v: unknown): unknown {
	return JSON.parse(JSON.stringify(v), function (k, val) {
		if (k === "timestamp") return undefined;
		if (val && typeof val === "object" && !Array.isArray(val) && val.type === "leaf") {
			const { id: _id, ...rest } = val;
			return rest;
		}
		return val;
	});
}

/** Asserts that Pi builds the same state from both sessions. */
async function same(step: string, mem: Session<any>, http: Session<any>): Promise<void> {
	assert.deepEqual(comparable(await http.buildContext()), comparable(await mem.buildContext()), `${step}: context`);
	assert.deepEqual(await http.getLeafId(), await mem.getLeafId(), `${step}: leaf`);
	assert.deepEqual(await http.getSessionName(), await mem.getSessionName(), `${step}: name`);
	assert.deepEqual(await http.getSessionStats(), await mem.getSessionStats(), `${step}: stats`);
	assert.deepEqual(comparable(await http.getBranch()), comparable(await mem.getBranch()), `${step}: branch`);
	assert.deepEqual(comparable(await http.getEntries()), comparable(await mem.getEntries()), `${step}: entries`);
}

const usage = {
	input: 100,
	output: 20,
	cacheRead: 5,
	cacheWrite: 1,
	totalTokens: 126,
	cost: { input: 0.1, output: 0.2, cacheRead: 0.01, cacheWrite: 0.02, total: 0.33 },
};
const user = (text: string) => ({ role: "user", content: text, timestamp: 1 }) as any;
const assistant = (text: string) =>
	({
		role: "assistant",
		content: [{ type: "text", text }],
		api: "anthropic-messages",
		provider: "anthropic",
		model: "claude-test",
		usage,
		stopReason: "stop",
		timestamp: 2,
	}) as any;

test("Pi's Session on transcript-serve builds what it builds in memory", async () => {
	const memRepo = new InMemorySessionRepo();
	const repo = new HttpSessionRepo(alice);
	const mem = await memRepo.create({});
	const http = await repo.create({ cwd: "/work" });
	deterministicIds(mem);
	deterministicIds(http);
	const both = async (step: string, op: (s: Session<any>) => Promise<unknown>) => {
		const a = await op(mem);
		const b = await op(http);
		assert.deepEqual(b, a, `${step}: result`);
		await same(step, mem, http);
	};

	await same("empty", mem, http);
	await both("model", (s) => s.appendModelChange("anthropic", "claude-test"));
	await both("thinking", (s) => s.appendThinkingLevelChange("high"));
	await both("tools", (s) => s.appendActiveToolsChange(["read", "bash"]));
	await both("u1", (s) => s.appendMessage(user("hello")));
	const a1 = await (async () => {
		let id = "";
		await both("a1", async (s) => (id = await s.appendMessage(assistant("hi there"))));
		return id;
	})();
	await both("u2", (s) => s.appendMessage(user("second question")));
	await both("a2", (s) => s.appendMessage(assistant("second answer")));
	await both("label", (s) => s.appendLabel(a1, "important"));
	assert.equal(await http.getLabel(a1), "important");
	await both("relabel", (s) => s.appendLabel(a1, "  "));
	await both("branch with moveTo", (s) => s.moveTo(a1));
	await both("alt u", (s) => s.appendMessage(user("alternative")));
	await both("alt a", (s) => s.appendMessage(assistant("alternative answer")));
	await both("branch summary", (s) => s.moveTo("e0007", { summary: "tried an alternative", details: { files: ["a.ts"] } }));
	await both("custom", (s) => s.appendCustomEntry("memo", { k: 1 }));
	await both("custom message", (s) => s.appendCustomMessageEntry("note", "visible note", true, { x: 1 }));
	await both("u3", (s) => s.appendMessage(user("third question")));
	await both("a3", (s) => s.appendMessage(assistant("third answer")));
	await both("compaction", (s) => s.appendCompaction("summary of the start", "e0006", 5000, { v: 1 }, false, usage));
	await both("after compaction", (s) => s.appendMessage(user("after compaction")));
	await both("compaction with retained tail", (s) =>
		s.appendCompaction("second summary", undefined, 6000, undefined, true, undefined, [user("kept tail")]),
	);
	await both("a4", (s) => s.appendMessage(assistant("fourth answer")));
	await both("name", (s) => s.appendSessionName("demo\nsession"));
	await both("move to root", (s) => s.moveTo(null));
	await both("new root", (s) => s.appendMessage(user("fresh start")));
	await both("back", (s) => s.moveTo("e0021"));
	const final = await http.buildContext();
	assert.ok(final.messages.length >= 3, "the compared context is not trivial");
	assert.deepEqual(final.model, { provider: "anthropic", modelId: "claude-test" });

	// Cursor reads page through the server.
	for (const cursor of [{ afterEntrySeq: 2, limit: 3 }, { afterEntrySeq: 20 }, { limit: 1 }, { afterEntrySeq: 1000 }]) {
		assert.deepEqual(comparable(await http.getEntries(cursor)), comparable(await mem.getEntries(cursor)), JSON.stringify(cursor));
	}

	// A reopened session (read back from the bucket) is the same.
	const meta = await http.getMetadata();
	const reopened = await repo.open(meta);
	await same("reopened", mem, reopened);
	assert.equal((await reopened.getMetadata()).name, "demo session");

	// Forks: before a user message, at an entry, and at the leaf.
	const memMeta = await mem.getMetadata();
	for (const opts of [{ entryId: "e0006", position: "before" as const }, { entryId: "e0011", position: "at" as const }, {}]) {
		const mf = await memRepo.fork(memMeta, opts);
		const hf = await repo.fork(meta, opts);
		assert.deepEqual(comparable(await hf.buildContext()), comparable(await mf.buildContext()), `fork ${JSON.stringify(opts)}`);
		assert.equal(await hf.getLeafId(), await mf.getLeafId());
		assert.equal((await hf.getMetadata()).parentSession, meta.id);
		// A fork takes appends like any session.
		await mf.appendMessage(user("in the fork"));
		await hf.appendMessage(user("in the fork"));
		assert.deepEqual(comparable(await hf.buildContext()), comparable(await mf.buildContext()));
	}
	await assert.rejects(repo.fork(meta, { entryId: "e0007" }), (e: SessionError) => e.code === "invalid_fork_target");
	await assert.rejects(repo.fork(meta, { entryId: "nope" }), (e: SessionError) => e.code === "invalid_fork_target");
	await assert.rejects(http.moveTo("nope"), (e: SessionError) => e.code === "not_found");

	const listed = await repo.list();
	assert.ok(listed.some((m) => m.id === meta.id && m.name === "demo session"));
	for (const m of listed) await repo.delete(m);
	assert.deepEqual(await repo.list(), []);
	await assert.rejects(repo.open(meta), (e: SessionError) => e.code === "not_found");
});

test("a stale head is a conflict; reopening continues from the committed head", async () => {
	const repo = new HttpSessionRepo(alice);
	const first = await repo.create({});
	await first.appendMessage(user("one"));
	const meta = await first.getMetadata();
	const second = await repo.open(meta);
	await second.appendMessage(user("from the second writer"));
	await assert.rejects(first.appendMessage(user("late")), (e: unknown) => {
		assert.ok(e instanceof HttpConflictError);
		assert.equal(e.reason, "stale_head");
		assert.equal(e.head, (second.getStorage() as HttpSessionStorage).getHead());
		return true;
	});
	const again = await repo.open(meta);
	await again.appendMessage(user("continued"));
	assert.equal((await again.getEntries()).length, 3);
	await repo.delete(meta);
});

test("a lost append response is retried without a duplicate", async () => {
	let dropped = 0;
	const lossy: typeof fetch = async (input, init) => {
		const res = await fetch(input, init);
		if (init?.method === "POST" && String(input).endsWith("/entries") && dropped === 0) {
			dropped++;
			await res.text();
			throw new TypeError("connection reset after the request was sent");
		}
		return res;
	};
	const repo = new HttpSessionRepo({ ...alice, fetch: lossy });
	const s = await repo.create({});
	await s.appendMessage(user("once"));
	await s.appendMessage(assistant("reply"));
	assert.equal(dropped, 1);
	const entries = await s.getEntries();
	assert.deepEqual(
		entries.map((e: SessionTreeEntry) => e.type),
		["message", "message"],
	);
	await repo.delete(await s.getMetadata());
});

test("opening a session takes its first page with the metadata and reads pages up to its entryCount, with no empty page after", async () => {
	const repo = new HttpSessionRepo(alice);
	const s = await repo.create({});
	for (let i = 0; i < 4; i++) {
		await s.appendMessage(user(`question ${i}`));
		await s.appendMessage(assistant(`answer ${i}`));
	}
	const id = (await s.getMetadata()).id;
	const pages: string[] = [];
	const opens: string[] = [];
	const counting: typeof fetch = async (input, init) => {
		if (String(input).includes("/entries?")) pages.push(String(input));
		else if (String(input).endsWith(`/v1/sessions/${id}?entries=3`)) opens.push(String(input));
		return fetch(input, init);
	};
	const storage = await HttpSessionStorage.open({ ...alice, fetch: counting }, id);
	const n = (await storage.getEntries()).length;
	assert.ok(n >= 8, `${n} entries`);
	// open takes alice's first 3 with the metadata and reads the rest in pages of 3; getEntries
	// without a limit reads one page of the server's size.
	assert.equal(opens.length, 1, "the open asks for the first page");
	const want = Math.ceil(n / 3) - 1 + 1;
	assert.equal(pages.length, want, `open and getEntries read ${want} pages: ${pages.join(", ")}`);
	assert.deepEqual(
		(await storage.getEntries()).map((e: SessionTreeEntry) => e.id),
		(await s.getEntries()).map((e: SessionTreeEntry) => e.id),
	);
	await repo.delete(await s.getMetadata());
});

test("a create whose response was lost is retried without a second session", async () => {
	let dropped = 0;
	const lossy: typeof fetch = async (input, init) => {
		const res = await fetch(input, init);
		if (init?.method === "POST" && String(input).endsWith("/v1/sessions") && dropped === 0) {
			dropped++;
			await res.text();
			throw new TypeError("connection reset after the request was sent");
		}
		return res;
	};
	const repo = new HttpSessionRepo({ ...alice, fetch: lossy });
	const before = (await repo.list()).length;
	const s = await repo.create({ cwd: "/retry" });
	assert.equal(dropped, 1);
	assert.equal((await repo.list()).length, before + 1);
	await repo.delete(await s.getMetadata());
});

test("another owner's session is not found", async () => {
	const repo = new HttpSessionRepo(alice);
	const s = await repo.create({ id: `owned-${Date.now()}` });
	const meta: SessionMetadata & { cwd: string } = await s.getMetadata();
	const other = new HttpSessionRepo(bob);
	await assert.rejects(other.open(meta), (e: SessionError) => e.code === "not_found");
	await assert.rejects(other.delete(meta), (e: SessionError) => e.code === "not_found");
	assert.deepEqual(await other.list(), []);
	const forged = new HttpSessionRepo({ baseUrl, token: "e30.e30.forged" });
	await assert.rejects(forged.list(), (e: SessionError) => e.code === "storage" && /401/.test(e.message));
	await repo.delete(meta);
});

test("503 and 408 are retried (after Retry-After); what stays unavailable is a storage error", async () => {
	const statuses: number[] = [];
	let failures = 2;
	const flaky: typeof fetch = async (input, init) => {
		if (init?.method === "POST" && String(input).endsWith("/entries") && failures > 0) {
			const status = failures-- === 2 ? 503 : 408;
			statuses.push(status);
			const code = status === 503 ? "unavailable" : "request_timeout";
			return new Response(JSON.stringify({ error: { code, message: "try again" } }), {
				status,
				headers: { "Content-Type": "application/json", "Retry-After": "0" },
			});
		}
		return fetch(input, init);
	};
	const repo = new HttpSessionRepo({ ...alice, fetch: flaky });
	const s = await repo.create({});
	await s.appendMessage(user("after two retries"));
	assert.deepEqual(statuses, [503, 408]);
	assert.equal((await s.getEntries()).length, 1);

	const down: typeof fetch = async () =>
		new Response("<html>bad gateway</html>", { status: 503, headers: { "Content-Type": "text/html", "Retry-After": "0" } });
	const unreachable = new HttpSessionRepo({ ...alice, fetch: down, retries: 1 });
	await assert.rejects(unreachable.list(), (e: SessionError) => e.code === "storage" && /503/.test(e.message));
	await repo.delete(await s.getMetadata());
});

test("a create of an existing id with other fields is a conflict", async () => {
	const repo = new HttpSessionRepo(alice);
	const id = `taken-${Date.now()}`;
	const s = await repo.create({ id, cwd: "/one" });
	await assert.rejects(repo.create({ id, cwd: "/two" }), (e: unknown) => e instanceof HttpConflictError && e.reason === "exists");
	const again = await repo.create({ id, cwd: "/one" });
	assert.equal((await again.getMetadata()).id, id);
	await repo.delete(await s.getMetadata());
});
