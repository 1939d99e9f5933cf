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
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { SessionManager, SessionOps, prng } from "./pi16-sessions.mjs";
import { checkRestored, writeV1 } from "./follow-common.mjs";

const cwds = ["/work/project", "/work/project", "/home/u/other", "/srv/agent:one", "/work/project/sub"];

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

const [mode, ...args] = process.argv.slice(2);
if (mode === "write") await write(Number(args[0]), Number(args[1]), Number(args[2]));
else if (mode === "check") await checkRestored({ SessionManager }, args[0], args[1], args[2]);
else throw new Error(`unknown mode ${mode}`);
