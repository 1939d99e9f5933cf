// Prints the context Pi itself builds for session files: for each case of the JSON
// list named by argv[2] ({file, leaf, out}), opens file with Pi's SessionManager
// (which migrates a v1 or v2 file in place: the caller passes a copy), moves the
// leaf to `leaf` when it is not empty, and writes JSON.stringify of
// buildSessionContext() to `out` (or "ERROR <message>").
import { readFileSync, writeFileSync } from "node:fs";
import { SessionManager } from "@mariozechner/pi-coding-agent";

const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
for (const c of cases) {
	let out;
	try {
		const sm = SessionManager.open(c.file, c.sessionDir);
		if (c.leaf) sm.branch(c.leaf);
		out = JSON.stringify(sm.buildSessionContext());
	} catch (e) {
		out = `ERROR ${e.message}`;
	}
	writeFileSync(c.out, out);
}
