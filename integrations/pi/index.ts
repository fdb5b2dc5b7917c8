/**
 * pi-sbx: pi's bash tool (and the user's ! commands) in an sbx sandbox.
 *
 * Every command runs in its own "sbx run --workspace <cwd> --write -- bash
 * -c <command>": the session's cwd writable, the rest of the host as sbx
 * shows it (system read-only, no home, no network but the sandbox's own
 * loopback). srt-shaped settings files, the same ones pi's sandbox example
 * reads, are passed when they exist:
 *   global:  <pi agent dir>/extensions/sandbox.json  --settings FILE
 *   project: <cwd>/.pi/sandbox.json                  --tighten-settings FILE
 * The project's file may only tighten, with or without a global file.
 *
 * Fails closed: when sbx is missing, "sbx doctor" says it cannot enforce on
 * this host, or a settings file exists that this sbx cannot read, commands
 * are refused, not run bare. Turning the sandbox off is explicit:
 * SBX_PI_UNSANDBOXED=1 in pi's environment, or pi's --no-sbx flag.
 * SBX_PI_BIN names the sbx binary (default: "sbx" on PATH).
 *
 * /sandbox shows the effective policy: the sbx binary, the settings files,
 * the "sbx run" argv of a command, and sbx doctor's report (probing sbx
 * again, so that a fixed host is seen without restarting pi).
 */

import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { type BashOperations, createBashToolDefinition, createLocalBashOperations, getAgentDir } from "@earendil-works/pi-coding-agent";
import { join } from "node:path";
import { execSbx, guardProjectConfig, probe, type SbxInfo, sbxArgs, settingsFiles } from "./sbx.ts";

/** The environment variable that turns the sandbox off ("1" or "true"). */
const OFF_ENV = "SBX_PI_UNSANDBOXED";

export default function (pi: ExtensionAPI) {
	pi.registerFlag("no-sbx", { description: "run bash commands WITHOUT the sbx sandbox", type: "boolean", default: false });

	const bin = process.env.SBX_PI_BIN || "sbx";
	const globalSettings = join(getAgentDir(), "extensions", "sandbox.json");
	let info: Promise<SbxInfo> | undefined;
	const sbx = () => (info ??= probe(bin));
	const disabled = () => pi.getFlag("no-sbx") === true || /^(1|true|yes)$/i.test(process.env[OFF_ENV] ?? "");

	// PI_* variables pi sets for its commands, passed in by name (values stay
	// out of sbx's argv); sbx's own defaults cover PATH, HOME, TERM, ...
	const passEnv = (env?: NodeJS.ProcessEnv) => Object.keys(env ?? {}).filter((k) => /^PI_[A-Z_]+$/.test(k)).sort();

	const argvFor = async (cwd: string, command: string, env?: NodeJS.ProcessEnv, timeout?: number) => {
		const s = await sbx();
		if (!s.doctor.ok) {
			throw new Error(
				`sbx cannot sandbox commands here (${s.doctor.verdict}); refusing to run unsandboxed. ` +
					`Fix what "sbx doctor" reports, or turn the sandbox off explicitly with ${OFF_ENV}=1 or pi --no-sbx.`,
			);
		}
		const args = sbxArgs(s, { cwd, ...settingsFiles(globalSettings, cwd), passEnv: passEnv(env), timeout }, command);
		guardProjectConfig(cwd);
		return args;
	};

	const bare = createLocalBashOperations();
	const operations: BashOperations = {
		exec: async (command, cwd, options) =>
			disabled() ? bare.exec(command, cwd, options) : execSbx(bin, await argvFor(cwd, command, options.env, options.timeout), cwd, options),
	};
	// Registered at load (flags are read only per command): pi's bash tool,
	// with its truncation, timeout and rendering, over sbx.
	pi.registerTool(createBashToolDefinition(process.cwd(), { operations }));

	pi.on("session_start", async (_event, ctx) => {
		if (disabled()) {
			ctx.ui.notify(`sbx sandbox OFF (${OFF_ENV} or --no-sbx): bash commands run unsandboxed`, "warning");
			return;
		}
		const s = await sbx();
		if (s.doctor.ok) ctx.ui.setStatus?.("sbx", "sbx: sandboxed");
		else ctx.ui.notify(`sbx cannot sandbox here: ${s.doctor.verdict}. bash commands will be refused (see /sandbox).`, "error");
	});

	pi.on("user_bash", () => ({ operations }));

	pi.registerCommand("sandbox", {
		description: "Show the sbx sandbox policy for bash commands",
		handler: async (_args, ctx) => {
			if (disabled()) {
				ctx.ui.notify(`sbx sandbox OFF (${OFF_ENV} or --no-sbx): bash commands run unsandboxed`, "warning");
				return;
			}
			info = undefined; // probe again: sbx may have been installed or fixed since
			const s = await sbx();
			const files = settingsFiles(globalSettings, ctx.cwd);
			let argv: string;
			try {
				argv = [s.bin, ...sbxArgs(s, { cwd: ctx.cwd, ...files, passEnv: [] }, "<command>")].join(" ");
			} catch (err) {
				argv = `refused: ${(err as Error).message}`;
			}
			const lines = [
				`sbx: ${s.bin} (${s.doctor.ok ? "can enforce" : "CANNOT enforce: commands are refused"})`,
				`settings: ${
					files.settings.length + files.tighten.length
						? [...files.settings, ...files.tighten.map((f) => `${f} (may only tighten)`)].join(", ")
						: `none (looked for ${globalSettings} and ${join(ctx.cwd, ".pi", "sandbox.json")})`
				}`,
				`run: ${argv}`,
				`sbx flags: --settings ${s.features.settings ? "yes" : "no"}, --tighten-settings ${s.features.tightenSettings ? "yes" : "no"}, --quiet ${s.features.quiet ? "yes" : "no"}, --no-profile ${s.features.noProfile ? "yes" : "no"} (from ${s.featuresSource})`,
				"",
				"sbx doctor:",
				s.doctor.output,
			];
			ctx.ui.notify(lines.join("\n"), s.doctor.ok ? "info" : "error");
		},
	});
}
