//! Shell completion scripts (bash, zsh, fish) generated from the same clap
//! definitions that print `--help`: the run options (`cli::RunCli`),
//! `explain`, `doctor` and the `worktree` and `setup` parsers. The words an option takes
//! come from the vocabulary enums of `policy` (their `WORDS`), found by the
//! type clap parses the value into, so a new word or option reaches the
//! scripts by regeneration alone (`cargo run --example completions`).
//!
//! It only renders text: it never reads the environment or the filesystem,
//! and the scripts it writes never run the command being completed.

use crate::cli::{DoctorCli, ExplainCli, HelpCli, RunCli};
use crate::policy::{
    Approval, BackendChoice, Mode, NetMode, Outcome, PolicyFormat, SandboxMode, Tool, Verdict,
};
use clap::builder::ValueHint;
use clap::{Arg, ArgAction, Command, CommandFactory};
use std::any::TypeId;
use std::fmt::Write as _;

/// The shells a script can be generated for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

impl Shell {
    pub const ALL: [Shell; 3] = [Shell::Bash, Shell::Zsh, Shell::Fish];

    pub fn word(self) -> &'static str {
        match self {
            Shell::Bash => "bash",
            Shell::Zsh => "zsh",
            Shell::Fish => "fish",
        }
    }

    pub fn from_word(s: &str) -> Option<Shell> {
        Shell::ALL.into_iter().find(|sh| sh.word() == s)
    }

    /// The file name the script is installed (and committed) under.
    pub fn file_name(self) -> &'static str {
        match self {
            Shell::Bash => "dcjail.bash",
            Shell::Zsh => "_dcjail",
            Shell::Fish => "dcjail.fish",
        }
    }
}

/// What an option's value (or a positional) completes to.
#[derive(Clone, Debug, PartialEq)]
enum Kind {
    Words(Vec<String>),
    Files,
    Dirs,
    Text,
}

#[derive(Clone, Debug)]
struct Opt {
    long: Option<String>,
    short: Option<char>,
    help: String,
    /// (value name, what it completes to) when the option takes a value.
    value: Option<(String, Kind)>,
    repeat: bool,
    /// `--help` / `--version`: nothing else makes sense with it.
    exclusive: bool,
}

/// One place on the command line: the run itself, a subcommand, a nested one.
#[derive(Clone, Debug)]
struct Node {
    /// Shell-identifier-safe name: `dcjail`, `explain`, `worktree_enter`.
    id: String,
    /// The word that leads here from the parent (empty for the root).
    word: String,
    about: String,
    opts: Vec<Opt>,
    /// Positionals before any command to run (`worktree exit PATH`).
    positionals: Vec<(String, Kind)>,
    /// The node ends with a command to run and its arguments.
    runs_command: bool,
    children: Vec<Node>,
}

/// The value kind from the type clap parses into (a policy vocabulary,
/// a path) or from clap's own possible values.
fn kind_of(arg: &Arg) -> Kind {
    let t = arg.get_value_parser().type_id();
    let vocab: [(TypeId, &[&str]); 9] = [
        (TypeId::of::<Mode>(), Mode::WORDS),
        (TypeId::of::<Tool>(), Tool::WORDS),
        (TypeId::of::<Outcome>(), Outcome::WORDS),
        (TypeId::of::<Approval>(), Approval::WORDS),
        (TypeId::of::<Verdict>(), Verdict::WORDS),
        (TypeId::of::<SandboxMode>(), SandboxMode::WORDS),
        (TypeId::of::<BackendChoice>(), BackendChoice::WORDS),
        (TypeId::of::<NetMode>(), NetMode::WORDS),
        (TypeId::of::<PolicyFormat>(), PolicyFormat::WORDS),
    ];
    if let Some((_, words)) = vocab.iter().find(|(id, _)| t == *id) {
        return Kind::Words(words.iter().map(|w| w.to_string()).collect());
    }
    let possible: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|p| !p.is_hide_set())
        .map(|p| p.get_name().to_string())
        .collect();
    if !possible.is_empty() {
        return Kind::Words(possible);
    }
    match arg.get_value_hint() {
        ValueHint::DirPath => Kind::Dirs,
        ValueHint::AnyPath | ValueHint::FilePath | ValueHint::ExecutablePath => Kind::Files,
        _ => Kind::Text,
    }
}

fn first_line(s: Option<&clap::builder::StyledStr>) -> String {
    s.map(|s| s.to_string())
        .unwrap_or_default()
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn value_name(arg: &Arg) -> String {
    arg.get_value_names()
        .and_then(|v| v.first())
        .map(|s| s.to_string())
        .unwrap_or_else(|| arg.get_id().to_string().to_uppercase())
}

fn node(cmd: &Command, id: &str, word: &str, about: String) -> Node {
    let mut n = Node {
        id: id.to_string(),
        word: word.to_string(),
        about,
        opts: Vec::new(),
        positionals: Vec::new(),
        runs_command: false,
        children: Vec::new(),
    };
    // In `--help`'s order, which `display_order` sets where a group of
    // options is shared (`policy::GateArgs`).
    let mut args: Vec<&Arg> = cmd.get_arguments().filter(|a| !a.is_hide_set()).collect();
    args.sort_by_key(|a| a.get_display_order());
    for arg in args {
        if arg.is_positional() {
            if arg.is_trailing_var_arg_set() {
                n.runs_command = true;
            } else {
                n.positionals.push((value_name(arg), kind_of(arg)));
            }
            continue;
        }
        let action = arg.get_action();
        n.opts.push(Opt {
            long: arg.get_long().map(str::to_string),
            short: arg.get_short(),
            help: first_line(arg.get_help()),
            value: action
                .takes_values()
                .then(|| (value_name(arg), kind_of(arg))),
            repeat: matches!(action, ArgAction::Append | ArgAction::Count),
            exclusive: matches!(action, ArgAction::Help | ArgAction::Version),
        });
    }
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = sub.get_name().to_string();
        let child_id = format!("{id}_{}", name.replace(['-', ' '], "_"));
        let about = first_line(sub.get_about());
        n.children.push(node(sub, &child_id, &name, about));
    }
    n
}

/// The whole command line. `explain`, `doctor`, `worktree`, `hook`, `import`,
/// `setup` and `help` are chosen by hand in `cli::main` (as the first word
/// only), so they are joined here.
fn tree() -> Node {
    // As `--help` prints them (`usage::help_only`): the paragraphs after
    // an option's first are the man page's.
    let built = |c: Command| {
        let mut c = crate::usage::help_only(c);
        c.build();
        c
    };
    let run = built(RunCli::command());
    let mut root = node(&run, "dcjail", "", first_line(run.get_about()));
    let about_of = |c: &Command| {
        let s = first_line(c.get_about());
        // "dcjail doctor: what this machine …" → "what this machine …"
        s.split_once(": ").map(|(_, r)| r.to_string()).unwrap_or(s)
    };
    for (word, cmd) in [
        ("explain", built(ExplainCli::command())),
        ("doctor", built(DoctorCli::command())),
        ("worktree", built(crate::worktree::command())),
        ("hook", built(crate::hook::command())),
        ("import", built(crate::import::command())),
        ("setup", built(crate::setup::command())),
        ("help", built(HelpCli::command())),
    ] {
        root.children.push(node(&cmd, word, word, about_of(&cmd)));
    }
    root
}

fn walk<'a>(n: &'a Node, out: &mut Vec<&'a Node>) {
    out.push(n);
    for c in &n.children {
        walk(c, out);
    }
}

fn nodes(root: &Node) -> Vec<&Node> {
    let mut v = Vec::new();
    walk(root, &mut v);
    v
}

/// The script for `shell`, byte-for-byte what `completions/` holds.
pub fn generate(shell: Shell) -> String {
    let root = tree();
    match shell {
        Shell::Bash => bash(&root),
        Shell::Zsh => zsh(&root),
        Shell::Fish => fish(&root),
    }
}

/// Every long option the scripts offer, per node id (for tests).
pub fn long_options() -> Vec<(String, Vec<String>)> {
    let root = tree();
    nodes(&root)
        .into_iter()
        .map(|n| {
            (
                n.id.clone(),
                n.opts.iter().filter_map(|o| o.long.clone()).collect(),
            )
        })
        .collect()
}

fn header(shell: Shell, comment: &str) -> String {
    format!(
        "{comment} {} completion for dcjail.\n{comment} Generated from dcjail's clap definitions by\n{comment}   cargo run --example completions -- {}\n{comment} Do not edit: tests/completions.rs fails when this file is out of date.\n",
        shell.word(),
        shell.word()
    )
}

fn spellings(o: &Opt) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(s) = o.short {
        v.push(format!("-{s}"));
    }
    if let Some(l) = &o.long {
        v.push(format!("--{l}"));
    }
    v
}

fn bash(root: &Node) -> String {
    let all = nodes(root);
    let mut s = header(Shell::Bash, "#");
    s.push_str(
        r#"
_dcjail_add() {
    mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen "$@" -- "$cur")
}

_dcjail_files() {
    compopt -o filenames 2>/dev/null
    _dcjail_add -f
}

_dcjail_dirs() {
    compopt -o filenames 2>/dev/null
    _dcjail_add -d
}

_dcjail_commands() {
    if [[ $cur == */* ]]; then
        _dcjail_files
    else
        compopt -o filenames 2>/dev/null
        _dcjail_add -c
    fi
}

_dcjail() {
    local cur="${COMP_WORDS[COMP_CWORD]}"
    local node=dcjail start=1 value="" cmd=0 pos=0 i w
    COMPREPLY=()
    # With `=` in COMP_WORDBREAKS, `--mode=pl` arrives as `--mode` `=` `pl`.
    [[ $cur == = ]] && cur=""
    for (( i = 1; i < COMP_CWORD; i++ )); do
        w="${COMP_WORDS[i]}"
        if [[ $w == = ]]; then
            continue
        fi
        if [[ -n $value ]]; then
            value=""
            continue
        fi
        if [[ $w == -- ]]; then
            case "$node" in
"#,
    );
    let runs: Vec<&str> = all
        .iter()
        .filter(|n| n.runs_command)
        .map(|n| n.id.as_str())
        .collect();
    bash_scan(&mut s, &all, &runs);
    bash_values(&mut s, &all);
    bash_tail(&mut s, &all, &runs);
    s
}

/// The loop over the words before the cursor: where the command starts,
/// which option takes the next word, which subcommand is entered.
fn bash_scan(s: &mut String, all: &[&Node], runs: &[&str]) {
    let _ = writeln!(
        *s,
        "                {}) cmd=$((i + 1)); break ;;",
        runs.join("|")
    );
    s.push_str("            esac\n            continue\n        fi\n");
    s.push_str("        case \"$node:$w\" in\n");
    let mut takes: Vec<String> = Vec::new();
    for n in all {
        for o in n.opts.iter().filter(|o| o.value.is_some()) {
            for sp in spellings(o) {
                takes.push(format!("{}:{sp}", n.id));
            }
        }
    }
    if !takes.is_empty() {
        let _ = writeln!(s, "            {}) value=\"$w\" ;;", takes.join("|"));
    }
    s.push_str("            *:-*) ;;\n            *)\n");
    s.push_str(
        "                if (( i == start )); then\n                    case \"$node:$w\" in\n",
    );
    for n in all {
        for c in &n.children {
            let _ = writeln!(
                s,
                "                        {}:{}) node={}; start=$((i + 1)); continue ;;",
                n.id, c.word, c.id
            );
        }
    }
    s.push_str("                    esac\n                fi\n");
    if !runs.is_empty() {
        let _ = writeln!(
            s,
            "                case \"$node\" in\n                    {}) cmd=$i; break ;;\n                esac",
            runs.join("|")
        );
    }
    // A word that is neither an option, its value nor a subcommand is the
    // next positional (`import TOOL FILE`).
    s.push_str("                pos=$((pos + 1))\n");
    s.push_str("                ;;\n        esac\n    done\n");
}

/// The value of an option, completed by its kind.
fn bash_values(s: &mut String, all: &[&Node]) {
    // The value of an option.
    s.push_str("    if [[ -n $value ]]; then\n        case \"$node:$value\" in\n");
    for n in all {
        for o in &n.opts {
            let Some((_, kind)) = &o.value else { continue };
            let action = match kind {
                Kind::Words(w) => format!("_dcjail_add -W '{}'", w.join(" ")),
                Kind::Files => "_dcjail_files".to_string(),
                Kind::Dirs => "_dcjail_dirs".to_string(),
                Kind::Text => continue,
            };
            let pats: Vec<String> = spellings(o)
                .iter()
                .map(|sp| format!("{}:{sp}", n.id))
                .collect();
            let _ = writeln!(s, "            {}) {action} ;;", pats.join("|"));
        }
    }
    s.push_str("        esac\n        return 0\n    fi\n");
}

/// The command to run, option names, subcommands and positionals.
fn bash_tail(s: &mut String, all: &[&Node], runs: &[&str]) {
    // Inside the command to run: its own completion when bash-completion
    // is loaded, else file names.
    s.push_str(
        r#"    if (( cmd )); then
        if (( cmd == COMP_CWORD )); then
            _dcjail_commands
        elif declare -F _command_offset >/dev/null; then
            _command_offset "$cmd"
        else
            _dcjail_files
        fi
        return 0
    fi
    if [[ $cur == -* ]]; then
        case "$node" in
"#,
    );
    for n in all {
        let words: Vec<String> = n.opts.iter().flat_map(spellings).collect();
        if !words.is_empty() {
            let _ = writeln!(
                s,
                "            {}) _dcjail_add -W '{}' ;;",
                n.id,
                words.join(" ")
            );
        }
    }
    s.push_str("        esac\n        return 0\n    fi\n");
    s.push_str("    if (( COMP_CWORD == start )); then\n        case \"$node\" in\n");
    for n in all.iter().filter(|n| !n.children.is_empty()) {
        let words: Vec<&str> = n.children.iter().map(|c| c.word.as_str()).collect();
        let _ = writeln!(
            s,
            "            {}) _dcjail_add -W '{}' ;;",
            n.id,
            words.join(" ")
        );
    }
    s.push_str("        esac\n    fi\n    case \"$node\" in\n");
    if !runs.is_empty() {
        let _ = writeln!(s, "        {}) _dcjail_commands ;;", runs.join("|"));
    }
    s.push_str("    esac\n    case \"$node:$pos\" in\n");
    for n in all {
        for (i, (_, kind)) in n.positionals.iter().enumerate() {
            let action = match kind {
                Kind::Words(w) => format!("_dcjail_add -W '{}'", w.join(" ")),
                Kind::Files => "_dcjail_files".to_string(),
                Kind::Dirs => "_dcjail_dirs".to_string(),
                Kind::Text => continue,
            };
            let _ = writeln!(s, "        {}:{i}) {action} ;;", n.id);
        }
    }
    s.push_str("    esac\n    return 0\n}\n\ncomplete -F _dcjail dcjail\n");
}

/// Escapes text for a zsh single-quoted word inside an `_arguments` spec.
fn zq(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('[', "\\[")
        .replace(']', "\\]")
        .replace(':', "\\:")
        .replace('\'', "'\\''")
}

fn zsh_action(kind: &Kind) -> String {
    match kind {
        Kind::Words(w) => format!("({})", w.join(" ")),
        Kind::Files => "_files".to_string(),
        Kind::Dirs => "_files -/".to_string(),
        Kind::Text => " ".to_string(),
    }
}

fn zsh(root: &Node) -> String {
    let mut s = String::from("#compdef dcjail\n\n");
    s.push_str(&header(Shell::Zsh, "#"));
    for n in nodes(root) {
        let _ = writeln!(s, "\n_dcjail__{}() {{", n.id);
        if !n.children.is_empty() {
            s.push_str("    if (( CURRENT > 2 )); then\n        case $words[2] in\n");
            for c in &n.children {
                let _ = writeln!(
                    s,
                    "            ({}) shift words; (( CURRENT-- )); _dcjail__{}; return ;;",
                    c.word, c.id
                );
            }
            s.push_str("        esac\n    fi\n    local -a subs=(\n");
            for c in &n.children {
                let _ = writeln!(s, "        '{}:{}'", zq(&c.word), zq(&c.about));
            }
            s.push_str("    )\n    local ret=1\n");
            if n.runs_command {
                // The first word is a subcommand or the command to run.
                let label = if n.word.is_empty() { "dcjail" } else { &n.word };
                let _ = writeln!(
                    s,
                    "    if (( CURRENT == 2 )) && [[ $PREFIX != -* ]]; then\n        _describe -t subcommands '{} subcommand' subs && ret=0\n    fi",
                    zq(label)
                );
            }
        } else {
            s.push_str("    local ret=1\n");
        }
        s.push_str("    _arguments -s -S : \\\n");
        for o in &n.opts {
            let sp = spellings(o);
            let excl = if o.exclusive {
                "(- *)".to_string()
            } else if sp.len() > 1 {
                format!("({})", sp.join(" "))
            } else {
                String::new()
            };
            let rep = if o.repeat { "*" } else { "" };
            for one in &sp {
                let mut spec = format!("{excl}{rep}{one}");
                if o.value.is_some() && one.starts_with("--") {
                    spec.push('=');
                }
                let _ = write!(s, "        '{spec}[{}]", zq(&o.help));
                if let Some((name, kind)) = &o.value {
                    let _ = write!(s, ":{}:{}", zq(name), zsh_action(kind));
                }
                s.push_str("' \\\n");
            }
        }
        for (name, kind) in &n.positionals {
            let _ = writeln!(s, "        ':{}:{}' \\", zq(name), zsh_action(kind));
        }
        if n.runs_command {
            s.push_str("        '(-)1:command:_command_names -e' \\\n");
            s.push_str("        '*::argument:_normal' \\\n");
        } else if !n.children.is_empty() {
            let _ = writeln!(
                s,
                "        '1:{} command:{{_describe -t commands \"{} command\" subs}}' \\",
                n.word, n.word
            );
        }
        s.push_str("        && ret=0\n    return ret\n}\n");
    }
    s.push_str("\n_dcjail() {\n    _dcjail__dcjail \"$@\"\n}\n");
    s.push_str(
        "\nif [[ $funcstack[1] == _dcjail ]]; then\n    _dcjail \"$@\"\nelse\n    compdef _dcjail dcjail\nfi\n",
    );
    s
}

/// Escapes text for a fish single-quoted string.
fn fq(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\'', "\\'")
}

/// The start of fish's `__dcjail_state`, up to the `--` it handles.
const FISH_STATE_HEAD: &str = r#"
# Where the command line stands, as three lines: the mode (`opts`, `value`
# when the last word is an option waiting for its value, `command` inside
# the command to run), the node (dcjail, explain, worktree_enter…), and the
# index of the node's first word (of the command's first word in `command`).
function __dcjail_state
    set -l words (commandline -opc)
    set -l n (count $words)
    set -l node dcjail
    set -l start 2
    set -l value ''
    set -l i 1
    while test $i -lt $n
        set i (math $i + 1)
        set -l w $words[$i]
        if test -n "$value"
            set value ''
            continue
        end
        if test "$w" = --
"#;

/// The end of `__dcjail_state` and the helper functions every node uses.
const FISH_FUNCTIONS: &str = r#"        end
    end
    if test -n "$value"
        printf '%s\n' value $node $start
    else
        printf '%s\n' opts $node $start
    end
end

# The options of NODE apply (also while one waits for its value).
function __dcjail_is --argument-names node
    set -l s (__dcjail_state)
    test "$s[1]" != command -a "$s[2]" = "$node"
end

# A free word (not an option's value) is being completed in NODE.
function __dcjail_free --argument-names node
    set -l s (__dcjail_state)
    test "$s[1]" = opts -a "$s[2]" = "$node"
end

# The word being completed is the first one of NODE (a subcommand's place).
function __dcjail_at --argument-names node
    set -l s (__dcjail_state)
    test "$s[1]" = opts -a "$s[2]" = "$node" -a "$s[3]" -eq (math (count (commandline -opc)) + 1)
end

function __dcjail_in_command
    set -l s (__dcjail_state)
    test "$s[1]" = command
end

# Completes the command to run (and its arguments) as fish would on its own.
function __dcjail_complete_command
    set -l s (__dcjail_state)
    set -l words (commandline -opc)
    set -l from (count $words)
    if test "$s[1]" = command
        set from $s[3]
    else if string match -q -- '-*' (commandline -ct)
        # An option of dcjail's own, not a command name.
        return
    else
        set from (math $from + 1)
    end
    set -l line (string escape -- $words[$from..-1]) (commandline -ct)
    if test $from -gt (count $words)
        set line (commandline -ct)
    end
    complete --do-complete=(string join -- ' ' $line)
end

complete -c dcjail -f
complete -c dcjail -n __dcjail_in_command -a '(__dcjail_complete_command)'
"#;

fn fish(root: &Node) -> String {
    let all = nodes(root);
    let mut s = header(Shell::Fish, "#");
    s.push_str(FISH_STATE_HEAD);
    fish_state(&all, &mut s);
    s.push_str(FISH_FUNCTIONS);
    for n in &all {
        fish_node(n, &mut s);
    }
    s
}

/// The generated middle of `__dcjail_state`: where the command to run
/// starts, which options take a value, which words lead to a subcommand.
fn fish_state(all: &[&Node], s: &mut String) {
    let runs: Vec<&str> = all
        .iter()
        .filter(|n| n.runs_command)
        .map(|n| n.id.as_str())
        .collect();
    s.push_str("            switch $node\n");
    if !runs.is_empty() {
        let _ = writeln!(
            s,
            "                case {}\n                    printf '%s\\n' command $node (math $i + 1)\n                    return",
            runs.join(" ")
        );
    }
    s.push_str("            end\n            continue\n        end\n        switch \"$node:$w\"\n");
    let mut takes: Vec<String> = Vec::new();
    for n in all {
        for o in n.opts.iter().filter(|o| o.value.is_some()) {
            for sp in spellings(o) {
                takes.push(format!("'{}:{sp}'", n.id));
            }
        }
    }
    if !takes.is_empty() {
        let _ = writeln!(
            s,
            "            case {}\n                set value $w\n                continue",
            takes.join(" ")
        );
    }
    s.push_str("            case '*:-*'\n                continue\n        end\n");
    s.push_str("        if test $i -eq $start\n            switch \"$node:$w\"\n");
    for n in all {
        for c in &n.children {
            let _ = writeln!(
                s,
                "                case '{}:{}'\n                    set node {}\n                    set start (math $i + 1)\n                    continue",
                n.id, c.word, c.id
            );
        }
    }
    s.push_str("            end\n        end\n        switch $node\n");
    if !runs.is_empty() {
        let _ = writeln!(
            s,
            "            case {}\n                printf '%s\\n' command $node $i\n                return",
            runs.join(" ")
        );
    }
}

/// The `complete` lines of one node: its subcommands, the command it runs,
/// its positionals and its options.
fn fish_node(n: &Node, s: &mut String) {
    let _ = writeln!(
        s,
        "\n# {}",
        if n.word.is_empty() { "dcjail" } else { &n.id }
    );
    for c in &n.children {
        let _ = writeln!(
            s,
            "complete -c dcjail -n '__dcjail_at {}' -a '{}' -d '{}'",
            n.id,
            fq(&c.word),
            fq(&c.about)
        );
    }
    if n.runs_command {
        let _ = writeln!(
            s,
            "complete -c dcjail -n '__dcjail_free {}' -a '(__dcjail_complete_command)'",
            n.id
        );
    }
    for (_, kind) in n.positionals.iter().take(1) {
        let arg = match kind {
            Kind::Words(w) => format!(" -a '{}'", fq(&w.join(" "))),
            Kind::Files => " -F".to_string(),
            Kind::Dirs => " -a '(__fish_complete_directories (commandline -ct))'".to_string(),
            Kind::Text => continue,
        };
        let _ = writeln!(s, "complete -c dcjail -n '__dcjail_free {}'{arg}", n.id);
    }
    for o in &n.opts {
        let _ = write!(s, "complete -c dcjail -n '__dcjail_is {}'", n.id);
        if let Some(c) = o.short {
            let _ = write!(s, " -s {c}");
        }
        if let Some(l) = &o.long {
            let _ = write!(s, " -l {l}");
        }
        match &o.value {
            None => {}
            Some((_, Kind::Words(w))) => {
                let _ = write!(s, " -x -a '{}'", fq(&w.join(" ")));
            }
            Some((_, Kind::Files)) => s.push_str(" -r -F"),
            Some((_, Kind::Dirs)) => {
                s.push_str(" -x -a '(__fish_complete_directories (commandline -ct))'")
            }
            Some((_, Kind::Text)) => s.push_str(" -x"),
        }
        let _ = writeln!(s, " -d '{}'", fq(&o.help));
    }
}
