// The HTTP client of the transcript-serve API.
import { SessionError } from "@earendil-works/pi-agent-core";

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
	 * fields answers the session it created. A watch reconnects as many times in
	 * a row before it gives up.
	 */
	retries?: number;
	/** The longest Retry-After honoured, in milliseconds (default 30000). */
	maxRetryAfterMs?: number;
	/** Entries read per page when a session is opened (default: the server's cap). */
	pageSize?: number;
}

/** A response: its status and JSON body (undefined for none or for one that is not JSON). */
export interface Response<T> {
	status: number;
	body: T;
}

/** Statuses a request is retried on: the bucket was unreachable, or the body came too late. */
const retriedStatuses = new Set([408, 503]);

/** The HTTP client of the API. */
export class Api {
	private readonly fetch: typeof fetch;
	readonly retries: number;
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
		let lastError: unknown;
		for (let attempt = 0; attempt <= this.retries; attempt++) {
			let res: globalThis.Response;
			try {
				res = await this.send(method, path, {
					...(body === undefined ? {} : { "Content-Type": "application/json" }),
				}, body === undefined ? undefined : JSON.stringify(body));
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

	/** Sends one request with the bearer token and headers; the response's body is the caller's to read. */
	async send(method: string, path: string, headers: Record<string, string>, body?: string, signal?: AbortSignal): Promise<globalThis.Response> {
		const url = this.opts.baseUrl.replace(/\/+$/, "") + path;
		const token = typeof this.opts.token === "function" ? await this.opts.token() : this.opts.token;
		return this.fetch(url, { method, headers: { Authorization: `Bearer ${token}`, ...headers }, body, signal });
	}

	/** The wait a Retry-After header asks for (seconds; 1 s when absent or not a number), capped. */
	retryAfterMs(header: string | null): number {
		const seconds = header === null ? NaN : Number(header);
		return Math.min(Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : 1000, this.maxRetryAfterMs);
	}
}

export function parseJSON(text: string): unknown {
	if (!text) return undefined;
	try {
		return JSON.parse(text);
	} catch {
		return undefined;
	}
}

/** Waits ms milliseconds, or until signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
	return new Promise((resolve) => {
		if (signal?.aborted) return resolve();
		const timer = setTimeout(done, ms);
		function done() {
			clearTimeout(timer);
			signal?.removeEventListener("abort", done);
			resolve();
		}
		signal?.addEventListener("abort", done, { once: true });
	});
}
