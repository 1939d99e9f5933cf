// Pi 1.6 writing sessions while `transcript follow` uploads them, and Pi 1.6
// checking what `transcript restore --layout pi` gives back (the tests of
// cmd/transcript's follow_pi_test.go).
//
//   PI_CODING_AGENT_DIR=AGENT node pi16-follow.mjs write SEED SECONDS SESSIONS
//     Pi's own SessionManager writes SESSIONS sessions at once into its default
//     layout under AGENT/sessions (SessionManager.create(cwd), cwds shared by
//     some), each step a random operation of pi16-sessions.mjs (appends of every
//     kind, branches, compactions), for SECONDS seconds, a few milliseconds
//     apart. A version 1 file (no ids, a hookMessage, a compaction by index) is
//     written at the start and opened by Pi a third of the way in: Pi migrates
//     it and rewrites it in place, then goes on appending to it. At the end each
//     session gets a last message, 5 ms apart. Prints the files as JSON.
//
//   node pi16-follow.mjs check ORIGINAL RESTORED OUT.json
//     For each session folder of the sessions root ORIGINAL, ask Pi 1.6 about it
//     and about the same folder under RESTORED: SessionManager.list (ids, paths,
//     names, counts, first messages, created and modified times),
//     continueRecent (which session, its entries and context) and, per file,
//     open (header, entries, leaf, context). Writes {folders, files, mismatches}
//     to OUT.json.
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { SessionManager, SessionOps, prng } from "./pi16-sessions.mjs";

const cwds = ["/work/project", "/work/project", "/home/u/other", "/srv/agent:one", "/work/project/sub"];

/** Pi's default folder of cwd (getDefaultSessionDirPath). */
function folderOf(cwd) {
	return `--${cwd.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`;
}

/** writeV1 writes a version 1 session file as an old Pi did, in Pi's default layout. */
function writeV1(root, rand) {
	const cwd = "/work/legacy";
	const ts = new Date(Date.now() - 86400000).toISOString();
	const id = "legacy-" + Math.floor(rand() * 1e9).toString(16);
	const dir = join(root, folderOf(cwd));
	mkdirSync(dir, { recursive: true });
	const file = join(dir, `${ts.replace(/[:.]/g, "-")}_${id}.jsonl`);
	const t = (k) => new Date(Date.parse(ts) + k * 1000).toISOString();
	const lines = [
		{ type: "session", id, timestamp: ts, cwd },
		{ type: "message", timestamp: t(1), message: { role: "user", content: "fix the parser", timestamp: Date.parse(t(1)) } },
		{ type: "message", timestamp: t(2), message: { role: "assistant", content: [{ type: "text", text: "done" }], api: "openai-completions", provider: "openai", model: "gpt-4o", stopReason: "stop", timestamp: Date.parse(t(2)) } },
		{ type: "message", timestamp: t(3), message: { role: "hookMessage", customType: "note", content: "from a hook", display: true, timestamp: Date.parse(t(3)) } },
		{ type: "compaction", timestamp: t(4), summary: "we fixed the parser", firstKeptEntryIndex: 2, tokensBefore: 1200 },
		{ type: "message", timestamp: t(5), message: { role: "user", content: "and now?", timestamp: Date.parse(t(5)) } },
	];
	writeFileSync(file, lines.map((l) => JSON.stringify(l) + "\n").join(""));
	return file;
}

async function write(seed, seconds, sessions) {
	const rand = prng(seed);
	const root = join(process.env.PI_CODING_AGENT_DIR, "sessions");
	const legacy = writeV1(root, rand);
	const live = [];
	for (let i = 0; i < sessions; i++) {
		const ops = new SessionOps(SessionManager.create(cwds[i % cwds.length]), rand);
		ops.system();
		ops.user();
		ops.assistant();
		live.push(ops);
	}
	const start = Date.now();
	let migrated = false;
	while (Date.now() - start < seconds * 1000) {
		if (!migrated && Date.now() - start > (seconds * 1000) / 3) {
			const ops = new SessionOps(SessionManager.open(legacy), rand); // migrates, rewrites in place
			ops.ids = ops.sm.getEntries().map((e) => e.id);
			live.push(ops);
			migrated = true;
		}
		const ops = live[Math.floor(rand() * live.length)];
		for (let k = 1 + Math.floor(rand() * 3); k > 0; k--) ops.step();
		await sleep(Math.floor(rand() * 8));
	}
	if (!migrated) throw new Error("the run ended before the legacy file was opened");
	for (const ops of live) {
		ops.assistant();
		await sleep(5);
	}
	console.log(JSON.stringify({ files: live.map((o) => o.sm.getSessionFile()) }));
}

/** info is what the check compares of a SessionInfo (paths relative to their root). */
function info(root, s) {
	return {
		path: relative(root, s.path),
		id: s.id,
		cwd: s.cwd,
		name: s.name ?? null,
		created: s.created.toISOString(),
		modified: s.modified.toISOString(),
		messageCount: s.messageCount,
		firstMessage: s.firstMessage,
	};
}

/** opened is what the check compares of a session Pi opened. */
function opened(root, sm) {
	return {
		file: relative(root, sm.getSessionFile()),
		header: sm.getHeader(),
		entries: sm.getEntries(),
		leaf: sm.getLeafId(),
		context: sm.buildSessionContext(),
	};
}

async function check(original, restored, out) {
	const report = { folders: 0, files: 0, mismatches: [] };
	const same = (what, a, b) => {
		if (JSON.stringify(a) !== JSON.stringify(b)) report.mismatches.push({ what, original: a, restored: b });
	};
	for (const folder of readdirSync(original).sort()) {
		const odir = join(original, folder);
		const rdir = join(restored, folder);
		const files = readdirSync(odir).filter((f) => f.endsWith(".jsonl")).sort();
		const cwd = SessionManager.open(join(odir, files[0])).getCwd();
		report.folders++;
		same(`list ${folder}`, (await SessionManager.list(cwd, odir)).map((s) => info(original, s)), (await SessionManager.list(cwd, rdir)).map((s) => info(restored, s)));
		same(`continueRecent ${folder}`, opened(original, SessionManager.continueRecent(cwd, odir)), opened(restored, SessionManager.continueRecent(cwd, rdir)));
		for (const f of files) {
			report.files++;
			same(`open ${folder}/${f}`, opened(original, SessionManager.open(join(odir, f))), opened(restored, SessionManager.open(join(rdir, f))));
		}
	}
	writeFileSync(out, JSON.stringify(report));
}

const [mode, ...args] = process.argv.slice(2);
if (mode === "write") await write(Number(args[0]), Number(args[1]), Number(args[2]));
else if (mode === "check") await check(args[0], args[1], args[2]);
else throw new Error(`unknown mode ${mode}`);
