// Pi's own session code as the oracle of cmd/transcript's TestPiOracle.
//
//   node context.mjs context LIST.json
//     For each case {file, leaf, nullLeaf, out, sessionDir} of LIST.json: open file
//     with Pi's SessionManager (which migrates a v1 or v2 file in place: the caller
//     passes a copy), move the leaf to `leaf` when it is not empty (to Pi's null
//     leaf when nullLeaf), and write
//     JSON.stringify(buildSessionContext()) to `out` (or "ERROR <message>").
//
//   node context.mjs make COUNT SEED DIR
//     Have Pi write COUNT sessions under DIR through its own API (messages of
//     every role, thinking and model changes, compactions, custom entries and
//     messages, labels, session names, branches with and without summaries, leaf
//     resets), the choices drawn from a PRNG seeded with SEED; print the files'
//     paths, one per line.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SessionManager } from "@mariozechner/pi-coding-agent";
import { prng } from "./prng.mjs";

const [mode, ...args] = process.argv.slice(2);
if (mode === "context") context(args[0]);
else if (mode === "make") make(Number(args[0]), Number(args[1]), args[2]);
else throw new Error(`unknown mode ${mode}`);

function context(listFile) {
	for (const c of JSON.parse(readFileSync(listFile, "utf8"))) {
		let out;
		try {
			const sm = SessionManager.open(c.file, c.sessionDir);
			if (c.nullLeaf) sm.resetLeaf();
			else if (c.leaf) sm.branch(c.leaf);
			out = JSON.stringify(sm.buildSessionContext());
		} catch (e) {
			out = `ERROR ${e.message}`;
		}
		writeFileSync(c.out, out);
	}
}

function make(count, seed, dir) {
	const rand = prng(seed);
	const pick = (xs) => xs[Math.floor(rand() * xs.length)];
	const texts = ["hello", "list the files", "two\nlines", 'a "quote" and a \\ backslash', "unicode é 日本 🎉", "<b>&</b>", ""];
	const text = () => pick(texts);
	const blocks = () => [{ type: "text", text: text() }, ...(rand() < 0.3 ? [{ type: "thinking", thinking: text() }] : [])];
	const assistant = () => ({
		role: "assistant",
		content: rand() < 0.3 ? [{ type: "toolCall", id: "call_1", name: "bash", arguments: { command: "ls" } }] : blocks(),
		api: "openai-completions",
		provider: pick(["ollama", "anthropic"]),
		model: pick(["qwen3:1.7b", "claude-sonnet-4"]),
		usage: { input: Math.floor(rand() * 1000), output: 3, cacheRead: 0, cacheWrite: 0, totalTokens: 5, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
		stopReason: "stop",
		timestamp: Date.now(),
	});
	const files = [];
	for (let n = 0; n < count; n++) {
		const sm = SessionManager.create("/work/project", join(dir, String(n)));
		const ids = [];
		const add = (id) => { ids.push(id); return id; };
		add(sm.appendMessage({ role: "user", content: rand() < 0.5 ? text() : blocks(), timestamp: Date.now() }));
		add(sm.appendMessage(assistant()));
		const steps = 1 + Math.floor(rand() * 30);
		for (let i = 0; i < steps; i++) {
			const k = rand();
			if (k < 0.25) add(sm.appendMessage({ role: "user", content: rand() < 0.5 ? text() : blocks(), timestamp: Date.now() }));
			else if (k < 0.45) add(sm.appendMessage(assistant()));
			else if (k < 0.52) add(sm.appendMessage({ role: "toolResult", toolCallId: "call_1", toolName: "bash", content: [{ type: "text", text: text() }], isError: rand() < 0.2, timestamp: Date.now() }));
			else if (k < 0.56) add(sm.appendThinkingLevelChange(pick(["off", "low", "high"])));
			else if (k < 0.6) add(sm.appendModelChange("openai", pick(["gpt-5", "gpt-4o"])));
			else if (k < 0.67) add(sm.appendCompaction(text() || "summary", rand() < 0.9 ? pick(ids) : "nothere1", 100 + Math.floor(rand() * 9999), rand() < 0.3 ? { readFiles: ["a"] } : undefined, rand() < 0.2 ? true : undefined));
			else if (k < 0.7) add(sm.appendCustomEntry("ext", { k: [1, 2] }));
			else if (k < 0.76) add(sm.appendCustomMessageEntry("ext-msg", rand() < 0.5 ? text() : blocks(), rand() < 0.5, rand() < 0.4 ? { a: 1 } : undefined));
			else if (k < 0.8) add(sm.appendLabelChange(pick(ids), rand() < 0.7 ? "bookmark" : undefined));
			else if (k < 0.82) add(sm.appendSessionInfo("my session"));
			else if (k < 0.9) sm.branch(pick(ids));
			else if (k < 0.96) add(sm.branchWithSummary(rand() < 0.9 ? pick(ids) : null, text(), rand() < 0.3 ? { x: 1 } : undefined));
			else sm.resetLeaf();
		}
		add(sm.appendMessage(assistant()));
		files.push(sm.getSessionFile());
	}
	process.stdout.write(files.join("\n") + "\n");
}
