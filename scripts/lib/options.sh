# options.sh - the `--name VALUE` command lines of the benchmark scripts,
# sourced by them (POSIX sh).
#
# options_parse PROG HELP SPEC "$@": SPEC lists "name:var" words; each
# `--name VALUE` sets the shell variable var to VALUE. HELP is the sed line
# range of the script's header comment that -h/--help prints (then exit 0),
# or "" when the script has no --help. Anything else is a usage error:
# "PROG: unknown argument 'ARG'" and exit 2.
options_parse() {
    _prog=$1 _help=$2 _spec=$3
    shift 3
    while [ $# -gt 0 ]; do
        if [ -n "$_help" ] && { [ "$1" = -h ] || [ "$1" = --help ]; }; then
            sed -n "${_help}p" "$0" | sed 's/^# \{0,1\}//'
            exit 0
        fi
        _var=""
        for _pair in $_spec; do
            [ "$1" = "--${_pair%%:*}" ] && _var=${_pair#*:}
        done
        if [ -z "$_var" ] || [ $# -lt 2 ]; then
            echo "$_prog: unknown argument '$1'" >&2
            exit 2
        fi
        eval "$_var=\$2"
        shift 2
    done
}
