// Pi's SessionRepo over transcript-serve.
import {
	Session,
	SessionError,
	type SessionCreateOptions,
	type SessionForkOptions,
	type SessionRepo,
	uuidv7,
} from "@earendil-works/pi-agent-core";
import { Api, type HttpClientOptions } from "./api.js";
import { toSessionError } from "./errors.js";
import { HttpSessionStorage, type HttpSessionMetadata, metadataOf, type ServerMetadata } from "./storage.js";

/** Options of HttpSessionRepo.create (and of a fork's new session). */
export interface HttpSessionCreateOptions extends SessionCreateOptions {
	name?: string;
	cwd?: string;
}

/** Options of HttpSessionRepo.list. */
export interface HttpSessionListOptions {
	/** Only the sessions created with this working directory. */
	cwd?: string;
}

/** The server's largest page of sessions. */
const listPageSize = 1000;

/** Pi's SessionRepo over transcript-serve: the sessions of the token's owner. */
export class HttpSessionRepo implements SessionRepo<HttpSessionMetadata, HttpSessionCreateOptions, HttpSessionListOptions> {
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

	/** Lists the owner's sessions (those of options.cwd only, when set), in id order, a page of the server's at a time. */
	async list(options: HttpSessionListOptions = {}): Promise<HttpSessionMetadata[]> {
		const out: HttpSessionMetadata[] = [];
		for (let after: string | undefined; ; ) {
			const q = new URLSearchParams({ limit: String(listPageSize) });
			if (options.cwd !== undefined) q.set("cwd", options.cwd);
			if (after !== undefined) q.set("after", after);
			const res = await this.api.request<{ sessions: ServerMetadata[]; next?: string }>("GET", `/v1/sessions?${q}`);
			if (res.status !== 200) throw toSessionError("list sessions", res);
			out.push(...res.body.sessions.map(metadataOf));
			if (!res.body.next) return out;
			after = res.body.next;
		}
	}

	async delete(metadata: HttpSessionMetadata): Promise<void> {
		const res = await this.api.request("DELETE", `/v1/sessions/${encodeURIComponent(metadata.id)}`);
		// A 404 after a retry is the first attempt's success.
		if (res.status === 204 || (res.status === 404 && res.attempts > 1)) return;
		throw toSessionError(`delete session ${metadata.id}`, res);
	}

	/**
	 * Forks source as Pi does: at entryId ("at"), or before the user message
	 * entryId ("before", the default: before the first user message the fork is
	 * empty, and still names its source), or, without entryId, with every entry
	 * of the source. The new session takes options.id (an HttpConflictError
	 * "exists" when it is taken) and options.cwd (default: the source's), and
	 * names the source as parentSession.
	 */
	async fork(source: HttpSessionMetadata, options: SessionForkOptions & HttpSessionCreateOptions): Promise<Session<HttpSessionMetadata>> {
		let entryId: string | null | undefined;
		if (options.entryId) {
			const src = await HttpSessionStorage.load(this.api, source.id);
			const target = await src.getEntry(options.entryId);
			if (!target) throw new SessionError("invalid_fork_target", `Entry ${options.entryId} not found`);
			if ((options.position ?? "before") === "at") {
				entryId = target.id;
			} else {
				if (target.type !== "message" || target.message.role !== "user") {
					throw new SessionError("invalid_fork_target", `Entry ${options.entryId} is not a user message`);
				}
				entryId = target.parentId;
			}
		}
		// The id is chosen here, as for create, so that a fork retried after a lost
		// response finds its own session (409 exists) rather than forking twice.
		const id = options.id ?? uuidv7();
		const res = await this.api.request<ServerMetadata>("POST", `/v1/sessions/${encodeURIComponent(source.id)}/fork`, {
			...(entryId === undefined ? {} : { entryId }),
			id,
			cwd: options.cwd,
		});
		if (res.status !== 201 && !(res.status === 409 && res.attempts > 1)) throw toSessionError(`fork session ${source.id}`, res);
		return new Session(await HttpSessionStorage.load(this.api, id));
	}
}
