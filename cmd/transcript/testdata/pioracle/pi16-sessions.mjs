// Pi 1.6's own SessionManager, and seeded random sessions written through it,
// for the tests that take Pi 1.6 as their oracle (pi16.mjs is their command
// line). Import it from another harness to drive Pi 1.6:
//
//   import { SessionManager, prng, SessionOps, writeSession } from "./pi16-sessions.mjs";
//
// The package's exports map needs Node 22; its session-manager.js runs on Node
// 20 too, so it is imported by its file.
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export { prng } from "./prng.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const sessionManagerFile = join(here, "node_modules", "@earendil-works", "pi-coding-agent", "dist", "core", "session-manager.js");

/** pi-ai's getCurrentSystemMessage: the system message a compaction records. */
export { getCurrentSystemMessage } from "@earendil-works/pi-ai";

/** Pi 1.6's dist/core/session-manager.js: SessionManager, buildSessionContext, ... */
export const pi16 = await import(pathToFileURL(sessionManagerFile).href);
export const { SessionManager } = pi16;

const texts = ["hello", "list the files", "two\nlines", 'a "quote" and a \\ backslash', "unicode é 日本 🎉", "<b>&</b>", ""];
const tools = [
	{ name: "read", description: "Read a file", parameters: { type: "object", properties: { path: { type: "string" } } } },
	{ name: "bash", description: "Run a command", parameters: { type: "object", properties: { command: { type: "string" } } } },
	{ name: "edit", description: "Edit a file", parameters: { type: "object", properties: {} } },
];

/**
 * SessionOps makes random operations on one SessionManager: every append method,
 * branch, branchWithSummary and resetLeaf, each drawn from rand.
 */
export class SessionOps {
	constructor(sm, rand) {
		this.sm = sm;
		this.rand = rand;
		this.ids = [];
	}
	chance(p) {
		return this.rand() < p;
	}
	pick(xs) {
		return xs[Math.floor(this.rand() * xs.length)];
	}
	add(id) {
		this.ids.push(id);
		return id;
	}
	text() {
		return this.pick(texts);
	}
	blocks() {
		return [{ type: "text", text: this.text() }, ...(this.chance(0.3) ? [{ type: "thinking", thinking: this.text() }] : [])];
	}
	/** content: a string or blocks, and now and then null or absent (as an old or hand-edited file has it). */
	content(m) {
		const k = this.rand();
		if (k < 0.04) return m; // absent
		if (k < 0.08) return { ...m, content: null };
		return { ...m, content: this.chance(0.5) ? this.text() : this.blocks() };
	}
	user() {
		return this.add(this.sm.appendMessage({ role: "user", ...this.content({}), timestamp: Date.now() }));
	}
	assistant() {
		const toolCall = [{ type: "toolCall", id: "call_1", name: "bash", arguments: { command: "ls" } }];
		const m = this.chance(0.3) ? { content: toolCall } : this.content({});
		return this.add(
			this.sm.appendMessage({
				role: "assistant",
				...m,
				api: "openai-completions",
				provider: this.pick(["ollama", "anthropic"]),
				model: this.pick(["qwen3:1.7b", "claude-sonnet-4"]),
				usage: { input: Math.floor(this.rand() * 1000), output: 3, cacheRead: 0, cacheWrite: 0, totalTokens: 5, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
				stopReason: "stop",
				timestamp: Date.now(),
			}),
		);
	}
	toolResult() {
		const m = { role: "toolResult", toolCallId: "call_1", toolName: "bash" };
		return this.add(this.sm.appendMessage({ ...this.content(m), isError: this.chance(0.2), timestamp: Date.now() }));
	}
	/** system: a system message: content, sections (some removed), tools added or removed. */
	system() {
		const m = { role: "system" };
		const k = this.rand();
		if (k < 0.05) m.content = null;
		else if (k > 0.1) m.content = this.chance(0.7) ? this.pick(["You are a helpful assistant.", "Be brief.", ""]) : [{ type: "text", text: "Use the tools." }];
		if (this.chance(0.5)) {
			m.sections = {};
			for (const name of ["preamble", "rules", "cwd"]) {
				if (this.chance(0.5)) m.sections[name] = this.chance(0.2) ? null : `<${name}>${this.text()}</${name}>`;
			}
		}
		if (this.chance(0.4)) m.toolsAdded = tools.filter(() => this.chance(0.5));
		if (this.chance(0.2)) m.toolsRemoved = [{ name: this.pick(tools).name }];
		m.timestamp = this.chance(0.9) ? Date.now() : 0;
		return this.add(this.sm.appendMessage(m));
	}
	/** An editable entry of the active branch (a user, assistant or toolResult message, a custom_message), or undefined. */
	editable() {
		const ok = this.sm.getBranch().filter(
			(e) => e.type === "custom_message" || (e.type === "message" && ["user", "assistant", "toolResult"].includes(e.message.role)),
		);
		return ok.length ? this.pick(ok).id : undefined;
	}
	contextEdit() {
		const target = this.editable();
		if (!target) return this.user();
		const k = this.rand();
		const replacement = k < 0.3 ? null : { content: k < 0.7 ? this.text() : this.blocks() };
		return this.add(this.sm.appendContextEdit(target, replacement));
	}
	compaction() {
		const branch = this.sm.getBranch().map((e) => e.id);
		const k = this.rand();
		const kept = k < 0.8 && branch.length ? this.pick(branch) : k < 0.9 && this.ids.length ? this.pick(this.ids) : undefined;
		return this.add(
			this.sm.appendCompaction(
				this.text() || "summary",
				kept,
				100 + Math.floor(this.rand() * 9999),
				this.chance(0.3) ? { readFiles: ["a"] } : undefined,
				this.chance(0.2) ? true : undefined,
				this.chance(0.3) ? { input: 10, output: 2 } : undefined,
			),
		);
	}
	/** One random operation. */
	step() {
		const sm = this.sm;
		const k = this.rand();
		if (k < 0.16) return this.user();
		if (k < 0.31) return this.assistant();
		if (k < 0.37) return this.toolResult();
		if (k < 0.39) return this.add(sm.appendMessage({ role: "bashExecution", command: "ls", output: this.text(), exitCode: 0, cancelled: false, truncated: false, timestamp: Date.now() }));
		if (k < 0.4) return this.add(sm.appendMessage({ role: "custom", customType: "note", content: this.text(), display: true, timestamp: Date.now() }));
		if (k < 0.46) return this.system();
		if (k < 0.48) return this.add(sm.appendThinkingLevelChange(this.pick(["off", "low", "high"])));
		if (k < 0.5) return this.add(sm.appendModelChange("openai", this.pick(["gpt-5", "gpt-4o"])));
		if (k < 0.53) return this.add(sm.appendUsage(this.pick(["cache_warm", "title"]), "ollama", "qwen3:1.7b", { input: 5, output: 1 }, this.chance(0.5) ? "warming" : undefined).id);
		if (k < 0.62) return this.compaction();
		if (k < 0.63) return this.add(sm.appendCustomEntry("ext", { k: [1, 2] }));
		if (k < 0.67) return this.add(sm.appendCustomMessageEntry("ext-msg", this.chance(0.5) ? this.text() : this.blocks(), this.chance(0.5), this.chance(0.4) ? { a: 1 } : undefined));
		if (k < 0.76) return this.contextEdit();
		if (k < 0.78) return this.add(sm.appendLabelChange(this.pick(this.ids), this.chance(0.7) ? "bookmark" : undefined));
		if (k < 0.79) return this.add(sm.appendSessionInfo("my session"));
		if (k < 0.86) return sm.branch(this.pick(this.ids));
		if (k < 0.92) return this.add(sm.branchWithSummary(this.chance(0.9) ? this.pick(this.ids) : null, this.text(), this.chance(0.3) ? { x: 1 } : undefined));
		if (k < 0.93) return sm.resetLeaf();
		return this.user();
	}
}

/**
 * writeSession has Pi write one session under dir: a system message, a turn,
 * steps random operations, a last assistant message (Pi writes the file once the
 * session holds a user or assistant message). It returns the file's path.
 */
export function writeSession(dir, rand, steps) {
	const ops = new SessionOps(SessionManager.create("/work/project", dir), rand);
	ops.system();
	ops.user();
	ops.assistant();
	for (let i = 0; i < steps; i++) ops.step();
	ops.assistant();
	return ops.sm.getSessionFile();
}

/**
 * contextOf opens file with Pi's SessionManager and returns
 * JSON.stringify(buildSessionContext()) at leaf: "" for the last entry, an id,
 * or null for Pi's null leaf.
 */
export function contextOf(file, leaf, sessionDir) {
	const sm = SessionManager.open(file, sessionDir);
	if (leaf === null) sm.resetLeaf();
	else if (leaf) sm.branch(leaf);
	return JSON.stringify(sm.buildSessionContext());
}
