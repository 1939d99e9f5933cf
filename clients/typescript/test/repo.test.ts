// Pi's repository contract on transcript-serve: a fork takes the id the client
// asks for, an empty fork keeps its parentSession, and list reports and filters
// by cwd, each compared with Pi's own in-memory repository where it has the
// same notion.
import assert from "node:assert/strict";
import { test } from "node:test";
import { InMemorySessionRepo, SessionError } from "@earendil-works/pi-agent-core";
import { HttpConflictError, HttpSessionRepo, type HttpClientOptions } from "../src/index.js";

const baseUrl = process.env.TRANSCRIPT_SERVE_URL ?? "";
const alice: HttpClientOptions = { baseUrl, token: process.env.TRANSCRIPT_TOKEN_ALICE ?? "" };
if (!baseUrl) throw new Error("TRANSCRIPT_SERVE_URL is not set: run these tests with npm test");

const user = (text: string) => ({ role: "user", content: text, timestamp: 1 }) as any;
const unique = (prefix: string) => `${prefix}-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;

test("a fork takes the id the client asks for; an id that exists is a conflict", async () => {
	const repo = new HttpSessionRepo(alice);
	const memRepo = new InMemorySessionRepo();
	const src = await repo.create({ cwd: "/fork-id" });
	const mem = await memRepo.create({});
	for (const s of [src, mem]) await s.appendMessage(user("hello"));
	const meta = await src.getMetadata();
	const id = unique("fork");
	const fork = await repo.fork(meta, { id });
	const memFork = await memRepo.fork(await mem.getMetadata(), { id });
	assert.equal((await fork.getMetadata()).id, id);
	assert.equal((await memFork.getMetadata()).id, id, "Pi's own repository takes the id too");
	assert.equal((await fork.getMetadata()).parentSession, meta.id);
	assert.equal((await fork.getMetadata()).cwd, "/fork-id", "the source's cwd by default");
	assert.equal((await fork.getEntries()).length, 1);
	const reopened = await repo.open(await fork.getMetadata());
	assert.equal((await reopened.getMetadata()).id, id);

	await assert.rejects(repo.fork(meta, { id }), (e: unknown) => e instanceof HttpConflictError && e.reason === "exists");
	await assert.rejects(repo.fork(meta, { id: "not a valid id/" }), (e: SessionError) => e.code === "storage" && /400/.test(e.message));
	const elsewhere = await repo.fork(meta, { id: unique("fork"), cwd: "/elsewhere" });
	assert.equal((await elsewhere.getMetadata()).cwd, "/elsewhere");
	for (const m of [meta, await fork.getMetadata(), await elsewhere.getMetadata()]) await repo.delete(m);
});

test("an empty fork (before the first user message) keeps parentSession", async () => {
	const repo = new HttpSessionRepo(alice);
	const memRepo = new InMemorySessionRepo();
	const src = await repo.create({ cwd: "/empty-fork" });
	const mem = await memRepo.create({});
	const first: string[] = [];
	for (const s of [src, mem]) {
		await s.appendModelChange("anthropic", "claude-test");
		first.push(await s.appendMessage(user("first")));
		await s.appendMessage(user("second"));
	}
	const meta = await src.getMetadata();
	const fork = await repo.fork(meta, { entryId: first[0], position: "before" });
	const memFork = await memRepo.fork(await mem.getMetadata(), { entryId: first[1], position: "before" });
	// Pi's fork before the first user message holds what precedes it: here the
	// model change, on both sides.
	assert.deepEqual(
		(await fork.getEntries()).map((e) => e.type),
		(await memFork.getEntries()).map((e) => e.type),
	);
	const forkMeta = await fork.getMetadata();
	assert.equal(forkMeta.parentSession, meta.id);

	// A fork with nothing at all: the source's first entry is the user message.
	const bare = await repo.create({ cwd: "/empty-fork" });
	const bareFirst = await bare.appendMessage(user("only"));
	const bareMeta = await bare.getMetadata();
	const empty = await repo.fork(bareMeta, { entryId: bareFirst, position: "before" });
	assert.deepEqual(await empty.getEntries(), []);
	assert.equal(await empty.getLeafId(), null);
	const emptyMeta = await empty.getMetadata();
	assert.equal(emptyMeta.parentSession, bareMeta.id, "the empty fork names its source");
	const reopened = await repo.open(emptyMeta);
	assert.equal((await reopened.getMetadata()).parentSession, bareMeta.id, "as the bucket holds it");
	const listed = (await repo.list({ cwd: "/empty-fork" })).find((m) => m.id === emptyMeta.id);
	assert.equal(listed?.parentSession, bareMeta.id, "and as the list reports it");
	// The empty fork takes appends like any session.
	await reopened.appendMessage(user("in the fork"));
	assert.equal((await reopened.getEntries()).length, 1);
	for (const m of [meta, forkMeta, bareMeta, emptyMeta]) await repo.delete(m);
});

test("list reports each session's cwd and filters by it", async () => {
	const repo = new HttpSessionRepo(alice);
	const a = unique("/proj-a");
	const b = unique("/proj-b");
	const made = [];
	for (const cwd of [a, b, a, "", a]) made.push(await (await repo.create({ cwd })).getMetadata());
	const all = await repo.list();
	for (const m of made) {
		assert.equal(all.find((x) => x.id === m.id)?.cwd, m.cwd, `list reports the cwd of ${m.id}`);
	}
	const inA = await repo.list({ cwd: a });
	assert.deepEqual(
		inA.map((m) => m.id),
		made.filter((m) => m.cwd === a).map((m) => m.id).sort(),
		"only the sessions of the cwd, in id order",
	);
	assert.ok(inA.every((m) => m.cwd === a));
	assert.deepEqual((await repo.list({ cwd: b })).map((m) => m.id), [made[1].id]);
	assert.deepEqual(await repo.list({ cwd: unique("/nowhere") }), []);
	for (const m of made) await repo.delete(m);
});
