/**
 * Shell completion scripts, generated from the command list so they never drift from the CLI:
 * commands and topics, each command's flags, and the values of flags that take a fixed set.
 */

export interface CompletionFlag {
  name: string
  char?: string
  /** Fixed values (e.g. -o table|wide|json|yaml). */
  options?: readonly string[]
  /** Whether the flag takes a value. */
  takesValue: boolean
}

export interface CompletionCommand {
  /** Space-separated words, e.g. `war list`. */
  words: string
  flags: CompletionFlag[]
}

export const SHELLS = ['bash', 'zsh', 'fish'] as const
export type Shell = (typeof SHELLS)[number]

function table(commands: CompletionCommand[]): string {
  return commands
    .map((c) => {
      const flags = c.flags.flatMap((f) => [`--${f.name}`, ...(f.char ? [`-${f.char}`] : [])]).join(' ')
      const values = c.flags.filter((f) => f.options).flatMap((f) => [`--${f.name}`, ...(f.char ? [`-${f.char}`] : [])].map((n) => `${n}=${f.options!.join(',')}`)).join(' ')
      const valued = c.flags.filter((f) => f.takesValue).flatMap((f) => [`--${f.name}`, ...(f.char ? [`-${f.char}`] : [])]).join(' ')
      return `${c.words}|${flags}|${values}|${valued}`
    })
    .join('\n')
}

function bashBody(bin: string, commands: CompletionCommand[]): string {
  return `# ${bin} completion for bash. Load with: source <(${bin} completion bash)
_${bin}_commands='${table(commands).replace(/'/g, `'"'"'`)}'
_${bin}() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}"
  local words=() i w line c rest flags="" values="" valued="" subs=""
  # The command is the words before the first flag.
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    [[ "$w" == -* ]] && break
    words+=("$w")
  done
  local path="\${words[*]}" best=""
  while IFS= read -r line; do
    c="\${line%%|*}"
    # The longest command whose words start the line (the rest are arguments).
    if [[ "$path " == "$c "* && \${#c} -gt \${#best} ]]; then
      best="$c"; rest="\${line#*|}"; flags="\${rest%%|*}"; rest="\${rest#*|}"; values="\${rest%%|*}"; valued="\${rest#*|}"
    fi
    if [[ -z "$path" ]]; then subs+=" \${c%% *}"
    elif [[ "$c" == "$path "* ]]; then rest="\${c#"$path "}"; subs+=" \${rest%% *}"; fi
  done <<< "$_${bin}_commands"
  for w in $values; do
    if [[ "\${w%%=*}" == "$prev" ]]; then
      local opts="\${w#*=}"; COMPREPLY=($(compgen -W "\${opts//,/ }" -- "$cur")); return
    fi
  done
  for w in $valued; do [[ "$w" == "$prev" ]] && return; done
  if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "$flags" -- "$cur"))
  else COMPREPLY=($(compgen -W "$subs" -- "$cur")); fi
}
complete -o default -F _${bin} ${bin} kubectl-${bin}
`
}

export function completionScript(shell: Shell, bin: string, commands: CompletionCommand[]): string {
  const sorted = [...commands].sort((a, b) => (a.words < b.words ? -1 : 1))
  if (shell === 'bash') return bashBody(bin, sorted)
  if (shell === 'zsh') {
    return `#compdef ${bin}\n# ${bin} completion for zsh. Load with: source <(${bin} completion zsh)\nautoload -U +X bashcompinit && bashcompinit\n${bashBody(bin, sorted).split('\n').slice(1).join('\n')}`
  }
  const lines = [`# ${bin} completion for fish. Load with: ${bin} completion fish | source`, `complete -c ${bin} -f`]
  const top = [...new Set(sorted.map((c) => c.words.split(' ')[0]!))]
  lines.push(`complete -c ${bin} -n '__fish_use_subcommand' -a '${top.join(' ')}'`)
  for (const c of sorted) {
    const words = c.words.split(' ')
    if (words.length > 1) lines.push(`complete -c ${bin} -n '__fish_seen_subcommand_from ${words[0]}' -a '${words[1]}'`)
    const cond = `__fish_seen_subcommand_from ${words[words.length - 1]}`
    for (const f of c.flags) {
      const short = f.char ? ` -s ${f.char}` : ''
      const values = f.options ? ` -x -a '${f.options.join(' ')}'` : f.takesValue ? ' -r' : ''
      lines.push(`complete -c ${bin} -n '${cond}' -l ${f.name}${short}${values}`)
    }
  }
  return lines.join('\n') + '\n'
}
