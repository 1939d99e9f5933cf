// Pi 0.58 writing sessions while `transcript follow` uploads them, and Pi 0.58
// (and Pi 1.6) checking what `transcript restore --layout pi` gives back (the
// test of cmd/transcript's follow_pi058_test.go).
//
//   PI_CODING_AGENT_DIR=AGENT node pi058-follow.mjs write SEED SECONDS
//     Pi 0.58's own SessionManager writes sessions at once into its default
//     layout under AGENT/sessions: five in four cwds and a long one, each step a
//     random operation (messages, compactions, labels, names, branches with and
//     without summaries, leaf resets), a few milliseconds apart. Along the way
//     Pi opens a version 1 file written at the start (it migrates it and
//     rewrites it in place), extracts a branch into a new file
//     (createBranchedSession, which in 0.58 leaves the children of dropped
//     labels without their parent) and forks a session into another cwd
//     (forkFrom). At the end each session gets a last message, 5 ms apart.
//
//   node pi058-follow.mjs check ORIGINAL RESTORED OUT.json
//     For each session folder of ORIGINAL, ask Pi 0.58 about it and about the
//     same folder under RESTORED: list, continueRecent and, per file, open
//     (header, entries, leaf, context); and Pi 1.6 opens each file of both.
//     Writes {folders, files, mismatches} to OUT.json.
//
// The package's exports map needs Node 22 for Pi 1.6; both session-manager.js
// files run on Node 20, so they are imported by their files.
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { prng } from "./prng.mjs";
import { checkRestored, writeV1 } from "./follow-common.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const load = (pkg) => import(pathToFileURL(join(here, "node_modules", pkg, "dist", "core", "session-manager.js")).href);
const { SessionManager } = await load("@mariozechner/pi-coding-agent");
const pi16 = await load("@earendil-works/pi-coding-agent");

const cwds = ["/work/project", "/work/project", "/home/u/other", "/srv/agent:one", "/work/project/sub"];
const texts = ["hello", "two\nlines", 'a "quote" and a \\ backslash', "unicode é 日本 🎉", ""];

/** Ops makes random operations on one of Pi 0.58's SessionManagers. */
class Ops {
	constructor(sm, rand) {
		this.sm = sm;
		this.rand = rand;
		this.ids = sm.getEntries().map((e) => e.id);
	}
	pick(xs) {
		return xs[Math.floor(this.rand() * xs.length)];
	}
	chance(p) {
		return this.rand() < p;
	}
	add(id) {
		this.ids.push(id);
		return id;
	}
	user() {
		return this.add(this.sm.appendMessage({ role: "user", content: this.pick(texts), timestamp: Date.now() }));
	}
	assistant() {
		const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
		const content = [{ type: "text", text: this.pick(texts) }];
		return this.add(this.sm.appendMessage({ role: "assistant", content, api: "openai-completions", provider: "ollama", model: "qwen3:1.7b", usage, stopReason: "stop", timestamp: Date.now() }));
	}
	step() {
		const sm = this.sm;
		const k = this.rand();
		if (k < 0.25) return this.user();
		if (k < 0.5) return this.assistant();
		if (k < 0.55) return this.add(sm.appendMessage({ role: "toolResult", toolCallId: "call_1", toolName: "bash", content: [{ type: "text", text: this.pick(texts) }], isError: this.chance(0.2), timestamp: Date.now() }));
		if (k < 0.58) return this.add(sm.appendMessage({ role: "bashExecution", command: "ls", output: this.pick(texts), exitCode: 0, cancelled: false, truncated: false, timestamp: Date.now() }));
		if (k < 0.6) return this.add(sm.appendThinkingLevelChange(this.pick(["off", "low", "high"])));
		if (k < 0.62) return this.add(sm.appendModelChange("openai", this.pick(["gpt-5", "gpt-4o"])));
		if (k < 0.7) {
			const branch = sm.getBranch().map((e) => e.id);
			const kept = branch.length && this.chance(0.9) ? this.pick(branch) : this.pick(this.ids);
			return this.add(sm.appendCompaction(this.pick(texts) || "summary", kept, 100 + Math.floor(this.rand() * 9999), this.chance(0.3) ? { readFiles: ["a"] } : undefined, this.chance(0.2) ? true : undefined));
		}
		if (k < 0.72) return this.add(sm.appendCustomEntry("ext", { k: [1, 2] }));
		if (k < 0.76) return this.add(sm.appendCustomMessageEntry("ext-msg", this.pick(texts), this.chance(0.5), this.chance(0.4) ? { a: 1 } : undefined));
		if (k < 0.8) return this.add(sm.appendLabelChange(this.pick(this.ids), this.chance(0.7) ? "bookmark" : undefined));
		if (k < 0.81) return this.add(sm.appendSessionInfo("my session " + Math.floor(this.rand() * 9)));
		if (k < 0.88) return sm.branch(this.pick(this.ids));
		if (k < 0.93) return this.add(sm.branchWithSummary(this.chance(0.9) ? this.pick(this.ids) : null, this.pick(texts), this.chance(0.3) ? { x: 1 } : undefined));
		if (k < 0.94) return sm.resetLeaf();
		return this.user();
	}
}

async function write(seed, seconds) {
	const rand = prng(seed);
	const root = join(process.env.PI_CODING_AGENT_DIR, "sessions");
	const legacy = writeV1(root, rand);
	const live = [];
	for (const cwd of [...cwds, "/work/long"]) {
		const ops = new Ops(SessionManager.create(cwd), rand);
		ops.user();
		ops.assistant();
		live.push(ops);
	}
	const long = live[live.length - 1];
	for (let i = 0; i < 1500; i++) long.step();
	const start = Date.now();
	let migrated = false;
	let branched = false;
	let forked = false;
	while (Date.now() - start < seconds * 1000) {
		const at = (Date.now() - start) / (seconds * 1000);
		if (!migrated && at > 0.25) {
			live.push(new Ops(SessionManager.open(legacy), rand)); // migrates, rewrites in place
			migrated = true;
		}
		if (!branched && at > 0.5) {
			const ops = live[0];
			ops.sm.createBranchedSession(ops.pick(ops.sm.getEntries()).id); // a new file, its folder's newest
			ops.ids = ops.sm.getEntries().map((e) => e.id);
			ops.assistant();
			branched = true;
		}
		if (!forked && at > 0.6) {
			live.push(new Ops(SessionManager.forkFrom(live[1].sm.getSessionFile(), "/work/forked"), rand));
			forked = true;
		}
		const ops = live[Math.floor(rand() * live.length)];
		for (let k = 1 + Math.floor(rand() * 3); k > 0; k--) ops.step();
		await sleep(Math.floor(rand() * 8));
	}
	if (!migrated || !branched || !forked) throw new Error("the run ended too soon");
	for (const ops of live) {
		ops.assistant();
		await sleep(5);
	}
	console.log(JSON.stringify({ files: live.map((o) => o.sm.getSessionFile()) }));
}

const [mode, ...args] = process.argv.slice(2);
if (mode === "write") await write(Number(args[0]), Number(args[1]));
else if (mode === "check") await checkRestored({ SessionManager, alsoOpen: [{ label: "Pi 1.6", SessionManager: pi16.SessionManager }], infoFields: ["parentSessionPath"], sameFiles: true }, args[0], args[1], args[2]);
else throw new Error(`unknown mode ${mode}`);
