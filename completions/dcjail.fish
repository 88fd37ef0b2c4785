# fish completion for dcjail.
# Generated from dcjail's clap definitions by
#   cargo run --example completions -- fish
# Do not edit: tests/completions.rs fails when this file is out of date.

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
            switch $node
                case dcjail explain
                    printf '%s\n' command $node (math $i + 1)
                    return
            end
            continue
        end
        switch "$node:$w"
            case 'dcjail:--policy' 'dcjail:--policy-fd' 'dcjail:--policy-format' 'dcjail:--mode' 'dcjail:--tool' 'dcjail:--permission' 'dcjail:--rule' 'dcjail:--approval' 'dcjail:--classifier' 'dcjail:--path' 'dcjail:--worktree' 'dcjail:--plan-card' 'dcjail:--sandbox-mode' 'dcjail:--backend' 'dcjail:--workspace' 'dcjail:--allow-read' 'dcjail:--deny-read' 'dcjail:--allow-write' 'dcjail:--deny-write' 'dcjail:--net' 'dcjail:--allow-domain' 'dcjail:--deny-domain' 'dcjail:--timeout' 'dcjail:--env-pass' 'dcjail:--env-deny' 'dcjail:--report' 'dcjail:--events' 'explain:--policy' 'explain:--policy-fd' 'explain:--policy-format' 'explain:--mode' 'explain:--tool' 'explain:--permission' 'explain:--rule' 'explain:--approval' 'explain:--classifier' 'explain:--path' 'explain:--worktree' 'explain:--plan-card' 'explain:--sandbox-mode' 'explain:--backend' 'explain:--workspace' 'explain:--allow-read' 'explain:--deny-read' 'explain:--allow-write' 'explain:--deny-write' 'explain:--net' 'explain:--allow-domain' 'explain:--deny-domain' 'explain:--timeout' 'explain:--env-pass' 'explain:--env-deny' 'explain:--report' 'explain:--events' 'explain:--denials' 'worktree_enter:--base' 'worktree_enter:--policy' 'worktree_enter:--mode' 'worktree_enter:--plan-card' 'hook:--policy' 'hook:--policy-format' 'hook:--settings'
                set value $w
                continue
            case '*:-*'
                continue
        end
        if test $i -eq $start
            switch "$node:$w"
                case 'dcjail:explain'
                    set node explain
                    set start (math $i + 1)
                    continue
                case 'dcjail:doctor'
                    set node doctor
                    set start (math $i + 1)
                    continue
                case 'dcjail:worktree'
                    set node worktree
                    set start (math $i + 1)
                    continue
                case 'dcjail:hook'
                    set node hook
                    set start (math $i + 1)
                    continue
                case 'dcjail:import'
                    set node import
                    set start (math $i + 1)
                    continue
                case 'dcjail:setup'
                    set node setup
                    set start (math $i + 1)
                    continue
                case 'dcjail:help'
                    set node help
                    set start (math $i + 1)
                    continue
                case 'worktree:enter'
                    set node worktree_enter
                    set start (math $i + 1)
                    continue
                case 'worktree:exit'
                    set node worktree_exit
                    set start (math $i + 1)
                    continue
                case 'worktree:help'
                    set node worktree_help
                    set start (math $i + 1)
                    continue
                case 'worktree_help:enter'
                    set node worktree_help_enter
                    set start (math $i + 1)
                    continue
                case 'worktree_help:exit'
                    set node worktree_help_exit
                    set start (math $i + 1)
                    continue
                case 'worktree_help:help'
                    set node worktree_help_help
                    set start (math $i + 1)
                    continue
                case 'setup:apparmor'
                    set node setup_apparmor
                    set start (math $i + 1)
                    continue
                case 'setup:help'
                    set node setup_help
                    set start (math $i + 1)
                    continue
                case 'setup_help:apparmor'
                    set node setup_help_apparmor
                    set start (math $i + 1)
                    continue
                case 'setup_help:help'
                    set node setup_help_help
                    set start (math $i + 1)
                    continue
            end
        end
        switch $node
            case dcjail explain
                printf '%s\n' command $node $i
                return
        end
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

# dcjail
complete -c dcjail -n '__dcjail_at dcjail' -a 'explain' -d 'print the decision and the enforcement plan; run nothing'
complete -c dcjail -n '__dcjail_at dcjail' -a 'doctor' -d 'what this machine can enforce, backend by backend'
complete -c dcjail -n '__dcjail_at dcjail' -a 'worktree' -d 'make a throwaway git worktree, or fold one back'
complete -c dcjail -n '__dcjail_at dcjail' -a 'hook' -d 'answer an agent\'s PreToolUse hook: shell calls run under dcjail, file tools are held to the same policy'
complete -c dcjail -n '__dcjail_at dcjail' -a 'import' -d 'print the dcjail policy (TOML) equivalent to another tool\'s settings'
complete -c dcjail -n '__dcjail_at dcjail' -a 'setup' -d 'make this machine able to run what dcjail needs'
complete -c dcjail -n '__dcjail_at dcjail' -a 'help' -d 'print the help of dcjail, or of one subcommand'
complete -c dcjail -n '__dcjail_free dcjail' -a '(__dcjail_complete_command)'
complete -c dcjail -n '__dcjail_is dcjail' -l policy -r -F -d 'Policy file (TOML or JSON); also from env DCJAIL_POLICY. Default: the embedded profile'
complete -c dcjail -n '__dcjail_is dcjail' -l policy-fd -x -d 'Read the policy from inherited descriptor N (3 or above) instead of a file'
complete -c dcjail -n '__dcjail_is dcjail' -l policy-format -x -a 'dcjail srt claude-code codex' -d 'How to read the policy: dcjail, srt, claude-code, codex (another tool\'s settings)'
complete -c dcjail -n '__dcjail_is dcjail' -l mode -x -a 'default acceptEdits plan auto dontAsk bypassPermissions' -d 'Agent mode: default, acceptEdits, plan, auto, dontAsk, bypassPermissions'
complete -c dcjail -n '__dcjail_is dcjail' -l tool -x -a 'read edit write bash net' -d 'Kind of call: read, edit, write, bash, net'
complete -c dcjail -n '__dcjail_is dcjail' -l permission -x -a 'allow ask deny' -d 'Permission outcome: allow, ask, deny'
complete -c dcjail -n '__dcjail_is dcjail' -l rule -x -d 'The permission rule that matched (quoted in messages)'
complete -c dcjail -n '__dcjail_is dcjail' -l approval -x -a 'none granted rejected' -d 'The user\'s answer: none, granted, rejected'
complete -c dcjail -n '__dcjail_is dcjail' -l classifier -x -a 'allow soft_deny hard_deny' -d 'Auto-mode classifier verdict: allow, soft_deny, hard_deny'
complete -c dcjail -n '__dcjail_is dcjail' -l path -r -F -d 'A path the call says it will touch (repeatable)'
complete -c dcjail -n '__dcjail_is dcjail' -l worktree -x -a '(__fish_complete_directories (commandline -ct))' -d 'Run inside this git worktree (it becomes the cwd)'
complete -c dcjail -n '__dcjail_is dcjail' -l plan-card -r -F -d 'Append plan-blocked calls to this file'
complete -c dcjail -n '__dcjail_is dcjail' -l no-sandbox -d 'Turn the sandbox off (sandbox.enabled = false)'
complete -c dcjail -n '__dcjail_is dcjail' -l sandbox-mode -x -a 'read-only workspace-write danger-full-access' -d 'Filesystem access: read-only, workspace-write, danger-full-access'
complete -c dcjail -n '__dcjail_is dcjail' -l backend -x -a 'auto bwrap landlock seatbelt' -d 'Sandbox backend: auto, bwrap, landlock, seatbelt'
complete -c dcjail -n '__dcjail_is dcjail' -l workspace -x -a '(__fish_complete_directories (commandline -ct))' -d 'Workspace root (default: the current directory)'
complete -c dcjail -n '__dcjail_is dcjail' -l allow-read -r -F -d 'Re-allow reading P inside a deny_read path (repeatable)'
complete -c dcjail -n '__dcjail_is dcjail' -l deny-read -r -F -d 'Make P unreadable; globs allowed (repeatable)'
complete -c dcjail -n '__dcjail_is dcjail' -l allow-write -r -F -d 'Add P to the writable roots (repeatable)'
complete -c dcjail -n '__dcjail_is dcjail' -l deny-write -r -F -d 'Make P unwritable; globs allowed (repeatable)'
complete -c dcjail -n '__dcjail_is dcjail' -l no-protect-defaults -d 'Do not protect the built-in paths (.git/hooks, .bashrc, ...) inside writable roots'
complete -c dcjail -n '__dcjail_is dcjail' -l net -x -a 'none allowlist full' -d 'Network: none, allowlist, full'
complete -c dcjail -n '__dcjail_is dcjail' -l allow-domain -x -d 'Allow this domain through the proxy (repeatable); without --net it means --net allowlist'
complete -c dcjail -n '__dcjail_is dcjail' -l deny-domain -x -d 'Deny this domain, checked first (repeatable)'
complete -c dcjail -n '__dcjail_is dcjail' -l allow-unix-sockets -d 'Let the command create unix sockets (ssh-agent, gpg-agent...): any socket file it sees is reachable'
complete -c dcjail -n '__dcjail_is dcjail' -l timeout -x -d 'Kill the whole command tree after DURATION (exit 124): 1.5, 90s, 5m, 1h, 2d; 0 = none'
complete -c dcjail -n '__dcjail_is dcjail' -l env-pass -x -d 'Let the command inherit variable NAME (a glob allowed) although it looks like a credential (repeatable)'
complete -c dcjail -n '__dcjail_is dcjail' -l env-deny -x -d 'Remove variable NAME (a glob allowed) from the command\'s environment; beats --env-pass (repeatable)'
complete -c dcjail -n '__dcjail_is dcjail' -l report -r -F -d 'Write the run\'s JSON report to FILE'
complete -c dcjail -n '__dcjail_is dcjail' -l events -x -d 'Stream each denial as one JSON line to descriptor FD while the command runs'
complete -c dcjail -n '__dcjail_is dcjail' -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dcjail -n '__dcjail_is dcjail' -s V -l version -d 'Print version'

# explain
complete -c dcjail -n '__dcjail_free explain' -a '(__dcjail_complete_command)'
complete -c dcjail -n '__dcjail_is explain' -l policy -r -F -d 'Policy file (TOML or JSON); also from env DCJAIL_POLICY. Default: the embedded profile'
complete -c dcjail -n '__dcjail_is explain' -l policy-fd -x -d 'Read the policy from inherited descriptor N (3 or above) instead of a file'
complete -c dcjail -n '__dcjail_is explain' -l policy-format -x -a 'dcjail srt claude-code codex' -d 'How to read the policy: dcjail, srt, claude-code, codex (another tool\'s settings)'
complete -c dcjail -n '__dcjail_is explain' -l mode -x -a 'default acceptEdits plan auto dontAsk bypassPermissions' -d 'Agent mode: default, acceptEdits, plan, auto, dontAsk, bypassPermissions'
complete -c dcjail -n '__dcjail_is explain' -l tool -x -a 'read edit write bash net' -d 'Kind of call: read, edit, write, bash, net'
complete -c dcjail -n '__dcjail_is explain' -l permission -x -a 'allow ask deny' -d 'Permission outcome: allow, ask, deny'
complete -c dcjail -n '__dcjail_is explain' -l rule -x -d 'The permission rule that matched (quoted in messages)'
complete -c dcjail -n '__dcjail_is explain' -l approval -x -a 'none granted rejected' -d 'The user\'s answer: none, granted, rejected'
complete -c dcjail -n '__dcjail_is explain' -l classifier -x -a 'allow soft_deny hard_deny' -d 'Auto-mode classifier verdict: allow, soft_deny, hard_deny'
complete -c dcjail -n '__dcjail_is explain' -l path -r -F -d 'A path the call says it will touch (repeatable)'
complete -c dcjail -n '__dcjail_is explain' -l worktree -x -a '(__fish_complete_directories (commandline -ct))' -d 'Run inside this git worktree (it becomes the cwd)'
complete -c dcjail -n '__dcjail_is explain' -l plan-card -r -F -d 'Append plan-blocked calls to this file'
complete -c dcjail -n '__dcjail_is explain' -l no-sandbox -d 'Turn the sandbox off (sandbox.enabled = false)'
complete -c dcjail -n '__dcjail_is explain' -l sandbox-mode -x -a 'read-only workspace-write danger-full-access' -d 'Filesystem access: read-only, workspace-write, danger-full-access'
complete -c dcjail -n '__dcjail_is explain' -l backend -x -a 'auto bwrap landlock seatbelt' -d 'Sandbox backend: auto, bwrap, landlock, seatbelt'
complete -c dcjail -n '__dcjail_is explain' -l workspace -x -a '(__fish_complete_directories (commandline -ct))' -d 'Workspace root (default: the current directory)'
complete -c dcjail -n '__dcjail_is explain' -l allow-read -r -F -d 'Re-allow reading P inside a deny_read path (repeatable)'
complete -c dcjail -n '__dcjail_is explain' -l deny-read -r -F -d 'Make P unreadable; globs allowed (repeatable)'
complete -c dcjail -n '__dcjail_is explain' -l allow-write -r -F -d 'Add P to the writable roots (repeatable)'
complete -c dcjail -n '__dcjail_is explain' -l deny-write -r -F -d 'Make P unwritable; globs allowed (repeatable)'
complete -c dcjail -n '__dcjail_is explain' -l no-protect-defaults -d 'Do not protect the built-in paths (.git/hooks, .bashrc, ...) inside writable roots'
complete -c dcjail -n '__dcjail_is explain' -l net -x -a 'none allowlist full' -d 'Network: none, allowlist, full'
complete -c dcjail -n '__dcjail_is explain' -l allow-domain -x -d 'Allow this domain through the proxy (repeatable); without --net it means --net allowlist'
complete -c dcjail -n '__dcjail_is explain' -l deny-domain -x -d 'Deny this domain, checked first (repeatable)'
complete -c dcjail -n '__dcjail_is explain' -l allow-unix-sockets -d 'Let the command create unix sockets (ssh-agent, gpg-agent...): any socket file it sees is reachable'
complete -c dcjail -n '__dcjail_is explain' -l timeout -x -d 'Kill the whole command tree after DURATION (exit 124): 1.5, 90s, 5m, 1h, 2d; 0 = none'
complete -c dcjail -n '__dcjail_is explain' -l env-pass -x -d 'Let the command inherit variable NAME (a glob allowed) although it looks like a credential (repeatable)'
complete -c dcjail -n '__dcjail_is explain' -l env-deny -x -d 'Remove variable NAME (a glob allowed) from the command\'s environment; beats --env-pass (repeatable)'
complete -c dcjail -n '__dcjail_is explain' -l report -r -F -d 'Write the run\'s JSON report to FILE'
complete -c dcjail -n '__dcjail_is explain' -l events -x -d 'Stream each denial as one JSON line to descriptor FD while the command runs'
complete -c dcjail -n '__dcjail_is explain' -l denials -r -F -d 'Print the smallest policy change that would have let the run of REPORT (a --report file) through'
complete -c dcjail -n '__dcjail_is explain' -s h -l help -d 'Print help'

# doctor
complete -c dcjail -n '__dcjail_is doctor' -l json -d 'Machine-readable output'
complete -c dcjail -n '__dcjail_is doctor' -s h -l help -d 'Print help'

# worktree
complete -c dcjail -n '__dcjail_at worktree' -a 'enter' -d 'Make a fresh git worktree on a new branch dc-wt-<id>; print its path'
complete -c dcjail -n '__dcjail_at worktree' -a 'exit' -d 'Commit the worktree\'s changes on its branch and remove it, or remove it (and its branch) when nothing changed'
complete -c dcjail -n '__dcjail_at worktree' -a 'help' -d 'Print this message or the help of the given subcommand(s)'
complete -c dcjail -n '__dcjail_is worktree' -s h -l help -d 'Print help'

# worktree_enter
complete -c dcjail -n '__dcjail_is worktree_enter' -l base -x -d 'Branch (or commit) to start from; default: HEAD'
complete -c dcjail -n '__dcjail_is worktree_enter' -l json -d 'Print {path, branch, base, base_commit} as JSON'
complete -c dcjail -n '__dcjail_is worktree_enter' -l policy -r -F -d 'Policy file (TOML or JSON); also from env DCJAIL_POLICY. Default: the embedded profile'
complete -c dcjail -n '__dcjail_is worktree_enter' -l mode -x -a 'default acceptEdits plan auto dontAsk bypassPermissions' -d 'Agent mode: default, acceptEdits, plan, auto, dontAsk, bypassPermissions'
complete -c dcjail -n '__dcjail_is worktree_enter' -l plan-card -r -F -d 'Append plan-blocked calls to this file'
complete -c dcjail -n '__dcjail_is worktree_enter' -s h -l help -d 'Print help'

# worktree_exit
complete -c dcjail -n '__dcjail_free worktree_exit' -a '(__fish_complete_directories (commandline -ct))'
complete -c dcjail -n '__dcjail_is worktree_exit' -l json -d 'Print {path, branch, committed, commit, files, removed, branch_kept} as JSON'
complete -c dcjail -n '__dcjail_is worktree_exit' -s h -l help -d 'Print help'

# worktree_help
complete -c dcjail -n '__dcjail_at worktree_help' -a 'enter' -d 'Make a fresh git worktree on a new branch dc-wt-<id>; print its path'
complete -c dcjail -n '__dcjail_at worktree_help' -a 'exit' -d 'Commit the worktree\'s changes on its branch and remove it, or remove it (and its branch) when nothing changed'
complete -c dcjail -n '__dcjail_at worktree_help' -a 'help' -d 'Print this message or the help of the given subcommand(s)'

# worktree_help_enter

# worktree_help_exit

# worktree_help_help

# hook
complete -c dcjail -n '__dcjail_free hook' -a 'claude-code codex'
complete -c dcjail -n '__dcjail_is hook' -l policy -r -F -d 'Policy for the agent\'s calls; also from env DCJAIL_POLICY. Default: the project writable, protected paths held, no network'
complete -c dcjail -n '__dcjail_is hook' -l policy-format -x -a 'dcjail srt claude-code codex' -d 'How to read the policy file: dcjail, srt, claude-code, codex'
complete -c dcjail -n '__dcjail_is hook' -l ask -d 'Answer "ask" for every Bash call dcjail would run (Claude Code only): the user confirms each one'
complete -c dcjail -n '__dcjail_is hook' -l check -d 'Check the agent\'s settings (the hook is there, and trusted for Codex), then run a sample call through dcjail'
complete -c dcjail -n '__dcjail_is hook' -l install -d 'Write the integration into the agent\'s settings: Claude Code\'s shell prefix and hook, Codex\'s hook and its trust entry'
complete -c dcjail -n '__dcjail_is hook' -l settings -r -F -d 'The settings file for --install and --check. Default: ~/.claude/settings.json ($CLAUDE_CONFIG_DIR), ~/.codex/config.toml ($CODEX_HOME)'
complete -c dcjail -n '__dcjail_is hook' -s h -l help -d 'Print help (see more with \'--help\')'

# import
complete -c dcjail -n '__dcjail_free import' -a 'srt claude-code codex'
complete -c dcjail -n '__dcjail_is import' -s h -l help -d 'Print help (see more with \'--help\')'

# setup
complete -c dcjail -n '__dcjail_at setup' -a 'apparmor' -d 'Print the AppArmor profile that lets dcjail\'s bwrap create user namespaces (Ubuntu 24.04 and later)'
complete -c dcjail -n '__dcjail_at setup' -a 'help' -d 'Print this message or the help of the given subcommand(s)'
complete -c dcjail -n '__dcjail_is setup' -s h -l help -d 'Print help'

# setup_apparmor
complete -c dcjail -n '__dcjail_is setup_apparmor' -l install -d 'As root: check it with apparmor_parser, install it as /etc/apparmor.d/dcjail-bwrap and load it'
complete -c dcjail -n '__dcjail_is setup_apparmor' -s h -l help -d 'Print help'

# setup_help
complete -c dcjail -n '__dcjail_at setup_help' -a 'apparmor' -d 'Print the AppArmor profile that lets dcjail\'s bwrap create user namespaces (Ubuntu 24.04 and later)'
complete -c dcjail -n '__dcjail_at setup_help' -a 'help' -d 'Print this message or the help of the given subcommand(s)'

# setup_help_apparmor

# setup_help_help

# help
complete -c dcjail -n '__dcjail_free help' -a 'explain doctor worktree hook import setup help'
complete -c dcjail -n '__dcjail_is help' -s h -l help -d 'Print help'
