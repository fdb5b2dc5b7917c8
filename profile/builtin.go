package profile

import "slices"

// Built-in profiles for the coding agents users run today. Each entry says
// where it comes from. Login files and settings reach the sandbox
// read-only and only when they exist (ReadOnlyIfExists): never the whole
// real home, and never a directory the agent writes its sessions into (the
// sandbox's $HOME, the sbx home, takes those). An agent that must write to
// its login file (a refreshed OAuth token) gets a read-only error there;
// add --rw FILE for it knowingly.

// pi: pi-coding-agent (npm @earendil-works/pi-coding-agent). README:
// "PI_CODING_AGENT_DIR | Override config directory (default:
// ~/.pi/agent)"; settings in ~/.pi/agent/settings.json, custom providers
// in ~/.pi/agent/models.json, logins (/login) in ~/.pi/agent/auth.json;
// provider keys ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY,
// OPENROUTER_API_KEY among the README's list. Its sandbox extension
// (examples/extensions/sandbox/index.ts) reads
// ~/.pi/agent/extensions/sandbox.json and, merged over it,
// <cwd>/.pi/sandbox.json: sbx reads the first as settings and the second
// as settings that may only tighten (see package settings).
var pi = Profile{
	Name:        "pi",
	Description: "pi coding agent: Anthropic, OpenAI, Google and OpenRouter APIs; ~/.pi/agent logins and settings read-only",
	AllowHosts: []string{
		"api.anthropic.com", "api.openai.com", "generativelanguage.googleapis.com", "openrouter.ai",
	},
	Env: []string{
		"ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN", "OPENAI_API_KEY", "GEMINI_API_KEY",
		"OPENROUTER_API_KEY", "PI_CODING_AGENT_DIR",
	},
	ReadOnlyIfExists: []string{
		"~/.pi/agent/auth.json", "~/.pi/agent/settings.json", "~/.pi/agent/models.json",
	},
	SettingsIfExists: []string{"~/.pi/agent/extensions/sandbox.json"},
	TightenIfExists:  []string{".pi/sandbox.json"},
}

// claude: Claude Code (npm @anthropic-ai/claude-code). docs
// code.claude.com/docs/en/env-vars: ANTHROPIC_API_KEY (X-Api-Key),
// ANTHROPIC_AUTH_TOKEN (Authorization: Bearer), ANTHROPIC_BASE_URL
// (endpoint override), CLAUDE_CONFIG_DIR (default ~/.claude). Settings:
// ~/.claude/settings.json (docs/en/settings), global state and
// preferences ~/.claude.json; on Linux the OAuth login is
// ~/.claude/.credentials.json. IS_SANDBOX=1 tells Claude Code it runs in a
// sandbox: without it, it refuses --dangerously-skip-permissions as root
// (issue #18, observed).
var claude = Profile{
	Name:        "claude",
	Description: "Claude Code: Anthropic API; ~/.claude.json and ~/.claude login/settings read-only; IS_SANDBOX=1",
	AllowHosts:  []string{"api.anthropic.com"},
	Env: []string{
		"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL",
		"CLAUDE_CONFIG_DIR", "IS_SANDBOX=1",
	},
	ReadOnlyIfExists: []string{
		"~/.claude.json", "~/.claude/settings.json", "~/.claude/.credentials.json",
	},
}

// codex: Codex CLI (npm @openai/codex). developers.openai.com/codex
// config-basic: settings in ~/.codex/config.toml ($CODEX_HOME), login in
// ~/.codex/auth.json; OPENAI_API_KEY, OPENAI_BASE_URL. Codex 0.171 reads
// neither variable for its model turn (issue #18, observed): `codex exec`
// authenticates with CODEX_API_KEY (developers.openai.com/codex
// noninteractive: "CODEX_API_KEY=<api-key> codex exec ...") and takes its
// endpoint from the config key openai_base_url (config.toml or `-c`); with
// only OPENAI_BASE_URL it dials api.openai.com. The older names stay for
// older releases and for the tools Codex runs. Its own sandbox
// (bubblewrap/Landlock on Linux) cannot nest inside sbx's ("bwrap: No
// permissions to create new namespace", issue #18): sandbox_mode
// "danger-full-access" (the documented value that runs commands without
// Codex's sandbox) is passed as `-c sandbox_mode="danger-full-access"`,
// the CLI's documented override of a config.toml key, since sbx is the
// sandbox.
var codex = Profile{
	Name:        "codex",
	Description: "Codex CLI: OpenAI API; ~/.codex/auth.json and config.toml read-only; Codex's own sandbox off (sbx is the sandbox)",
	AllowHosts:  []string{"api.openai.com", "chatgpt.com"},
	Env:         []string{"CODEX_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_HOME"},
	ReadOnlyIfExists: []string{
		"~/.codex/auth.json", "~/.codex/config.toml",
	},
	Args: []string{"-c", `sandbox_mode="danger-full-access"`},
}

// gemini: Gemini CLI (npm @google/gemini-cli). geminicli.com
// docs/reference/configuration: user settings ~/.gemini/settings.json,
// GEMINI_API_KEY, GOOGLE_API_KEY, GOOGLE_CLOUD_PROJECT; Google login
// cached in ~/.gemini/oauth_creds.json and ~/.gemini/google_accounts.json.
// GOOGLE_GEMINI_BASE_URL points it at another endpoint; Gemini CLI 0.61's
// headless mode (-p) then wants the auth type named in settings.json
// (security.auth.selectedType "gemini-api-key"), else it infers "gateway"
// and refuses it, and it wants --skip-trust or GEMINI_CLI_TRUST_WORKSPACE
// (docs/cli/trusted-folders) for an untrusted directory: both left to the
// user (issue #18, observed). docs/cli/sandbox:
// GEMINI_SANDBOX chooses its own (container) sandbox; "false" keeps it
// off, since sbx is the sandbox.
var gemini = Profile{
	Name:        "gemini",
	Description: "Gemini CLI: Gemini API and Google login hosts; ~/.gemini settings/login read-only; GEMINI_SANDBOX=false",
	AllowHosts: []string{
		"generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com", "oauth2.googleapis.com",
	},
	Env: []string{
		"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_CLOUD_PROJECT",
		"GEMINI_MODEL", "GEMINI_SANDBOX=false",
	},
	ReadOnlyIfExists: []string{
		"~/.gemini/settings.json", "~/.gemini/oauth_creds.json", "~/.gemini/google_accounts.json",
	},
}

// opencode: opencode (npm opencode-ai). opencode.ai/docs/config: global
// config ~/.config/opencode/opencode.json; provider logins (/connect) in
// ~/.local/share/opencode/auth.json; OPENCODE_CONFIG and
// OPENCODE_DISABLE_AUTOUPDATE (docs: environment variables). Model
// metadata comes from models.dev. Provider keys as the providers name
// them. ANTHROPIC_BASE_URL: opencode 1.18's Anthropic provider takes its
// endpoint from it (issue #18, observed: without it in the sandbox,
// opencode dials api.anthropic.com whatever the host's variable says).
var opencode = Profile{
	Name:        "opencode",
	Description: "opencode: Anthropic, OpenAI, OpenRouter APIs and models.dev; its config and auth.json read-only",
	AllowHosts: []string{
		"api.anthropic.com", "api.openai.com", "openrouter.ai", "models.dev",
	},
	Env: []string{
		"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY",
		"OPENCODE_CONFIG", "OPENCODE_DISABLE_AUTOUPDATE=1",
	},
	ReadOnlyIfExists: []string{
		"~/.config/opencode/opencode.json", "~/.local/share/opencode/auth.json",
	},
}

// builtins are the built-in profiles, by name.
var builtins = []Profile{claude, codex, gemini, opencode, pi}

// Builtin returns the built-in profile name.
func Builtin(name string) (Profile, bool) {
	i := slices.IndexFunc(builtins, func(p Profile) bool { return p.Name == name })
	if i < 0 {
		return Profile{}, false
	}
	return clone(builtins[i]), true
}

// Builtins returns every built-in profile, sorted by name.
func Builtins() []Profile {
	out := make([]Profile, len(builtins))
	for i, p := range builtins {
		out[i] = clone(p)
	}
	return out
}

// clone copies p's lists so that callers cannot change the built-ins.
func clone(p Profile) Profile {
	q := Merge(p)
	return q
}
