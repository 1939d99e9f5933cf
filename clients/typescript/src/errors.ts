// The server's error codes and what each is to Pi.
import { SessionError, type SessionErrorCode } from "@earendil-works/pi-agent-core";

/**
 * Every error code transcript-serve answers with (openapi.yaml, Error.code; the
 * server's constants, server.ErrorCodes: a Go test checks that the three name
 * the same codes) and the SessionError code it maps to.
 */
export const serverErrorCodes = {
	unauthorized: "storage",
	not_found: "not_found",
	unknown_route: "storage",
	method_not_allowed: "storage",
	request_timeout: "storage",
	stale_head: "storage",
	entry_conflict: "storage",
	exists: "storage",
	invalid_request: "storage",
	invalid_entry: "invalid_entry",
	unsupported_media_type: "storage",
	too_large: "storage",
	unknown_parent: "invalid_entry",
	too_many_streams: "storage",
	invalid_fork_target: "invalid_fork_target",
	invalid_session: "invalid_session",
	storage: "storage",
	unavailable: "storage",
	not_ready: "storage",
	timeout: "storage",
} as const satisfies Record<string, SessionErrorCode>;

/** An error code of the server. */
export type ServerErrorCode = keyof typeof serverErrorCodes;

/** Conflicts, raised as HttpConflictError: another writer committed first, an entry id exists with other bytes, a session id is taken. */
const conflicts: ReadonlySet<string> = new Set<ServerErrorCode>(["stale_head", "entry_conflict", "exists"]);

/** A conflict: another writer committed first (stale_head), an entry id exists with other bytes (entry_conflict), or a create or fork found the id taken (exists). */
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

/** The server's error envelope (openapi.yaml, Error). */
export interface ErrorBody {
	error?: { code?: string; message?: string; head?: string | null; field?: string; entryId?: string; refersTo?: string; index?: number };
}

/** Maps an error response (status and body) to Pi's SessionError. */
export function toSessionError(what: string, res: { status: number; body: unknown }): SessionError {
	const e = (res.body as ErrorBody | undefined)?.error;
	const reason = e?.code ?? "unknown";
	const message = `${what}: ${res.status} ${reason}: ${e?.message ?? ""}`;
	if (conflicts.has(reason)) return new HttpConflictError(reason, message, e?.head, e?.entryId);
	const code: SessionErrorCode = Object.hasOwn(serverErrorCodes, reason) ? serverErrorCodes[reason as ServerErrorCode] : "storage";
	return new SessionError(code, message);
}
