// bench-srt.mjs: pi's bash tool flow, sandboxed by Anthropic's
// sandbox-runtime (srt) and by sbx, on the same machine and commands.
// Run by scripts/bench-srt.sh (which installs srt and a Node 22 that strips
// TypeScript types, so the sbx side is integrations/pi/sbx.ts itself).
//
//   srt: pi's sandbox example: SandboxManager.initialize once per session
//        (its proxies live on), then per command wrapWithSandbox + bash.
//   sbx: the pi-sbx extension: per command one "sbx run" (sbxArgs +
//        execSbx), with the same settings file when sbx has --settings.
//
// Usage: node bench-srt.mjs SRT_MODULE SBX_BIN WORKDIR RUNS
// Prints a JSON report on stdout.

import { execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [srtModule, sbxBin, work, runsArg] = process.argv.slice(2);
const RUNS = Number(runsArg || 20);
const here = new URL(".", import.meta.url).pathname;
const { probe, sbxArgs, execSbx, guardProjectConfig } = await import(pathToFileURL(join(here, "../integrations/pi/sbx.ts")).href);
const { SandboxManager } = await import(pathToFileURL(srtModule).href);

// The world: a workspace, a home with an SSH key, a directory outside.
const ws = join(work, "ws");
const home = join(work, "home");
const outside = join(work, "outside");
for (const d of [ws, join(ws, "secrets"), join(home, ".ssh"), outside]) mkdirSync(d, { recursive: true });
writeFileSync(join(home, ".ssh", "id_ed25519"), "SSH-KEY-MARKER\n");
writeFileSync(join(ws, "secrets", "token"), "TOKEN-MARKER\n");
writeFileSync(join(ws, ".env"), "ENV=1\n");
writeFileSync(join(ws, "hello.c"), '#include <stdio.h>\nint main(void){puts("hello");return 0;}\n');
for (let i = 0; i < 20; i++) writeFileSync(join(ws, `file${i}.txt`), `${i}\n`);
process.env.HOME = home; // srt expands ~ with it

// One settings file, srt's shape, read by both.
const settings = {
	network: { allowedDomains: ["example.com"], deniedDomains: [] },
	filesystem: { denyRead: [join(home, ".ssh"), join(ws, "secrets")], allowWrite: [ws, "/tmp"], denyWrite: [join(ws, ".env")] },
};
const settingsFile = join(work, "sandbox.json");
writeFileSync(settingsFile, JSON.stringify(settings, null, 2));

// Two servers the sandboxes must not reach: one on the host's loopback,
// one on its external address (a host that is not allowed).
const serve = (host) =>
	new Promise((resolve) => {
		const s = http.createServer((_q, r) => r.end("SERVER-MARKER\n"));
		s.listen(0, host, () => resolve(s));
	});
const extAddr = Object.values(networkInterfaces())
	.flat()
	.find((a) => a && a.family === "IPv4" && !a.internal)?.address;
const lo = await serve("127.0.0.1");
const ext = extAddr ? await serve(extAddr) : undefined;

// The escape attempts: each prints its marker, or leaves a host-side trace
// (check), only if it got through.
const escapes = [
	{ name: "read ~/.ssh", cmd: `cat ${home}/.ssh/id_ed25519`, marker: "SSH-KEY-MARKER" },
	{ name: "write outside the workspace", cmd: `echo x > ${outside}/pwned`, check: () => existsSync(join(outside, "pwned")) },
	ext && { name: "reach a host that is not allowed", cmd: `curl -sS -m 5 http://${extAddr}:${ext.address().port}/`, marker: "SERVER-MARKER" },
	{ name: "reach the host's loopback", cmd: `curl -sS -m 5 http://127.0.0.1:${lo.address().port}/`, marker: "SERVER-MARKER" },
	{ name: "read a denyRead path", cmd: `cat ${ws}/secrets/token`, marker: "TOKEN-MARKER" },
	{ name: "write a denyWrite file", cmd: `echo PWNED >> ${ws}/.env`, check: () => readFileSync(join(ws, ".env"), "utf8").includes("PWNED") },
].filter(Boolean);
const reset = () => {
	spawnSync("rm", ["-f", join(outside, "pwned")]);
	writeFileSync(join(ws, ".env"), "ENV=1\n");
};

const commands = [
	{ name: "true", cmd: "true" },
	{ name: "ls -la", cmd: "ls -la" },
	{ name: "cc hello.c", cmd: "cc -o hello hello.c && ./hello" },
];

// Runners: cmd -> Promise<{code, out}>.
function collect(child) {
	return new Promise((resolve, reject) => {
		let out = "";
		child.stdout.on("data", (d) => (out += d));
		child.stderr.on("data", (d) => (out += d));
		child.on("error", reject);
		child.on("close", (code) => resolve({ code, out }));
	});
}
const bare = (cmd) => collect(spawn("bash", ["-c", cmd], { cwd: ws }));

const t0 = process.memoryUsage().rss;
await SandboxManager.initialize(settings);
// srt's proxies run in this process; on Linux it also starts socat
// bridges on the host, which live as long as the session: count them too.
const childRssKiB = () => {
	let kib = 0;
	for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
		try {
			const status = readFileSync(`/proc/${pid}/status`, "utf8");
			if (Number(/^PPid:\s+(\d+)/m.exec(status)?.[1]) === process.pid) kib += Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0);
		} catch {}
	}
	return kib;
};
const srtProxyRss = process.memoryUsage().rss - t0 + childRssKiB() * 1024;
const srtWrap = (cmd) => SandboxManager.wrapWithSandbox(cmd);
const srt = async (cmd) => {
	const wrapped = await srtWrap(cmd);
	const r = await collect(spawn("bash", ["-c", wrapped], { cwd: ws, detached: true }));
	SandboxManager.cleanupAfterCommand?.();
	return r;
};

const info = await probe(sbxBin);
if (!info.doctor.ok) throw new Error(`sbx doctor: ${info.doctor.verdict}`);
const sbxOpts = { cwd: ws, settings: info.features.settings ? [settingsFile] : [], passEnv: [] };
const sbx = async (cmd) => {
	let out = "";
	guardProjectConfig(ws); // as the extension does before every command
	const { exitCode } = await execSbx(sbxBin, sbxArgs(info, sbxOpts, cmd), ws, { onData: (d) => (out += d), env: process.env });
	return { code: exitCode, out };
};

const sandboxes = { bare, srt, sbx };

// Latency: RUNS timed runs after 2 warm-ups, per sandbox and command.
const stats = (xs) => {
	const s = [...xs].sort((a, b) => a - b);
	return { median: s[Math.floor(s.length / 2)], p90: s[Math.floor(s.length * 0.9)], min: s[0] };
};
const latency = {};
for (const c of commands) {
	latency[c.name] = {};
	for (const [name, run] of Object.entries(sandboxes)) {
		const times = [];
		for (let i = 0; i < RUNS + 2; i++) {
			const t = process.hrtime.bigint();
			const r = await run(c.cmd);
			const ms = Number(process.hrtime.bigint() - t) / 1e6;
			if (r.code !== 0) throw new Error(`${name}: ${c.cmd}: exit ${r.code}: ${r.out}`);
			if (i >= 2) times.push(ms);
		}
		latency[c.name][name] = stats(times);
	}
}

// Memory: the largest process of one "true" (the sandbox machinery: sbx;
// bwrap, socat, bash for srt), as RUSAGE_CHILDREN's maxrss of a wrapper.
const maxrss = (argv) => {
	const py = "import resource,subprocess,sys; subprocess.run(sys.argv[1:]); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)";
	return Number(execFileSync("python3", ["-c", py, ...argv], { cwd: ws, env: process.env }).toString().trim().split("\n").pop());
};
const memory = {
	srt: { perCommandKiB: maxrss(["bash", "-c", await srtWrap("true")]), sessionKiB: Math.round(srtProxyRss / 1024) },
	sbx: { perCommandKiB: maxrss([sbxBin, ...sbxArgs(info, sbxOpts, "true")]), sessionKiB: 0 },
};

// Escapes: the control (bare must get through), then each sandbox.
const escapeResults = [];
for (const e of escapes) {
	const row = { name: e.name, cmd: e.cmd };
	for (const [name, run] of Object.entries(sandboxes)) {
		reset();
		const r = await run(e.cmd);
		const through = e.marker ? r.out.includes(e.marker) : e.check();
		row[name] = through ? "allowed" : "denied";
		row[`${name}Out`] = r.out.trim().slice(0, 200);
	}
	if (row.bare !== "allowed") row.note = "control failed: the attempt does not work bare either";
	escapeResults.push(row);
}
reset();

await SandboxManager.reset();
lo.close();
ext?.close();
const bwrapVersion = spawnSync("bwrap", ["--version"]).stdout?.toString().trim();
const srtVersion = JSON.parse(readFileSync(join(srtModule, "../../package.json"), "utf8")).version;
process.stdout.write(
	JSON.stringify({ runs: RUNS, srtVersion, bwrapVersion, sbxFeatures: info.features, settings, latency, memory, escapes: escapeResults }, null, 2) + "\n",
);
process.exit(0);
