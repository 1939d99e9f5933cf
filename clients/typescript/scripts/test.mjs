// Runs the adapter's tests against a real transcript-serve on MinIO: builds the Go
// server from this repository, starts it on a fresh bucket of the MinIO named by
// TRANSCRIPT_TEST_S3_ENDPOINT (credentials AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY),
// mints tokens for two owners, runs node --test on the compiled tests, and stops
// the server. The test files run one at a time: they share the two owners, and
// some assert what an owner's list holds. Without an endpoint it skips, except
// under CI=true, where it fails.
import { spawn, execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createInterface } from "node:readline";
import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../../..");
const endpoint = process.env.TRANSCRIPT_TEST_S3_ENDPOINT;
if (!endpoint) {
	const msg = "TRANSCRIPT_TEST_S3_ENDPOINT is not set; start MinIO (deploy/minio/minio.sh) to run the adapter tests";
	if (process.env.CI === "true") {
		console.error(`${msg} (CI=true: the tests must run)`);
		process.exit(1);
	}
	console.error(`skipped: ${msg}`);
	process.exit(0);
}

const bin = path.join(here, "..", "dist", "transcript-serve");
execFileSync("go", ["build", "-o", bin, "./cmd/transcript-serve"], { cwd: root, stdio: "inherit" });

const key = randomBytes(32).toString("hex");
const bucket = `pi-ts-${randomBytes(6).toString("hex")}`;
const store = `s3://${bucket}/sessions?endpoint=${endpoint}&insecure=true&region=us-east-1&create=true`;
const env = { ...process.env, TRANSCRIPT_JWT_KEY: key };
const server = spawn(bin, ["serve", "--addr", "127.0.0.1:0", "--store", store], { env, stdio: ["ignore", "ignore", "pipe"] });
const addr = await new Promise((resolve, reject) => {
	server.on("exit", (code) => reject(new Error(`transcript-serve exited with ${code}`)));
	createInterface({ input: server.stderr }).on("line", (line) => {
		try {
			const rec = JSON.parse(line);
			if (rec.msg === "listening") resolve(rec.addr);
			if (rec.level === "ERROR") console.error(line);
		} catch {
			console.error(line);
		}
	});
});
const token = (tenant, user) =>
	execFileSync(bin, ["token", "--tenant", tenant, "--user", user], { env }).toString().trim();

const testDir = path.join(here, "..", "dist", "test");
const files = readdirSync(testDir).filter((f) => f.endsWith(".test.js")).map((f) => path.join(testDir, f));
const code = await new Promise((resolve) => {
	const run = spawn(process.execPath, ["--test", "--test-concurrency=1", ...files], {
		stdio: "inherit",
		env: {
			...process.env,
			TRANSCRIPT_SERVE_URL: `http://${addr}`,
			TRANSCRIPT_TOKEN_ALICE: token("acme", "alice"),
			TRANSCRIPT_TOKEN_BOB: token("acme", "bob"),
		},
	});
	run.on("exit", (c) => resolve(c ?? 1));
});
server.removeAllListeners("exit");
server.kill("SIGTERM");
process.exit(code);
