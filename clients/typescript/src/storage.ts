// Pi's SessionStorage for one session kept by transcript-serve.
import {
	InMemorySessionStorage,
	SessionError,
	type SessionEntryCursorOptions,
	type SessionMetadata,
	type SessionStats,
	type SessionStorage,
	type SessionTreeEntry,
} from "@earendil-works/pi-agent-core";
import { Api, parseJSON, sleep } from "./api.js";
import { toSessionError } from "./errors.js";
import { readEvents } from "./sse.js";

/** Metadata of a session kept by transcript-serve. */
export interface HttpSessionMetadata extends SessionMetadata {
	/** Working directory recorded at creation ("" if none). */
	cwd: string;
	/** Latest session name, if any. */
	name?: string;
	/** Id of the session this one was forked from. */
	parentSession?: string;
}

/** The session metadata the server answers (openapi.yaml, SessionMetadata). */
export interface ServerMetadata {
	id: string;
	createdAt: string;
	name?: string;
	cwd: string;
	parentSession?: string;
	head: string | null;
	entryCount: number;
	/** Set only for a strict session the bucket holds damaged: why (its appends are refused). */
	damaged?: string;
}

export function metadataOf(m: ServerMetadata): HttpSessionMetadata {
	const out: HttpSessionMetadata = { id: m.id, createdAt: m.createdAt, cwd: m.cwd };
	if (m.name) out.name = m.name;
	if (m.parentSession) out.parentSession = m.parentSession;
	return out;
}

/** A committed entry delivered by watch. */
export interface WatchedEntry {
	/** The entry's sequence number in the session (its commit order in a strict session), from 1. */
	seq: number;
	entry: SessionTreeEntry;
}

/** Options of HttpSessionStorage.watch. */
export interface WatchOptions {
	/**
	 * The sequence number to watch after (default: the entries this storage has
	 * read from the server, so that watch delivers what it has not seen).
	 */
	after?: number;
	/** Ends the watch: the iterator returns. */
	signal?: AbortSignal;
}

/** What load asks the open to answer with the metadata: more than any server's page size, so a full page. */
const FIRST_PAGE = 1 << 20;

interface Page {
	entries: SessionTreeEntry[];
	nextSeq: number;
	entryCount: number;
	head: string | null;
	/** Set only when the session is damaged (as in ServerMetadata): the page lacks committed entries. */
	damaged?: string;
}

/** An entry as the server stores it: its JSON (undefined fields dropped). */
function normalize(entry: SessionTreeEntry): SessionTreeEntry {
	return JSON.parse(JSON.stringify(entry)) as SessionTreeEntry;
}

function randomEntryId(): string {
	return crypto.randomUUID().replaceAll("-", "").slice(-8);
}

/**
 * Pi's SessionStorage for one session kept by transcript-serve. Reads are
 * answered from a cache of the session's entries (Pi's own InMemorySessionStorage,
 * filled from the server when the session is opened, and kept current by watch),
 * every append is sent to the server with the head this client last saw as
 * expectedHead, and enters the cache only once the server committed it.
 */
export class HttpSessionStorage implements SessionStorage<HttpSessionMetadata> {
	private cache: InMemorySessionStorage;
	private head: string | null;
	/** How many entries of the session's sequence this storage has read (pages and watch). */
	private seq: number;
	/** Why the server last said the session is damaged (undefined: whole). */
	private damaged: string | undefined;

	private constructor(
		private readonly api: Api,
		private readonly metadata: HttpSessionMetadata,
		entries: SessionTreeEntry[],
		head: string | null,
		seq: number,
		damaged: string | undefined,
	) {
		this.cache = new InMemorySessionStorage({ metadata, entries });
		this.head = head;
		this.seq = seq;
		this.damaged = damaged;
	}

	/** Opens session id: reads its metadata and every entry. */
	static async open(options: ConstructorParameters<typeof Api>[0], id: string): Promise<HttpSessionStorage> {
		return HttpSessionStorage.load(new Api(options), id);
	}

	/** @internal */
	static async load(api: Api, id: string): Promise<HttpSessionStorage> {
		// The open answers the first page too (?entries=N, capped by the server's page size).
		const path = `/v1/sessions/${encodeURIComponent(id)}?entries=${api.pageSize ?? FIRST_PAGE}`;
		const meta = await api.request<ServerMetadata & { page?: Page }>("GET", path);
		if (meta.status !== 200) throw toSessionError(`open session ${id}`, meta);
		const entries: SessionTreeEntry[] = [];
		let head: string | null = meta.body.head;
		let damaged = meta.body.damaged;
		let seq = 0;
		let page = meta.body.page;
		for (;;) {
			page ??= await readPage(api, id, seq, api.pageSize);
			entries.push(...page.entries);
			head = page.head;
			damaged = page.damaged;
			if (page.entries.length === 0) break;
			seq = page.nextSeq;
			if (readToEnd(page)) break;
			page = undefined;
		}
		return new HttpSessionStorage(api, metadataOf(meta.body), entries, head, seq, damaged);
	}

	/** The committed head this client last saw (the expectedHead of its next append). */
	getHead(): string | null {
		return this.head;
	}

	/**
	 * Why the server last said the session is damaged (its metadata, a page or a
	 * watch event "damaged": a strict session whose committed entries the bucket
	 * lacks in part, whose appends are refused), or undefined while it says the
	 * session is whole. What this storage read of a damaged session is what the
	 * bucket holds, not the whole session.
	 */
	getDamaged(): string | undefined {
		return this.damaged;
	}

	/** How many entries of the session's sequence this storage has read: where watch resumes. */
	getSeq(): number {
		return this.seq;
	}

	async getMetadata(): Promise<HttpSessionMetadata> {
		return this.metadata;
	}

	getLeafId(): Promise<string | null> {
		return this.cache.getLeafId();
	}

	async setLeafId(leafId: string | null): Promise<void> {
		if (leafId !== null && !(await this.cache.getEntry(leafId))) {
			throw new SessionError("not_found", `Entry ${leafId} not found`);
		}
		await this.appendEntry({
			type: "leaf",
			id: await this.freshId(),
			parentId: await this.cache.getLeafId(),
			timestamp: new Date().toISOString(),
			targetId: leafId,
		});
	}

	createEntryId(): Promise<string> {
		return this.freshId();
	}

	/** An 8-hex-digit id not used in the session (a UUID after 100 collisions). */
	private async freshId(): Promise<string> {
		for (let i = 0; i < 100; i++) {
			const id = randomEntryId();
			if (!(await this.cache.getEntry(id))) return id;
		}
		return crypto.randomUUID();
	}

	/**
	 * Commits entry at the head this client saw. Another writer's commit in
	 * between gives an HttpConflictError (reason "stale_head"); watch (or reopen
	 * the session) to continue from the new head.
	 */
	async appendEntry(entry: SessionTreeEntry): Promise<void> {
		const stored = normalize(entry);
		const id = this.metadata.id;
		const res = await this.api.request<{ head: string | null }>("POST", `/v1/sessions/${encodeURIComponent(id)}/entries`, {
			expectedHead: this.head,
			entries: [stored],
		});
		if (res.status !== 200) throw toSessionError(`append to session ${id}`, res);
		this.head = res.body.head;
		if (!(await this.cache.getEntry(stored.id))) await this.cache.appendEntry(stored);
	}

	/**
	 * Watches the session: yields every committed entry after options.after (by
	 * default, after those this storage has read), in sequence order, the
	 * entries this client appended included, as other writers and this one
	 * commit them, until options.signal aborts. Entries new to the storage enter
	 * its cache (and move the head an append expects), so the session stays
	 * current. A connection that ends is resumed where it ended (Last-Event-ID),
	 * so no entry is missed or delivered twice; when the server says the
	 * session's order changed ("reset": a default-mode session), the storage
	 * reads the session again and yields what it had not seen. When the server
	 * says the session is damaged (an event "damaged"), getDamaged says why. A deleted session
	 * ends the watch with a SessionError "not_found"; so many failed connections
	 * in a row (HttpClientOptions.retries) with a "storage" one.
	 */
	async *watch(options: WatchOptions = {}): AsyncGenerator<WatchedEntry> {
		const id = this.metadata.id;
		const path = `/v1/sessions/${encodeURIComponent(id)}/events`;
		let after = options.after ?? this.seq;
		let retryMs = 1000;
		for (let failures = 0; !options.signal?.aborted; ) {
			let res: globalThis.Response;
			try {
				res = await this.api.send("GET", path, { Accept: "text/event-stream", "Last-Event-ID": String(after) }, undefined, options.signal);
			} catch (error) {
				if (options.signal?.aborted) return;
				if (++failures > this.api.retries) throw new SessionError("storage", `watch session ${id}: ${String(error)}`);
				await sleep(retryMs, options.signal);
				continue;
			}
			if (res.status !== 200) {
				const err = toSessionError(`watch session ${id}`, { status: res.status, body: parseJSON(await res.text()) });
				if (![429, 503].includes(res.status) || ++failures > this.api.retries) throw err;
				await sleep(this.api.retryAfterMs(res.headers.get("Retry-After")), options.signal);
				continue;
			}
			try {
				for await (const ev of readEvents(res.body!, (ms) => (retryMs = ms))) {
					failures = 0;
					if (ev.event === "error") throw toSessionError(`watch session ${id}`, { status: 404, body: parseJSON(ev.data) });
					if (ev.event === "damaged") {
						this.damaged = (parseJSON(ev.data) as { damaged?: string } | undefined)?.damaged ?? "damaged";
						continue;
					}
					if (ev.event === "reset") {
						for (const w of await this.reread()) yield w;
						after = this.seq;
						break;
					}
					if (ev.event !== "message") continue;
					const seq = Number(ev.id);
					if (!(seq > after)) continue;
					const entry = JSON.parse(ev.data) as SessionTreeEntry;
					await this.take(entry);
					after = seq;
					this.seq = Math.max(this.seq, seq);
					yield { seq, entry };
				}
			} catch (error) {
				if (options.signal?.aborted) return;
				if (error instanceof SessionError) throw error;
				if (++failures > this.api.retries) throw new SessionError("storage", `watch session ${id}: ${String(error)}`);
			}
			await sleep(retryMs, options.signal);
		}
	}

	/** Adds a committed entry to the cache unless it is there; the head follows it. */
	private async take(entry: SessionTreeEntry): Promise<void> {
		if (await this.cache.getEntry(entry.id)) return;
		await this.cache.appendEntry(entry);
		this.head = await this.cache.getLeafId();
	}

	/** Reads the session's sequence again (after a reset) and takes the entries the cache lacks. */
	private async reread(): Promise<WatchedEntry[]> {
		const out: WatchedEntry[] = [];
		for (let seq = 0; ; ) {
			const page = await readPage(this.api, this.metadata.id, seq, this.api.pageSize);
			this.damaged = page.damaged;
			if (page.entries.length === 0) {
				this.seq = page.entryCount;
				this.head = page.head;
				return out;
			}
			for (const [i, entry] of page.entries.entries()) {
				if (await this.cache.getEntry(entry.id)) continue;
				await this.cache.appendEntry(entry);
				out.push({ seq: seq + i + 1, entry });
			}
			seq = page.nextSeq;
			if (readToEnd(page)) {
				this.seq = page.nextSeq;
				this.head = page.head;
				return out;
			}
		}
	}

	getEntry(id: string): Promise<SessionTreeEntry | undefined> {
		return this.cache.getEntry(id);
	}

	findEntries<TType extends SessionTreeEntry["type"]>(type: TType): Promise<Array<Extract<SessionTreeEntry, { type: TType }>>> {
		return this.cache.findEntries(type);
	}

	getLabel(id: string): Promise<string | undefined> {
		return this.cache.getLabel(id);
	}

	getSessionName(): Promise<string | undefined> {
		return this.cache.getSessionName();
	}

	getSessionStats(): Promise<SessionStats> {
		return this.cache.getSessionStats();
	}

	getPathToRootOrCompaction(leafId: string | null): Promise<SessionTreeEntry[]> {
		return this.cache.getPathToRootOrCompaction(leafId);
	}

	/** Reads entries from the server: afterEntrySeq skips that many, limit bounds the rest. */
	async getEntries(options?: SessionEntryCursorOptions): Promise<SessionTreeEntry[]> {
		const out: SessionTreeEntry[] = [];
		let after = options?.afterEntrySeq ?? 0;
		for (;;) {
			const want = options?.limit === undefined ? undefined : options.limit - out.length;
			if (want !== undefined && want <= 0) return out;
			const page = await readPage(this.api, this.metadata.id, after, want);
			this.damaged = page.damaged;
			if (page.entries.length === 0) return out;
			out.push(...page.entries);
			after = page.nextSeq;
			if (readToEnd(page)) return out;
		}
	}
}

/**
 * Whether a page that holds entries ends the session as the server held it when it answered: its
 * nextSeq reaches its entryCount. The server answers a page that reaches the end of what it holds
 * with what the bucket holds, so an empty page requested next would say the same a round trip later.
 */
function readToEnd(page: Page): boolean {
	return page.entries.length > 0 && page.nextSeq >= page.entryCount;
}

/** Reads the page of session id after sequence number after (at most limit entries, when set). */
async function readPage(api: Api, id: string, after: number, limit?: number): Promise<Page> {
	const q = `after=${after}` + (limit !== undefined ? `&limit=${limit}` : "");
	const page = await api.request<Page>("GET", `/v1/sessions/${encodeURIComponent(id)}/entries?${q}`);
	if (page.status !== 200) throw toSessionError(`read session ${id}`, page);
	return page.body;
}
