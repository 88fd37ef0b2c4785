//! The protected table: what stays read-only inside the writable roots and
//! cannot be created there when missing. The rule: anything a program on
//! the host later executes, or loads as configuration that can run code,
//! without asking. Each entry names that program and why it is here; the
//! man page prints the same table (a test keeps the two in sync).
//!
//! Owns: the table, and turning it into paths for a plan's writable roots
//! (with `gitfiles` for what git's own files point at). Must never: write
//! anything, read a file of another user, or decide how a backend keeps a
//! path read-only.

pub use crate::paths::HostEnv;
use crate::paths::{inside, resolve_lenient, PathSet, RealPaths};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Where an entry's path is taken from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Relative to every writable root, and to `$HOME` wherever a writable
    /// root contains it.
    Root,
    /// Relative to `$HOME`, protected wherever a writable root contains it
    /// (the root is `$HOME`, or an `allow_write` root such as `~/.cargo`).
    Home,
    /// Relative to every git dir found from the writable roots: a root's
    /// `.git`, the git dir a `.git` file names, its common dir, the git
    /// dirs of submodules and linked worktrees, and every repository a
    /// walk finds below the roots.
    GitDir,
    /// Found at launch from something else: `path` describes it.
    Found,
}

impl Scope {
    /// The word the man page uses.
    pub fn word(self) -> &'static str {
        match self {
            Scope::Root => "every root",
            Scope::Home => "home",
            Scope::GitDir => "git dir",
            Scope::Found => "found",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
}

impl Kind {
    pub fn word(self) -> &'static str {
        match self {
            Kind::File => "file",
            Kind::Dir => "dir",
        }
    }
}

/// One row of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Relative to the scope's base; a description for `Scope::Found`.
    pub path: &'static str,
    pub scope: Scope,
    pub kind: Kind,
    /// The host program that executes or loads it without asking.
    pub runs_it: &'static str,
    /// Why it is protected: what a command could make that program do.
    pub why: &'static str,
}

const fn e(
    path: &'static str,
    scope: Scope,
    kind: Kind,
    runs_it: &'static str,
    why: &'static str,
) -> Entry {
    Entry {
        path,
        scope,
        kind,
        runs_it,
        why,
    }
}

use Kind::{Dir, File};
use Scope::{Found, GitDir, Home, Root};

const SHELL_RC: &str =
    "a shell start-up file runs as the user at the next shell, outside any sandbox";

/// The table. Order: shells, git, editors and agents, then what lives in
/// the home directory only, then what is found at launch.
pub const TABLE: &[Entry] = &[
    e(".bashrc", Root, File, "bash, every interactive shell", SHELL_RC),
    e(".bash_profile", Root, File, "bash login shells", SHELL_RC),
    e(".bash_login", Root, File, "bash login shells without .bash_profile", SHELL_RC),
    e(".bash_logout", Root, File, "bash, when a login shell exits", SHELL_RC),
    e(".bash_aliases", Root, File, "bash, through the .bashrc of Debian and Ubuntu", SHELL_RC),
    e(".profile", Root, File, "sh, dash, bash and ksh login shells, display managers", SHELL_RC),
    e(".zshenv", Root, File, "zsh, every instance (scripts too)", SHELL_RC),
    e(".zprofile", Root, File, "zsh login shells", SHELL_RC),
    e(".zshrc", Root, File, "zsh, every interactive shell", SHELL_RC),
    e(".zlogin", Root, File, "zsh login shells", SHELL_RC),
    e(".zlogout", Root, File, "zsh, when a login shell exits", SHELL_RC),
    e(".gitmodules", Root, File, "git submodule, git status and clone with --recurse-submodules",
      "it names the submodules and so the git dirs git enters; dcjail protects those by its names"),
    e(".vscode", Root, Dir, "VS Code and its forks (Cursor, Windsurf)",
      "tasks.json runs tasks when the folder opens; settings name interpreters, linters and the terminal's environment"),
    e(".idea", Root, Dir, "JetBrains IDEs",
      "run configurations, startup tasks, file watchers and external tools are programs the IDE starts"),
    e(".zed", Root, Dir, "Zed", "settings start language servers and context servers; tasks run commands"),
    e(".mcp.json", Root, File, "Claude Code", "project MCP servers are programs it starts"),
    e(".claude/settings.json", Root, File, "Claude Code", "hooks are shell commands it runs on tool events"),
    e(".claude/settings.local.json", Root, File, "Claude Code", "hooks are shell commands it runs on tool events"),
    e(".claude/commands", Root, Dir, "Claude Code", "slash commands run their `!` lines in a shell"),
    e(".claude/agents", Root, Dir, "Claude Code", "subagents: the instructions and tools another agent gets"),
    e(".claude/skills", Root, Dir, "Claude Code", "skills carry scripts the agent runs"),
    e(".claude/hooks", Root, Dir, "Claude Code", "where the hook scripts its settings name usually live"),
    e(".cursor", Root, Dir, "Cursor", "mcp.json starts MCP servers; hooks.json runs commands; rules steer its agent"),
    e(".gemini", Root, Dir, "Gemini CLI", "settings start MCP servers and tool-discovery commands; custom commands run `!{}` shell lines"),
    e(".codex", Root, Dir, "Codex CLI", "config.toml starts MCP servers and sets the sandbox of its commands"),
    e(".continue", Root, Dir, "Continue", "its config starts MCP servers"),
    e(".windsurf", Root, Dir, "Windsurf", "workflows and rules its agent follows, commands included"),
    e(".aider.conf.yml", Root, File, "aider", "lint-cmd and test-cmd run after every edit"),
    e(".envrc", Root, File, "direnv", "the shell evaluates it on cd; a changed file needs `direnv allow` again, which users give out of habit"),
    e(".dcjail", Root, Dir, "dcjail", "its project policies: a policy the command wrote would widen its next run"),
    e(".gitconfig", Home, File, "git, every command", "core.fsmonitor, core.hooksPath, aliases, filters and pagers are programs git runs"),
    e(".config/git", Home, Dir, "git, every command", "the XDG config file, with the same powers as .gitconfig"),
    e(".ssh", Home, Dir, "ssh and sshd", "config runs ProxyCommand, LocalCommand and Match exec; authorized_keys says who may log in; rc runs at login"),
    e(".gnupg", Home, Dir, "gpg and gpg-agent (git runs gpg to sign)", "gpg-agent.conf names the pinentry and scdaemon programs"),
    e(".config/fish", Home, Dir, "fish, every shell", SHELL_RC),
    e(".config/environment.d", Home, Dir, "systemd --user, many desktop sessions", "sets PATH and LD_PRELOAD of every user service"),
    e(".pam_environment", Home, File, "pam_env at login (where user_readenv is on)", "sets PATH and LD_PRELOAD of the session"),
    e(".xprofile", Home, File, "display managers, at graphical login", SHELL_RC),
    e(".xsessionrc", Home, File, "Debian's X session, at graphical login", SHELL_RC),
    e(".xinitrc", Home, File, "startx", SHELL_RC),
    e(".config/systemd/user", Home, Dir, "systemd --user", "units and timers start programs at login and later"),
    e(".config/autostart", Home, Dir, "desktop sessions (XDG autostart)", "entries start programs at graphical login"),
    e("bin", Home, Dir, "login shells: Debian's and Ubuntu's .profile put it on PATH", "a program there shadows the system's"),
    e(".local/bin", Home, Dir, "login shells: .profile and systemd put it on PATH", "a program there shadows the system's"),
    e(".local/lib", Home, Dir, "python, every start", "`.pth` files in the user site-packages run code at interpreter start"),
    e(".cargo/bin", Home, Dir, "shells: rustup's .cargo/env puts it on PATH", "cargo, rustc and the tools installed there run as themselves"),
    e(".cargo/env", Home, File, "shells: the start-up files rustup edits source it", SHELL_RC),
    e(".cargo/config.toml", Home, File, "cargo, every build", "target runners, rustc wrappers, linkers and aliases are programs cargo runs"),
    e(".cargo/config", Home, File, "cargo, every build (older name)", "target runners, rustc wrappers, linkers and aliases are programs cargo runs"),
    e(".npmrc", Home, File, "npm, every command", "script-shell, node-options (--require) and git name programs npm runs"),
    e(".yarnrc.yml", Home, File, "yarn 2 and later", "yarnPath is run as yarn itself; plugins are loaded code"),
    e(".yarnrc", Home, File, "yarn 1", "yarn-path is run as yarn itself"),
    e(".gradle/init.d", Home, Dir, "gradle, every build", "init scripts run before every build"),
    e(".gradle/init.gradle", Home, File, "gradle, every build", "an init script run before every build"),
    e(".vimrc", Home, File, "vim, every start", "vim script runs at start"),
    e(".vim", Home, Dir, "vim", "plugin, ftplugin and autoload scripts run at start or by file type"),
    e(".config/vim", Home, Dir, "vim 9.1 and later", "the XDG form of .vimrc and .vim"),
    e(".exrc", Home, File, "vi and ex", "ex commands run at start"),
    e(".config/nvim", Home, Dir, "neovim, every start", "init.lua, init.vim and plugins run at start"),
    e(".emacs", Home, File, "emacs, every start", "elisp runs at start"),
    e(".emacs.d", Home, Dir, "emacs, every start", "init.el and packages run at start"),
    e(".config/emacs", Home, Dir, "emacs 27 and later", "init.el and packages run at start"),
    e(".config/Code/User", Home, Dir, "VS Code", "user settings and tasks name programs it runs"),
    e(".vscode-server", Home, Dir, "VS Code remote", "the server and its extensions run at every remote connection"),
    e(".config/zed", Home, Dir, "Zed", "user settings start language servers and context servers"),
    e(".tmux.conf", Home, File, "tmux, at server start", "run-shell and hooks run commands"),
    e(".config/tmux", Home, Dir, "tmux 3.1 and later", "run-shell and hooks run commands"),
    e(".config/direnv", Home, Dir, "direnv", "direnvrc and lib/ are sourced for every .envrc"),
    e(".claude.json", Home, File, "Claude Code", "user MCP servers and per-project settings"),
    e(".claude/plugins", Home, Dir, "Claude Code", "plugins bring hooks, commands and MCP servers"),
    e(".codeium", Home, Dir, "Windsurf", "its MCP servers and global rules"),
    e(".local/share/direnv", Home, Dir, "direnv, at every cd into a directory with an .envrc",
      "its trust store: a hash in allow/ makes the shell run that .envrc without asking"),
    e(".local/state/mise", Home, Dir, "mise, at every cd and command in a project",
      "its trust store: trusted-configs lets a project's mise.toml set the environment and run hooks and tasks without asking"),
    e(".config/mise", Home, Dir, "mise, every command", "the global config: env, hooks and tasks it runs everywhere"),
    e(".local/share/nix/trusted-settings.json", Home, File, "nix, for every flake",
      "its trust store: a flake's nixConfig settings listed there apply without asking"),
    e(".config/nix", Home, Dir, "nix, every command",
      "nix.conf: accept-flake-config trusts every flake's settings; netrc and substituters decide what is built"),
    e(".config/JetBrains", Home, Dir, "JetBrains IDEs",
      "options/trusted-paths.xml: a project there opens trusted, its run configurations and build scripts with it"),
    e(".config/Cursor/User", Home, Dir, "Cursor", "user settings, tasks and the trusted-workspace state of the editor"),
    e(".gdbinit", Home, File, "gdb, every start", "gdb commands, python and shell lines run at start"),
    e(".config/gdb", Home, Dir, "gdb 11 and later, every start", "gdbinit and gdb-init.d run at start"),
    e(".ipython", Home, Dir, "IPython and Jupyter kernels, every start",
      "profile_default/startup/*.py and ipython_config.py run at start"),
    e(".pythonrc", Home, File, "python, interactive, where PYTHONSTARTUP names it", "it runs at start"),
    e(".rustup", Home, Dir, "every cargo, rustc and rustup call through rustup's proxies",
      "the proxies on PATH run the toolchains in toolchains/*/bin"),
    e(".pyenv", Home, Dir, "every python, pip and tool call through pyenv's shims",
      "the shims on PATH run the interpreters in versions/*/bin"),
    e(".nvm", Home, Dir, "every node and npm call once nvm.sh is sourced", "the shells put versions/*/bin on PATH"),
    e(".cache/pip", Home, Dir, "pip install", "the wheels it built are installed later without building again"),
    e(".npm", Home, Dir, "npm install and npx", "packages come from its tarball cache; npx runs the ones it holds"),
    e(".cargo/registry", Home, Dir, "cargo, every build",
      "the sources of downloaded crates, build.rs included, are compiled and run without being fetched again"),
    e(".cargo/git", Home, Dir, "cargo, every build with git dependencies",
      "checked-out sources, build.rs included, are compiled and run"),
    e(".cache/uv", Home, Dir, "uv", "wheels and built packages installed later as they are"),
    e(".cache/yarn", Home, Dir, "yarn 1", "packages come from its cache, lifecycle scripts included"),
    e(".local/share/pnpm", Home, Dir, "pnpm install, and every command pnpm put on PATH",
      "packages are linked from its store as they are, lifecycle scripts included; global installs run from here"),
    e(".local/share/uv", Home, Dir, "uv run, uv tool, uvx",
      "the Python interpreters and tools it installed run from here"),
    e(".cache/go-build", Home, Dir, "go build and go test", "compiled packages are linked in as they are"),
    e("go/pkg/mod", Home, Dir, "go, every build", "module sources are compiled as they are"),
    e(".aws/config", Home, File, "the AWS CLI and SDKs", "credential_process is a program they run"),
    e(".kube/config", Home, File, "kubectl and Kubernetes clients", "exec credential plugins are programs they run"),
    e("config", GitDir, File, "git, every command in the repository",
      "core.fsmonitor, core.hooksPath, aliases, filters and include.path make git run programs"),
    e("config.worktree", GitDir, File, "git, on top of config when extensions.worktreeConfig is on (sparse-checkout turns it on)",
      "the same powers as config; protected also while the extension is off, since the user may turn it on later"),
    e("hooks", GitDir, Dir, "git: commit, merge, checkout, push, rebase, gc", "hooks are programs git runs"),
    e("commondir", GitDir, File, "git, to find config, hooks, objects and refs",
      "pointed elsewhere, it hands git another repository's config and hooks; missing in a main repository"),
    e("objects/info/alternates", GitDir, File, "git, to find objects", "objects would come from a store the command controls"),
    e("objects/info/http-alternates", GitDir, File, "git fetch over dumb HTTP", "objects would come from an address the command names"),
    e("gitdir", GitDir, File, "git worktree (a linked worktree's admin dir)", "the path back to the worktree; git worktree prune and repair follow it"),
    e("every repository below a writable root", Found, Dir,
      "git, in that repository, and in one that has it as a submodule (git status recurses into a populated gitlink)",
      "found by a walk at launch, at any depth: a clone in a home directory, a vendored checkout, a module git dir, a bare repository given with --allow-write, a repository under /tmp; each gets the git-dir entries"),
    e(".git, anywhere in a repository's worktree", Found, Dir,
      "git status in that repository, which enters every populated gitlink of its index",
      "a repository the command made there, with a gitlink to it, would run its configuration at the user's next git status; a directory moved in from outside every worktree gets EXDEV (mv copies it, and its .git is refused)"),
    e("modules/<name>, recursively", Found, Dir, "git submodule and every command that recurses into submodules",
      "each module git dir gets the git-dir entries; also for submodules named in .gitmodules but not cloned yet"),
    e("worktrees/<id>", Found, Dir, "git, inside that linked worktree",
      "commondir, gitdir and config.worktree of every linked worktree's admin dir"),
    e(".git", Found, File, "git, in a root whose .git is a file (linked worktree, submodule)",
      "it names the git dir; rewritten, it points git at a config of the command's choosing"),
    e(".git, when missing", Found, Dir, "git, in that directory",
      "a repository the command creates there would carry the command's configuration"),
    e("<submodule>/.git and <submodule>/.gitmodules", Found, File, "git status and git submodule, recursing",
      "for every submodule path named in .gitmodules, recursively"),
    e("include.path and includeIf.*.path targets", Found, File, "git", "an included file has the powers of config"),
    e("the core.hooksPath directory", Found, Dir, "git hooks; husky sets it to .husky/_, and then .husky is protected too",
      "hooks are programs git runs"),
    e("the init.templateDir directory", Found, Dir, "git init and git clone", "they copy its hooks into every new repository"),
    e("programs named by git settings", Found, File, "git",
      "when the program of core.fsmonitor, core.sshCommand, core.editor, core.pager, core.askPass, sequence.editor, diff.external, diff.*.textconv, diff.*.command, filter.*, merge.*.driver, credential.helper, gpg.program, alias.* (with !) and the like lies inside a writable root"),
    e("the global and system git config files", Found, File, "git, every command",
      "$GIT_CONFIG_GLOBAL, $XDG_CONFIG_HOME/git/config, ~/.gitconfig, $GIT_CONFIG_SYSTEM, /etc/gitconfig, and the files their symlinks name"),
    e("the HEAD, index, rebase-merge, rebase-apply and sequencer of a main checkout", Found, File,
      "git, in the main checkout",
      "when a linked worktree gets its common git dir writable, the main checkout's own state stays as it was"),
    e("PATH directories", Found, Dir, "every shell and program that looks up commands",
      "a directory of $PATH inside a writable root (but not the root itself) would let a planted program shadow a real one"),
    e("the targets of symlinked entries", Found, File, "as for the entry",
      "a home-directory entry that is a symlink is protected where it points, too"),
    e("the policy file, the plan card, dcjail itself", Found, File, "dcjail",
      "a command that rewrote them would widen its next run"),
];

/// The marks around the man page's rows of the table (PROTECTED PATHS):
/// `examples/man_tables.rs` writes the rows between them from `TABLE`, and
/// a test holds the page to it.
pub const MAN_BEGIN: &str =
    ".\\\" The rows below are written from src/protected.rs (cargo run --example man_tables).\n";
pub const MAN_END: &str = ".\\\" End of the rows written from src/protected.rs.\n";

/// The man page's rows of the table, in roff: one `.TP` entry per row (its
/// path, where it applies, its kind; then what runs it).
pub fn man_rows() -> String {
    // A backslash or hyphen is escaped; a line starting with a control
    // character is guarded.
    let roff = |s: &str, line_start: bool| {
        let s = s.replace('\\', "\\e").replace('-', "\\-");
        if line_start && (s.starts_with('.') || s.starts_with('\'')) {
            format!("\\&{s}")
        } else {
            s
        }
    };
    let mut out = String::new();
    for e in TABLE {
        out.push_str(&format!(
            ".TP\n\\fB{}\\fR \\(em {}, {}\n{}\n",
            roff(e.path, false),
            e.scope.word(),
            e.kind.word(),
            roff(e.runs_it, true)
        ));
    }
    out
}

/// The rows of one scope.
pub fn entries(scope: Scope) -> impl Iterator<Item = &'static Entry> {
    TABLE.iter().filter(move |e| e.scope == scope)
}

/// What the table and git's files give for a set of writable roots.
#[derive(Clone, Debug, Default)]
pub struct Collected {
    /// Read-only when present, uncreatable when missing; each inside (or
    /// holding) a writable root.
    pub protected: Vec<PathBuf>,
    /// More writable roots: the git dirs a linked worktree or a submodule
    /// checkout needs (its common dir, its module git dir).
    pub grants: Vec<PathBuf>,
    /// The tops of the repositories' worktrees found at launch, inside a
    /// writable root or holding one: no `.git` may be made in them or below
    /// them during the run (a later `git status` there would enter a
    /// repository of the command's through a gitlink).
    pub checkouts: Vec<PathBuf>,
}

/// Whether `p` lies inside one of `roots`, or holds one. Byte-wise: the
/// paths compared here are absolute and normalized, and `Path::starts_with`
/// (component by component) was most of the cost of a launch's audit.
pub(crate) fn related(p: &Path, roots: &[PathBuf]) -> bool {
    roots.iter().any(|r| inside(p, r) || inside(r, p))
}

/// The table's paths and git's files for `roots` (canonical), plus the
/// grants git needs. With `protect` false only the grants are computed.
/// A refusal names what could not be audited.
pub fn collect(
    roots: &[PathBuf],
    home: Option<&Path>,
    env: &HostEnv,
    protect: bool,
) -> Result<Collected, crate::error::Error> {
    let roots: Vec<PathBuf> = roots
        .iter()
        .filter(|r| r.as_path() != Path::new("/"))
        .cloned()
        .collect();
    let home = home.map(resolve_lenient);
    let mut git = crate::gitfiles::Audit::new(&roots, home.as_deref(), env, protect);
    if protect {
        if let Some(h) = &home {
            git.skip_held(crate::paths::held_home(&roots, h));
        }
    }
    git.run()?;
    let (git_protected, grants, checkouts) = git.finish();
    let mut all_roots = roots.clone();
    all_roots.extend(grants.iter().cloned());
    let mut set = PathSet::default();
    if protect {
        for r in &roots {
            for e in entries(Root) {
                set.add(r.join(e.path));
            }
        }
        if let Some(h) = &home {
            home_entries(h, &all_roots, &mut set);
        }
        path_dirs(env, &roots, &mut set);
        for p in git_protected.into_iter().filter(|p| related(p, &all_roots)) {
            set.add(p);
        }
    }
    let checkouts = if protect {
        checkouts
            .into_iter()
            .filter(|c| related(c, &all_roots))
            .collect()
    } else {
        Vec::new()
    };
    Ok(Collected {
        protected: outermost(set.into_vec()),
        grants,
        checkouts,
    })
}

/// The paths that lie inside no other of them, in order: a protected
/// directory (or a missing name, uncreatable) already covers what is under
/// it, and each path costs a backend a rule, a mount or a stand-in.
fn outermost(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut by_len: Vec<&PathBuf> = paths.iter().collect();
    by_len.sort_by_key(|p| p.as_os_str().len());
    let mut kept: Vec<&PathBuf> = Vec::with_capacity(paths.len());
    for p in by_len {
        if !kept.iter().any(|k| inside(p, k)) {
            kept.push(p);
        }
    }
    let keep: HashSet<&std::ffi::OsStr> = kept.iter().map(|p| p.as_os_str()).collect();
    paths
        .iter()
        .filter(|p| keep.contains(p.as_os_str()))
        .cloned()
        .collect()
}

/// `$HOME`'s entries (root-scoped ones included: `~/.vscode` holds VS Code's
/// extensions), where a writable root contains or lies inside them; an
/// entry that is a symlink also where it points.
fn home_entries(home: &Path, roots: &[PathBuf], set: &mut PathSet) {
    let mut real = RealPaths::default();
    for e in TABLE.iter().filter(|e| matches!(e.scope, Root | Home)) {
        let lexical = home.join(e.path);
        if related(&lexical, roots) {
            set.add(lexical.clone());
        }
        if let Some(target) = real.under(home, Path::new(e.path)) {
            if target != lexical && related(&target, roots) {
                set.add(target);
            }
        }
    }
}

/// Directories of `$PATH` inside a writable root, the roots themselves
/// excepted (protecting one would make the whole root read-only): the
/// entry as named (a symlink there could be pointed elsewhere) and where
/// it leads. Only absolute entries: a relative one depends on where the
/// shell stands.
fn path_dirs(env: &HostEnv, roots: &[PathBuf], set: &mut PathSet) {
    let Some(path) = &env.path else { return };
    let mut real = RealPaths::default();
    let mut seen = HashSet::new();
    for dir in std::env::split_paths(path).take(256) {
        if !dir.is_absolute() || !seen.insert(dir.clone()) {
            continue;
        }
        let target = real.of(&dir);
        let named = match (dir.parent(), dir.file_name()) {
            (Some(d), Some(n)) => real.of(d).join(n),
            _ => target.clone(),
        };
        for p in [named, target] {
            if roots.iter().any(|root| inside(&p, root) && &p != root) {
                set.add(p);
            }
        }
    }
}

/// Where a protected path comes from, for a refusal message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    PolicyFile,
    OwnBinary,
    /// A row of the table, matched by the path's tail.
    Table(&'static Entry),
    /// Found at launch (git's settings, PATH, symlink targets) or the plan
    /// card.
    Other,
}

impl Origin {
    pub fn of(p: &Path, policy_file: Option<&Path>) -> Origin {
        if policy_file.is_some_and(|f| resolve_lenient(f) == p) {
            return Origin::PolicyFile;
        }
        if crate::paths::own_exe().is_some_and(|x| resolve_lenient(&x) == p) {
            return Origin::OwnBinary;
        }
        match TABLE
            .iter()
            .filter(|e| e.scope != Found)
            .find(|e| p.ends_with(e.path))
        {
            Some(e) => Origin::Table(e),
            None => Origin::Other,
        }
    }

    /// What it is, in words.
    pub fn describe(self) -> String {
        match self {
            Origin::PolicyFile => "the policy file".into(),
            Origin::OwnBinary => "dcjail's own binary".into(),
            Origin::Table(e) => {
                format!("`{}` of the protected table, run by {}", e.path, e.runs_it)
            }
            Origin::Other => {
                "a protected path found at launch (one git's files or settings point at, a PATH \
                 directory, a symlink's target) or the plan card"
                    .into()
            }
        }
    }
}
