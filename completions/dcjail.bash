# bash completion for dcjail.
# Generated from dcjail's clap definitions by
#   cargo run --example completions -- bash
# Do not edit: tests/completions.rs fails when this file is out of date.

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
                dcjail|explain) cmd=$((i + 1)); break ;;
            esac
            continue
        fi
        case "$node:$w" in
            dcjail:--policy|dcjail:--policy-fd|dcjail:--policy-format|dcjail:--mode|dcjail:--tool|dcjail:--permission|dcjail:--rule|dcjail:--approval|dcjail:--classifier|dcjail:--path|dcjail:--worktree|dcjail:--plan-card|dcjail:--sandbox-mode|dcjail:--backend|dcjail:--workspace|dcjail:--allow-read|dcjail:--deny-read|dcjail:--allow-write|dcjail:--deny-write|dcjail:--net|dcjail:--allow-domain|dcjail:--deny-domain|dcjail:--timeout|dcjail:--env-pass|dcjail:--env-deny|dcjail:--report|dcjail:--events|explain:--policy|explain:--policy-fd|explain:--policy-format|explain:--mode|explain:--tool|explain:--permission|explain:--rule|explain:--approval|explain:--classifier|explain:--path|explain:--worktree|explain:--plan-card|explain:--sandbox-mode|explain:--backend|explain:--workspace|explain:--allow-read|explain:--deny-read|explain:--allow-write|explain:--deny-write|explain:--net|explain:--allow-domain|explain:--deny-domain|explain:--timeout|explain:--env-pass|explain:--env-deny|explain:--report|explain:--events|explain:--denials|worktree_enter:--base|worktree_enter:--policy|worktree_enter:--mode|worktree_enter:--plan-card|hook:--policy|hook:--policy-format|hook:--settings) value="$w" ;;
            *:-*) ;;
            *)
                if (( i == start )); then
                    case "$node:$w" in
                        dcjail:explain) node=explain; start=$((i + 1)); continue ;;
                        dcjail:doctor) node=doctor; start=$((i + 1)); continue ;;
                        dcjail:worktree) node=worktree; start=$((i + 1)); continue ;;
                        dcjail:hook) node=hook; start=$((i + 1)); continue ;;
                        dcjail:import) node=import; start=$((i + 1)); continue ;;
                        dcjail:setup) node=setup; start=$((i + 1)); continue ;;
                        dcjail:help) node=help; start=$((i + 1)); continue ;;
                        worktree:enter) node=worktree_enter; start=$((i + 1)); continue ;;
                        worktree:exit) node=worktree_exit; start=$((i + 1)); continue ;;
                        worktree:help) node=worktree_help; start=$((i + 1)); continue ;;
                        worktree_help:enter) node=worktree_help_enter; start=$((i + 1)); continue ;;
                        worktree_help:exit) node=worktree_help_exit; start=$((i + 1)); continue ;;
                        worktree_help:help) node=worktree_help_help; start=$((i + 1)); continue ;;
                        setup:apparmor) node=setup_apparmor; start=$((i + 1)); continue ;;
                        setup:help) node=setup_help; start=$((i + 1)); continue ;;
                        setup_help:apparmor) node=setup_help_apparmor; start=$((i + 1)); continue ;;
                        setup_help:help) node=setup_help_help; start=$((i + 1)); continue ;;
                    esac
                fi
                case "$node" in
                    dcjail|explain) cmd=$i; break ;;
                esac
                pos=$((pos + 1))
                ;;
        esac
    done
    if [[ -n $value ]]; then
        case "$node:$value" in
            dcjail:--policy) _dcjail_files ;;
            dcjail:--policy-format) _dcjail_add -W 'dcjail srt claude-code codex' ;;
            dcjail:--mode) _dcjail_add -W 'default acceptEdits plan auto dontAsk bypassPermissions' ;;
            dcjail:--tool) _dcjail_add -W 'read edit write bash net' ;;
            dcjail:--permission) _dcjail_add -W 'allow ask deny' ;;
            dcjail:--approval) _dcjail_add -W 'none granted rejected' ;;
            dcjail:--classifier) _dcjail_add -W 'allow soft_deny hard_deny' ;;
            dcjail:--path) _dcjail_files ;;
            dcjail:--worktree) _dcjail_dirs ;;
            dcjail:--plan-card) _dcjail_files ;;
            dcjail:--sandbox-mode) _dcjail_add -W 'read-only workspace-write danger-full-access' ;;
            dcjail:--backend) _dcjail_add -W 'auto bwrap landlock seatbelt' ;;
            dcjail:--workspace) _dcjail_dirs ;;
            dcjail:--allow-read) _dcjail_files ;;
            dcjail:--deny-read) _dcjail_files ;;
            dcjail:--allow-write) _dcjail_files ;;
            dcjail:--deny-write) _dcjail_files ;;
            dcjail:--net) _dcjail_add -W 'none allowlist full' ;;
            dcjail:--report) _dcjail_files ;;
            explain:--policy) _dcjail_files ;;
            explain:--policy-format) _dcjail_add -W 'dcjail srt claude-code codex' ;;
            explain:--mode) _dcjail_add -W 'default acceptEdits plan auto dontAsk bypassPermissions' ;;
            explain:--tool) _dcjail_add -W 'read edit write bash net' ;;
            explain:--permission) _dcjail_add -W 'allow ask deny' ;;
            explain:--approval) _dcjail_add -W 'none granted rejected' ;;
            explain:--classifier) _dcjail_add -W 'allow soft_deny hard_deny' ;;
            explain:--path) _dcjail_files ;;
            explain:--worktree) _dcjail_dirs ;;
            explain:--plan-card) _dcjail_files ;;
            explain:--sandbox-mode) _dcjail_add -W 'read-only workspace-write danger-full-access' ;;
            explain:--backend) _dcjail_add -W 'auto bwrap landlock seatbelt' ;;
            explain:--workspace) _dcjail_dirs ;;
            explain:--allow-read) _dcjail_files ;;
            explain:--deny-read) _dcjail_files ;;
            explain:--allow-write) _dcjail_files ;;
            explain:--deny-write) _dcjail_files ;;
            explain:--net) _dcjail_add -W 'none allowlist full' ;;
            explain:--report) _dcjail_files ;;
            explain:--denials) _dcjail_files ;;
            worktree_enter:--policy) _dcjail_files ;;
            worktree_enter:--mode) _dcjail_add -W 'default acceptEdits plan auto dontAsk bypassPermissions' ;;
            worktree_enter:--plan-card) _dcjail_files ;;
            hook:--policy) _dcjail_files ;;
            hook:--policy-format) _dcjail_add -W 'dcjail srt claude-code codex' ;;
            hook:--settings) _dcjail_files ;;
        esac
        return 0
    fi
    if (( cmd )); then
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
            dcjail) _dcjail_add -W '--policy --policy-fd --policy-format --mode --tool --permission --rule --approval --classifier --path --worktree --plan-card --no-sandbox --sandbox-mode --backend --workspace --allow-read --deny-read --allow-write --deny-write --no-protect-defaults --net --allow-domain --deny-domain --allow-unix-sockets --timeout --env-pass --env-deny --report --events -h --help -V --version' ;;
            explain) _dcjail_add -W '--policy --policy-fd --policy-format --mode --tool --permission --rule --approval --classifier --path --worktree --plan-card --no-sandbox --sandbox-mode --backend --workspace --allow-read --deny-read --allow-write --deny-write --no-protect-defaults --net --allow-domain --deny-domain --allow-unix-sockets --timeout --env-pass --env-deny --report --events --denials -h --help' ;;
            doctor) _dcjail_add -W '--json -h --help' ;;
            worktree) _dcjail_add -W '-h --help' ;;
            worktree_enter) _dcjail_add -W '--base --json --policy --mode --plan-card -h --help' ;;
            worktree_exit) _dcjail_add -W '--json -h --help' ;;
            hook) _dcjail_add -W '--policy --policy-format --ask --check --install --settings -h --help' ;;
            import) _dcjail_add -W '-h --help' ;;
            setup) _dcjail_add -W '-h --help' ;;
            setup_apparmor) _dcjail_add -W '--install -h --help' ;;
            help) _dcjail_add -W '-h --help' ;;
        esac
        return 0
    fi
    if (( COMP_CWORD == start )); then
        case "$node" in
            dcjail) _dcjail_add -W 'explain doctor worktree hook import setup help' ;;
            worktree) _dcjail_add -W 'enter exit help' ;;
            worktree_help) _dcjail_add -W 'enter exit help' ;;
            setup) _dcjail_add -W 'apparmor help' ;;
            setup_help) _dcjail_add -W 'apparmor help' ;;
        esac
    fi
    case "$node" in
        dcjail|explain) _dcjail_commands ;;
    esac
    case "$node:$pos" in
        worktree_exit:0) _dcjail_dirs ;;
        hook:0) _dcjail_add -W 'claude-code codex' ;;
        import:0) _dcjail_add -W 'srt claude-code codex' ;;
        import:1) _dcjail_files ;;
        help:0) _dcjail_add -W 'explain doctor worktree hook import setup help' ;;
    esac
    return 0
}

complete -F _dcjail dcjail
