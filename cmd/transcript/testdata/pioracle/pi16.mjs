// Pi 1.6's own session code as the oracle of cmd/transcript's TestPi16Oracle.
//
//   node pi16.mjs make COUNT SEED DIR OUT.json
//     Have Pi 1.6 write COUNT sessions under DIR through its own API
//     (pi16-sessions.mjs: every append method, branches with and without a
//     summary, leaf resets, context edits, system messages, compactions), the
//     choices drawn from a PRNG seeded with SEED. Then open each file again and
//     write to OUT.json [{file, checks: [{leaf, context}]}]: the context Pi builds
//     at the last entry (leaf "") and at up to four other entries of the file.
//
//   node pi16.mjs context LIST.json
//     For each case {file, leaf, nullLeaf, out, sessionDir} of LIST.json: open
//     file with Pi 1.6's SessionManager, move the leaf to `leaf` when it is not
//     empty (to Pi's null leaf when nullLeaf), and write
//     JSON.stringify(buildSessionContext()) to `out` (or "ERROR <message>").
//
//   node pi16.mjs system-message IN.json OUT.json
//     For each list of messages in IN.json, write to OUT.json (an array) the
//     JSON of the system message getCurrentSystemMessage makes of it, or null.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SessionManager, contextOf, getCurrentSystemMessage, prng, writeSession } from "./pi16-sessions.mjs";

const [mode, ...args] = process.argv.slice(2);
if (mode === "make") make(Number(args[0]), Number(args[1]), args[2], args[3]);
else if (mode === "context") context(args[0]);
else if (mode === "system-message") systemMessages(args[0], args[1]);
else throw new Error(`unknown mode ${mode}`);

function make(count, seed, dir, out) {
	const rand = prng(seed);
	const files = [];
	for (let n = 0; n < count; n++) {
		files.push(writeSession(join(dir, String(n)), rand, 5 + Math.floor(rand() * 45)));
	}
	const sessions = files.map((file) => {
		const sessionDir = join(dir, "reopened");
		const ids = SessionManager.open(file, sessionDir).getEntries().map((e) => e.id);
		const leaves = [""];
		for (let i = 0; i < 4 && leaves.length <= ids.length; i++) {
			const id = ids[Math.floor(rand() * ids.length)];
			if (!leaves.includes(id)) leaves.push(id);
		}
		return { file, checks: leaves.map((leaf) => ({ leaf, context: contextOf(file, leaf, sessionDir) })) };
	});
	writeFileSync(out, JSON.stringify(sessions));
}

function context(listFile) {
	for (const c of JSON.parse(readFileSync(listFile, "utf8"))) {
		let out;
		try {
			out = contextOf(c.file, c.nullLeaf ? null : c.leaf, c.sessionDir);
		} catch (e) {
			out = `ERROR ${e.message}`;
		}
		writeFileSync(c.out, out);
	}
}

function systemMessages(inFile, outFile) {
	const lists = JSON.parse(readFileSync(inFile, "utf8"));
	const out = lists.map((messages) => {
		const m = getCurrentSystemMessage(messages);
		return m === undefined ? null : JSON.stringify(m);
	});
	writeFileSync(outFile, JSON.stringify(out));
}
