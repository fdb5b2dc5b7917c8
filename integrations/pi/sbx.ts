// sbx.ts: everything the extension asks of the sbx binary, with no pi
// import, so scripts/bench-srt.mjs times exactly this code path.
//
// One command = one "sbx run": a new sandbox whose workspace is the
// session's cwd (writable, as pi's own bash tool can write there), torn
// down when the command ends. sbx owns the policy; this file only builds
// its argv, runs it, and kills it on timeout or abort.

import { execFile, spawn } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { constants } from "node:os";
import { join } from "node:path";

/**
 * Grace between SIGTERM and SIGKILL when a command is stopped (ms). sbx
 * forwards SIGTERM to the program and, when the program ignores it, kills
 * the whole sandbox itself after its own stop grace (10 s) and tears it
 * down cleanly. SIGKILL to sbx also ends every process of the sandbox, but
 * leaves its state and cgroups for the next sbx run to reclaim: it is only
 * the last resort for an sbx that does not end.
 */
export const KILL_GRACE_MS = 15_000;

/** sbx's status when its --timeout ended the sandbox. */
export const EXIT_TIMEOUT = 124;

/** The flags of "sbx run" that this extension uses when they exist. */
export interface Features {
	/** --settings FILE: srt's JSON shape (repeatable; later files only tighten). */
	settings: boolean;
	/** --tighten-settings FILE: settings that may only tighten (a project's file). */
	tightenSettings: boolean;
	/** --quiet: no "sbx: denied ..." lines (the count at the end stays). */
	quiet: boolean;
	/**
	 * --no-profile: every command is "bash -c", so without it a profile
	 * named "bash" would apply to all of them, unlike what /sandbox shows.
	 */
	noProfile: boolean;
}

/** What "sbx doctor" said: ok is its exit status 0 (a run can enforce). */
export interface DoctorReport {
	ok: boolean;
	/** The verdict line, or why doctor could not run at all. */
	verdict: string;
	/** Doctor's whole output (stdout and stderr). */
	output: string;
}

/** What the extension knows about the host's sbx. */
export interface SbxInfo {
	bin: string;
	features: Features;
	/**
	 * Where features came from: "sbx features --json", or why it could not
	 * be read (an sbx without the command: no optional flag is used).
	 */
	featuresSource: string;
	doctor: DoctorReport;
}

const noFeatures: Features = { settings: false, tightenSettings: false, quiet: false, noProfile: false };

/**
 * readFeatures reads the flags of "sbx run" from the output of
 * "sbx features --json" (its commands[].flags[].name). Anything else (an
 * sbx without the command, output that is not that JSON) is an error, for
 * which the caller uses no optional flag.
 */
export function readFeatures(out: string): Features {
	let doc: unknown;
	try {
		doc = JSON.parse(out);
	} catch (err) {
		throw new Error(`not JSON (${(err as Error).message})`);
	}
	const commands = (doc as { commands?: unknown }).commands;
	if (!Array.isArray(commands)) throw new Error("no commands in it");
	const runCmd = commands.find((c) => (c as { name?: unknown })?.name === "run") as { flags?: unknown } | undefined;
	if (!runCmd || !Array.isArray(runCmd.flags)) throw new Error("no run command with flags in it");
	const names = new Set(runCmd.flags.map((f) => (f as { name?: unknown })?.name).filter((n): n is string => typeof n === "string"));
	return {
		settings: names.has("settings"),
		tightenSettings: names.has("tighten-settings"),
		quiet: names.has("quiet"),
		noProfile: names.has("no-profile"),
	};
}

function run(bin: string, args: string[]): Promise<{ status: number | null; out: string; err?: Error }> {
	return new Promise((resolve) => {
		execFile(bin, args, { timeout: 60_000, maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
			const out = `${stdout}${stderr}`;
			if (err && typeof (err as NodeJS.ErrnoException).code === "string") {
				resolve({ status: null, out, err }); // not found, not executable, ...
				return;
			}
			const status = err ? ((err as { code?: number }).code ?? null) : 0;
			resolve({ status: typeof status === "number" ? status : null, out });
		});
	});
}

/**
 * probe asks bin which flags its "sbx run" has ("sbx features --json") and
 * its verdict on this host ("sbx doctor": exit status 0 when a run can
 * enforce). A missing binary is a failed doctor, never an error; an sbx
 * without "sbx features" is used with no optional flag (featuresSource
 * says so).
 */
export async function probe(bin: string): Promise<SbxInfo> {
	const [feat, doc] = await Promise.all([run(bin, ["features", "--json"]), run(bin, ["doctor"])]);
	if (doc.err) {
		const missing = `sbx not found or not executable (${bin}: ${doc.err.message})`;
		return { bin, features: noFeatures, featuresSource: missing, doctor: { ok: false, verdict: missing, output: missing } };
	}
	const verdict = /^verdict:\s*(.*)$/m.exec(doc.out)?.[1] ?? `sbx doctor exited ${doc.status}`;
	let features = noFeatures;
	let featuresSource = "sbx features --json";
	if (feat.status !== 0) {
		featuresSource = `sbx features --json failed (exit ${feat.status}; an sbx older than the command?): no optional flag used`;
	} else {
		try {
			features = readFeatures(feat.out);
		} catch (err) {
			featuresSource = `sbx features --json unreadable (${(err as Error).message}): no optional flag used`;
		}
	}
	return { bin, features, featuresSource, doctor: { ok: doc.status === 0, verdict, output: doc.out.trimEnd() } };
}

/**
 * settingsFiles returns the srt-shaped settings files that exist: the
 * user's global file, which may allow, and the project's, which may only
 * tighten what the global one allows. A project's file lies in the
 * workspace, which sandboxed commands write: it is never passed as the
 * file that allows (see sbxArgs), whether or not a global file exists.
 */
export function settingsFiles(globalFile: string, cwd: string): { settings: string[]; tighten: string[] } {
	return {
		settings: [globalFile].filter((f) => existsSync(f)),
		tighten: [join(cwd, ".pi", "sandbox.json")].filter((f) => existsSync(f)),
	};
}

/**
 * guardProjectConfig makes sure <cwd>/.pi exists before a run, so that sbx,
 * which keeps an existing .pi read-only in a writable workspace (a
 * protected entry, like .git and .vscode), protects it. Without it a
 * sandboxed command could create .pi/extensions/x.ts or .pi/settings.json,
 * which pi loads unsandboxed in its next session of this project.
 */
export function guardProjectConfig(cwd: string): void {
	try {
		mkdirSync(join(cwd, ".pi"), { mode: 0o755 });
	} catch (err) {
		if ((err as NodeJS.ErrnoException).code !== "EEXIST") {
			throw new Error(`create ${join(cwd, ".pi")} (so that sbx keeps it read-only): ${(err as Error).message}`);
		}
	}
}

/** Options of one sandboxed command. */
export interface RunOptions {
	cwd: string;
	/** Existing settings files that may allow: the global one (see settingsFiles). */
	settings: string[];
	/** Existing settings files that may only tighten: the project's. */
	tighten?: string[];
	/** Names of environment variables to pass into the sandbox by name. */
	passEnv: string[];
	/** pi's timeout in seconds, if any: sbx kills the sandbox at it. */
	timeout?: number;
}

/**
 * sbxArgs builds "sbx run ... -- bash -c COMMAND" for info. Settings files
 * that this sbx cannot read are an error: running without the policy they
 * ask for would be running looser than the user wrote.
 */
export function sbxArgs(info: Pick<SbxInfo, "features">, o: RunOptions, command: string): string[] {
	const args = ["run", "--workspace", o.cwd, "--write"];
	const tighten = o.tighten ?? [];
	const all = [...o.settings, ...tighten];
	if (all.length > 0 && !info.features.settings) {
		throw new Error(
			`this sbx has no --settings flag, so it cannot apply ${all.join(" and ")}; ` +
				"update sbx, or move the file(s) away to run with sbx's defaults",
		);
	}
	for (const f of o.settings) args.push("--settings", f);
	for (const f of tighten) {
		if (info.features.tightenSettings) {
			args.push("--tighten-settings", f);
		} else if (o.settings.length > 0) {
			// After the global file: an sbx without --tighten-settings
			// lets every file after the first only tighten.
			args.push("--settings", f);
		} else {
			// Alone, it would be the first file, which such an sbx lets
			// allow anything.
			throw new Error(
				`this sbx has no --tighten-settings flag, so it would let ${f} (a project's file) allow, not only tighten; ` +
					"update sbx, or create the global settings file that it tightens",
			);
		}
	}
	if (info.features.quiet) args.push("--quiet");
	if (info.features.noProfile) args.push("--no-profile");
	if (o.timeout && o.timeout > 0) args.push("--timeout", `${Math.ceil(o.timeout * 1000)}ms`);
	for (const name of o.passEnv) args.push("--env", name);
	args.push("--", "bash", "-c", command);
	return args;
}

/** pi's per-command callbacks (BashOperations.exec's options). */
export interface ExecOptions {
	onData: (data: Buffer) => void;
	signal?: AbortSignal;
	/** Seconds; on expiry the whole sandbox is killed. */
	timeout?: number;
	env?: NodeJS.ProcessEnv;
}

/**
 * execSbx runs "bin args" in cwd, streams its stdout and stderr to onData,
 * and resolves to its exit status (sbx passes the program's through: 128+N
 * for signal N, 125 when sbx itself failed). pi's timeout is sbx's own
 * (--timeout in args, see sbxArgs: sbx kills the sandbox and exits 124);
 * on abort, or if sbx overruns the timeout, it sends SIGTERM to sbx, then
 * SIGKILL after KILL_GRACE_MS. It rejects with pi's "timeout:N" or
 * "aborted" once sbx is gone, that is once the sandbox is torn down.
 */
export function execSbx(bin: string, args: string[], cwd: string, o: ExecOptions): Promise<{ exitCode: number | null }> {
	return new Promise((resolve, reject) => {
		if (o.signal?.aborted) {
			reject(new Error("aborted"));
			return;
		}
		const child = spawn(bin, args, { cwd, env: o.env ?? process.env, stdio: ["ignore", "pipe", "pipe"] });
		let stopped: "timeout" | "aborted" | undefined;
		let killTimer: NodeJS.Timeout | undefined;
		const stop = (why: "timeout" | "aborted") => {
			if (stopped || child.exitCode !== null || child.signalCode !== null) return;
			stopped = why;
			child.kill("SIGTERM");
			killTimer = setTimeout(() => child.kill("SIGKILL"), KILL_GRACE_MS);
		};
		const started = Date.now();
		const timeoutMs = o.timeout && o.timeout > 0 ? o.timeout * 1000 : undefined;
		// Only a backstop: sbx's --timeout acts first.
		const timer = timeoutMs ? setTimeout(() => stop("timeout"), timeoutMs + 5000) : undefined;
		const onAbort = () => stop("aborted");
		o.signal?.addEventListener("abort", onAbort, { once: true });
		child.stdout.on("data", o.onData);
		child.stderr.on("data", o.onData);
		const done = () => {
			if (timer) clearTimeout(timer);
			if (killTimer) clearTimeout(killTimer);
			o.signal?.removeEventListener("abort", onAbort);
		};
		child.on("error", (err) => {
			done();
			reject(new Error(`start ${bin}: ${err.message}`));
		});
		child.on("close", (code, sig) => {
			done();
			if (stopped === "aborted") reject(new Error("aborted"));
			else if (stopped === "timeout") reject(new Error(`timeout:${o.timeout}`));
			else if (code === EXIT_TIMEOUT && timeoutMs && Date.now() - started >= timeoutMs) reject(new Error(`timeout:${o.timeout}`));
			else if (code !== null) resolve({ exitCode: code });
			else resolve({ exitCode: 128 + (sig ? (constants.signals[sig] ?? 0) : 0) });
		});
	});
}

