// Pi's session storage port over the transcript-serve HTTP API.
//
// HttpSessionStorage implements Pi's SessionStorage for one session: reads are
// answered from a cache of the session's entries (Pi's own InMemorySessionStorage,
// filled from the server when the session is opened), every append is sent to the
// server with the head this client last saw as expectedHead, and enters the cache
// only once the server committed it. HttpSessionRepo implements Pi's SessionRepo.
// Requests that fail on the network, or that the server answers 503 (the bucket is
// unreachable; after its Retry-After) or 408 (the body came too late), are retried:
// appends are idempotent by entry id, so a retry of an append whose response was
// lost commits nothing twice.
import {
	InMemorySessionStorage,
	Session,
	SessionError,
	type SessionCreateOptions,
	type SessionEntryCursorOptions,
	type SessionForkOptions,
	type SessionMetadata,
	type SessionRepo,
	type SessionStats,
	type SessionStorage,
	type SessionTreeEntry,
	uuidv7,
} from "@earendil-works/pi-agent-core";

/** Metadata of a session kept by transcript-serve. */
export interface HttpSessionMetadata extends SessionMetadata {
	/** Working directory recorded at creation ("" if none). */
	cwd: string;
	/** Latest session name, if any. */
	name?: string;
	/** Id of the session this one was forked from. */
	parentSession?: string;
}

/** Options of HttpSessionRepo.create. */
export interface HttpSessionCreateOptions extends SessionCreateOptions {
	name?: string;
	cwd?: string;
}

/** Connection options shared by the storage and the repository. */
export interface HttpClientOptions {
	/** Base URL of the server, e.g. "http://localhost:8080". */
	baseUrl: string;
	/** Bearer token, or a function returning a fresh one for each request. */
	token: string | (() => string | Promise<string>);
	/** fetch implementation (default: the global fetch). */
	fetch?: typeof fetch;
	/**
	 * How many times a request is retried (default 3) when it failed on the
	 * network, or the server answered 503 (the bucket is unreachable: after its
	 * Retry-After) or 408 (the body did not arrive in time). Retries are safe:
	 * appends are idempotent by entry id, and a create retried with its id and
	 * fields answers the session it created.
	 */
	retries?: number;
	/** The longest Retry-After honoured, in milliseconds (default 30000). */
	maxRetryAfterMs?: number;
	/** Entries read per page when a session is opened (default: the server's cap). */
	pageSize?: number;
}

/** A conflict: another writer committed first (stale_head), an entry id exists with other bytes (entry_conflict), or a create found the id taken with other fields (exists). */
export class HttpConflictError extends SessionError {
	/** The committed head, for a stale_head conflict. */
	readonly head: string | null | undefined;
	/** The server's reason: "stale_head", "entry_conflict" or "exists". */
	readonly reason: string;
	/** The entry at fault, for entry_conflict. */
	readonly entryId: string | undefined;
	constructor(reason: string, message: string, head: string | null | undefined, entryId?: string) {
		super("storage", message);
		this.reason = reason;
		this.head = head;
		this.entryId = entryId;
	}
}

interface ServerMetadata {
	id: string;
	createdAt: string;
	name?: string;
	cwd: string;
	parentSession?: string;
	head: string | null;
	entryCount: number;
}

/** The server's error envelope (openapi.yaml, Error). */
interface ErrorBody {
	error?: { code?: string; message?: string; head?: string | null; field?: string; entryId?: string; refersTo?: string; index?: number };
}

interface Response<T> {
	status: number;
	body: T;
}

/** Statuses a request is retried on: the bucket was unreachable, or the body came too late. */
const retriedStatuses = new Set([408, 503]);

/** The HTTP client of the API. */
class Api {
	private readonly fetch: typeof fetch;
	private readonly retries: number;
	private readonly maxRetryAfterMs: number;
	constructor(private readonly opts: HttpClientOptions) {
		this.fetch = opts.fetch ?? globalThis.fetch;
		this.retries = opts.retries ?? 3;
		this.maxRetryAfterMs = opts.maxRetryAfterMs ?? 30_000;
	}

	get pageSize(): number | undefined {
		return this.opts.pageSize;
	}

	/**
	 * Sends a request, retrying network failures, 503 (after Retry-After) and 408;
	 * returns the status and the JSON body (undefined for none, or for a body that
	 * is not JSON, such as a proxy's error page).
	 */
	async request<T>(method: string, path: string, body?: unknown): Promise<Response<T> & { attempts: number }> {
		const url = this.opts.baseUrl.replace(/\/+$/, "") + path;
		let lastError: unknown;
		for (let attempt = 0; attempt <= this.retries; attempt++) {
			const token = typeof this.opts.token === "function" ? await this.opts.token() : this.opts.token;
			let res: globalThis.Response;
			try {
				res = await this.fetch(url, {
					method,
					headers: {
						Authorization: `Bearer ${token}`,
						...(body === undefined ? {} : { "Content-Type": "application/json" }),
					},
					body: body === undefined ? undefined : JSON.stringify(body),
				});
			} catch (error) {
				lastError = error;
				continue;
			}
			const text = await res.text();
			const out = { status: res.status, body: parseJSON(text) as T, attempts: attempt + 1 };
			if (!retriedStatuses.has(res.status) || attempt === this.retries) return out;
			await sleep(res.status === 503 ? this.retryAfterMs(res.headers.get("Retry-After")) : 0);
		}
		throw new SessionError("storage", `${method} ${path}: ${String(lastError)}`, lastError instanceof Error ? lastError : undefined);
	}

	/** The wait a Retry-After header asks for (seconds; 1 s when absent or not a number), capped. */
	private retryAfterMs(header: string | null): number {
		const seconds = header === null ? NaN : Number(header);
		return Math.min(Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : 1000, this.maxRetryAfterMs);
	}
}

function parseJSON(text: string): unknown {
	if (!text) return undefined;
	try {
		return JSON.parse(text);
	} catch {
		return undefined;
	}
}

function sleep(ms: number): Promise<void> {
	return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Maps an error response to Pi's SessionError. */
function toSessionError(what: string, res: Response<unknown>): SessionError {
	const e = (res.body as ErrorBody | undefined)?.error;
	const reason = e?.code ?? "unknown";
	const message = `${what}: ${res.status} ${reason}: ${e?.message ?? ""}`;
	switch (reason) {
		case "not_found":
			return new SessionError("not_found", message);
		case "stale_head":
		case "entry_conflict":
		case "exists":
			return new HttpConflictError(reason, message, e?.head, e?.entryId);
		case "invalid_entry":
		case "unknown_parent":
			return new SessionError("invalid_entry", message);
		case "invalid_fork_target":
			return new SessionError("invalid_fork_target", message);
		case "invalid_session":
			return new SessionError("invalid_session", message);
		default:
			// unavailable and request_timeout after the retries, timeout, storage,
			// unauthorized, and the request errors (invalid_request, too_large,
			// unsupported_media_type, unknown_route, method_not_allowed).
			return new SessionError("storage", message);
	}
}

function metadataOf(m: ServerMetadata): HttpSessionMetadata {
	const out: HttpSessionMetadata = { id: m.id, createdAt: m.createdAt, cwd: m.cwd };
	if (m.name) out.name = m.name;
	if (m.parentSession) out.parentSession = m.parentSession;
	return out;
}

/** An entry as the server stores it: its JSON (undefined fields dropped). */
function normalize(entry: SessionTreeEntry): SessionTreeEntry {
	return JSON.parse(JSON.stringify(entry)) as SessionTreeEntry;
}

function randomEntryId(): string {
	return crypto.randomUUID().replaceAll("-", "").slice(-8);
}

/** Pi's SessionStorage for one session kept by transcript-serve. */
export class HttpSessionStorage implements SessionStorage<HttpSessionMetadata> {
	private cache: InMemorySessionStorage;
	private head: string | null;

	private constructor(
		private readonly api: Api,
		private readonly metadata: HttpSessionMetadata,
		entries: SessionTreeEntry[],
		head: string | null,
	) {
		this.cache = new InMemorySessionStorage({ metadata, entries });
		this.head = head;
	}

	/** Opens session id: reads its metadata and every entry. */
	static async open(options: HttpClientOptions, id: string): Promise<HttpSessionStorage> {
		return HttpSessionStorage.load(new Api(options), id);
	}

	/** @internal */
	static async load(api: Api, id: string): Promise<HttpSessionStorage> {
		const path = `/v1/sessions/${encodeURIComponent(id)}`;
		const meta = await api.request<ServerMetadata>("GET", path);
		if (meta.status !== 200) throw toSessionError(`open session ${id}`, meta);
		const entries: SessionTreeEntry[] = [];
		let head: string | null = null;
		for (let after = 0; ; ) {
			const q = `after=${after}` + (api.pageSize ? `&limit=${api.pageSize}` : "");
			const page = await api.request<{ entries: SessionTreeEntry[]; nextSeq: number; head: string | null }>(
				"GET",
				`${path}/entries?${q}`,
			);
			if (page.status !== 200) throw toSessionError(`read session ${id}`, page);
			entries.push(...page.body.entries);
			head = page.body.head;
			if (page.body.entries.length === 0) break;
			after = page.body.nextSeq;
		}
		return new HttpSessionStorage(api, metadataOf(meta.body), entries, head);
	}

	/** The committed head this client last saw (the expectedHead of its next append). */
	getHead(): string | null {
		return this.head;
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
	 * between gives an HttpConflictError (reason "stale_head"); reopen the session
	 * to continue from the new head.
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
		await this.cache.appendEntry(stored);
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
		const id = this.metadata.id;
		const out: SessionTreeEntry[] = [];
		let after = options?.afterEntrySeq ?? 0;
		for (;;) {
			const want = options?.limit === undefined ? undefined : options.limit - out.length;
			if (want !== undefined && want <= 0) return out;
			const q = `after=${after}` + (want !== undefined ? `&limit=${want}` : "");
			const page = await this.api.request<{ entries: SessionTreeEntry[]; nextSeq: number }>(
				"GET",
				`/v1/sessions/${encodeURIComponent(id)}/entries?${q}`,
			);
			if (page.status !== 200) throw toSessionError(`read session ${id}`, page);
			if (page.body.entries.length === 0) return out;
			out.push(...page.body.entries);
			after = page.body.nextSeq;
		}
	}
}

/** Pi's SessionRepo over transcript-serve: the sessions of the token's owner. */
export class HttpSessionRepo implements SessionRepo<HttpSessionMetadata, HttpSessionCreateOptions> {
	private readonly api: Api;
	constructor(options: HttpClientOptions) {
		this.api = new Api(options);
	}

	/** Creates a session (strict: appends carry an expected head). */
	async create(options: HttpSessionCreateOptions = {}): Promise<Session<HttpSessionMetadata>> {
		// The id is chosen here (a UUIDv7, as Pi's repositories do), so that a
		// create retried after a lost response answers the session it created (200)
		// instead of creating a second one.
		const res = await this.api.request<ServerMetadata>("POST", "/v1/sessions", {
			id: options.id ?? uuidv7(),
			name: options.name,
			cwd: options.cwd,
		});
		if (res.status !== 201 && res.status !== 200) throw toSessionError("create session", res);
		return new Session(await HttpSessionStorage.load(this.api, res.body.id));
	}

	async open(metadata: HttpSessionMetadata): Promise<Session<HttpSessionMetadata>> {
		return new Session(await HttpSessionStorage.load(this.api, metadata.id));
	}

	async list(): Promise<HttpSessionMetadata[]> {
		const res = await this.api.request<{ sessions: ServerMetadata[] }>("GET", "/v1/sessions");
		if (res.status !== 200) throw toSessionError("list sessions", res);
		return res.body.sessions.map(metadataOf);
	}

	async delete(metadata: HttpSessionMetadata): Promise<void> {
		const res = await this.api.request("DELETE", `/v1/sessions/${encodeURIComponent(metadata.id)}`);
		// A 404 after a retry is the first attempt's success.
		if (res.status === 204 || (res.status === 404 && res.attempts > 1)) return;
		throw toSessionError(`delete session ${metadata.id}`, res);
	}

	/**
	 * Forks source as Pi does: at entryId ("at"), or before the user message
	 * entryId ("before", the default), or at the source's leaf without entryId.
	 * The fork holds the path from the root to that entry, and names the source
	 * as parentSession. The server chooses the new session's id (options.id is
	 * not supported), and a fork without entryId copies the active branch only,
	 * not the source's other branches.
	 */
	async fork(source: HttpSessionMetadata, options: SessionForkOptions & HttpSessionCreateOptions): Promise<Session<HttpSessionMetadata>> {
		const src = await HttpSessionStorage.load(this.api, source.id);
		let at: string | null;
		if (!options.entryId) {
			at = await src.getLeafId();
		} else {
			const target = await src.getEntry(options.entryId);
			if (!target) throw new SessionError("invalid_fork_target", `Entry ${options.entryId} not found`);
			if ((options.position ?? "before") === "at") {
				at = target.id;
			} else {
				if (target.type !== "message" || target.message.role !== "user") {
					throw new SessionError("invalid_fork_target", `Entry ${options.entryId} is not a user message`);
				}
				at = target.parentId;
			}
		}
		if (at === null) return this.create({ cwd: options.cwd ?? source.cwd, name: options.name });
		const res = await this.api.request<ServerMetadata>("POST", `/v1/sessions/${encodeURIComponent(source.id)}/fork`, {
			entryId: at,
		});
		if (res.status !== 201) throw toSessionError(`fork session ${source.id}`, res);
		return new Session(await HttpSessionStorage.load(this.api, res.body.id));
	}
}
