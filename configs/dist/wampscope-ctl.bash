# bash completion for wampscope-ctl (commands and options as its --help lists them).
# Installed to share/bash-completion/completions/wampscope-ctl; loaded on demand by
# bash-completion, or by hand: source this file.

_wampscope_ctl()
{
    local cur prev words cword
    COMPREPLY=()
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=""
    ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}

    local commands="nodes workers traces start stop delete show stats data wire tail export mark help"
    local global="--url --realm --node --worker --authid --ticket-file --secret-file --key-file
        --timeout --ca-file --no-color --wide --help --version"
    local types="Hello Welcome Abort Challenge Authenticate Goodbye Error Publish Published
        Subscribe Subscribed Unsubscribe Unsubscribed Event Call Cancel Result Register
        Registered Unregister Unregistered Invocation Interrupt Yield Marker"

    # Values of options.
    case $prev in
    --ticket-file | --secret-file | --key-file | --ca-file | -o | --output)
        COMPREPLY=($(compgen -f -- "$cur"))
        compopt -o filenames 2>/dev/null
        return
        ;;
    --match)
        COMPREPLY=($(compgen -W "exact prefix wildcard" -- "$cur"))
        return
        ;;
    --direction)
        COMPREPLY=($(compgen -W "rx tx both" -- "$cur"))
        return
        ;;
    --dir)
        COMPREPLY=($(compgen -W "rx tx" -- "$cur"))
        return
        ;;
    --trace-level)
        COMPREPLY=($(compgen -W "message action" -- "$cur"))
        return
        ;;
    --format | -f)
        COMPREPLY=($(compgen -W "jsonl chrome" -- "$cur"))
        return
        ;;
    --type)
        COMPREPLY=($(compgen -W "$types" -- "$cur"))
        return
        ;;
    --url | --realm | --node | --worker | --authid | --timeout | --uri | --session | --authrole | \
        --limit | --max-bytes | --duration | --max-records | --batching-period | --options | \
        --from | --to | --width | -n | --lines | --page | --meta)
        return
        ;;
    esac

    # The command: the first word that is neither an option nor a global option's value.
    local i cmd=""
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
        --url | --realm | --node | --worker | --authid | --ticket-file | --secret-file | \
            --key-file | --timeout | --ca-file)
            ((i++))
            ;;
        -*) ;;
        *)
            cmd=${COMP_WORDS[i]}
            break
            ;;
        esac
    done

    if [[ -z $cmd ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "$global" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$commands" -- "$cur"))
        fi
        return
    fi

    local opts=""
    case $cmd in
    nodes | workers | show | stop) opts="--json" ;;
    traces) opts="--running --json" ;;
    start)
        opts="--realm --uri --match --type --direction --session --authid --authrole --payload
            --no-payload --limit --max-bytes --duration --max-records --batching-period --persist
            --trace-level --options --json"
        ;;
    delete) opts="" ;;
    stats) opts="--watch --json" ;;
    data) opts="--from --to --limit --json --width --type --session --uri --dir" ;;
    wire) opts="--from --limit --json --width --type --session --uri --dir" ;;
    tail) opts="-n --lines --json --width --type --session --uri --dir" ;;
    export) opts="--format -o --page" ;;
    mark) opts="--meta --json" ;;
    help)
        COMPREPLY=($(compgen -W "$commands" -- "$cur"))
        return
        ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts --wide --no-color --help" -- "$cur"))
    fi
}

complete -F _wampscope_ctl wampscope-ctl
