// Package discover finds a command the sandbox would not. Agents are installed where the sandbox does not look: `npm install -g`
// under nvm (~/.nvm/versions/node/vX/bin), `npm --prefix`, ~/.local/bin,
// ~/.bun/bin. Inside, $HOME is the sbx home, so all of these are missing
// and `sbx run -- pi` would answer 127. Before the run, sbx looks the
// command up as the sandbox will (PATH, in the directories the sandbox
// shows); when it is not there but is installed on the host, sbx finds
// its installation (the prefix that holds the binary, its package and its
// interpreter: the nvm version directory holds bin/node and
// lib/node_modules), shows it read-only, puts its bin first on PATH and
// says so once. A prefix that is the home, contains it, looks like a home
// (.ssh, .config, ...), holds sbx's own homes or fails the host-path
// checks of every --ro is never shown: the run goes on and, when the
// program is not found (127), sbx names where it is on the host and the
// flag that would show it. Under sudo, whose PATH is its secure_path, the
// invoking user's PATH is read from the nearest ancestor process of that
// user, and the well-known places are searched too.
package discover
