// What the follow tests' harnesses (pi16-follow.mjs, pi058-follow.mjs) share:
// the version 1 file they have Pi migrate, and what they ask Pi about a
// sessions root and the root `transcript restore --layout pi` gave back.
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";

/** Pi's default folder of cwd (getDefaultSessionDirPath). */
function folderOf(cwd) {
	return `--${cwd.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`;
}

/** writeV1 writes a version 1 session file as an old Pi did, in Pi's default layout. */
export function writeV1(root, rand) {
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


/** info is what the check compares of a SessionInfo (paths relative to their root), with the extra fields named. */
function info(root, s, extra) {
	const out = {
		path: relative(root, s.path),
		id: s.id,
		cwd: s.cwd,
		name: s.name ?? null,
	};
	for (const k of extra) out[k] = s[k] ?? null;
	return Object.assign(out, {
		created: s.created.toISOString(),
		modified: s.modified.toISOString(),
		messageCount: s.messageCount,
		firstMessage: s.firstMessage,
	});
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

/**
 * checkRestored asks Pi (SessionManager) about each session folder of the
 * sessions root original and the same folder under restored: list,
 * continueRecent and, per file, open (header, entries, leaf, context); each
 * of alsoOpen ({label, SessionManager}) opens every file of both too.
 * infoFields are SessionInfo fields compared beyond the usual ones;
 * sameFiles compares each folder's file names. Writes {folders, files,
 * mismatches} to out.
 */
export async function checkRestored({ SessionManager, alsoOpen = [], infoFields = [], sameFiles = false }, original, restored, out) {
	const report = { folders: 0, files: 0, mismatches: [] };
	const same = (what, a, b) => {
		if (JSON.stringify(a) !== JSON.stringify(b)) report.mismatches.push({ what, original: a, restored: b });
	};
	const list = async (cwd, dir, root) => (await SessionManager.list(cwd, dir)).map((s) => info(root, s, infoFields));
	for (const folder of readdirSync(original).sort()) {
		const odir = join(original, folder);
		const rdir = join(restored, folder);
		const files = readdirSync(odir).filter((f) => f.endsWith(".jsonl")).sort();
		if (sameFiles) same(`files of ${folder}`, files, readdirSync(rdir).filter((f) => f.endsWith(".jsonl")).sort());
		const cwd = SessionManager.open(join(odir, files[0])).getCwd();
		report.folders++;
		same(`list ${folder}`, await list(cwd, odir, original), await list(cwd, rdir, restored));
		same(`continueRecent ${folder}`, opened(original, SessionManager.continueRecent(cwd, odir)), opened(restored, SessionManager.continueRecent(cwd, rdir)));
		for (const f of files) {
			report.files++;
			same(`open ${folder}/${f}`, opened(original, SessionManager.open(join(odir, f))), opened(restored, SessionManager.open(join(rdir, f))));
			for (const o of alsoOpen) {
				same(`${o.label} open ${folder}/${f}`, opened(original, o.SessionManager.open(join(odir, f))), opened(restored, o.SessionManager.open(join(rdir, f))));
			}
		}
	}
	writeFileSync(out, JSON.stringify(report));
}
