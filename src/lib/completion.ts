/**
 * Shell completion, one engine for every shell and for kubectl: the bash, zsh and fish scripts (and
 * kubectl, through the kubectl_complete-meshvm plugin) hand the words typed so far to the hidden
 * `meshvm __complete` command, which answers from the command list (commands, flags, fixed values,
 * -o formats) and, for namespaces, contexts, WorkloadGroup and registration names, from the kubeconfig
 * and the cluster within a short time limit (completion-fetch.ts). Cobra works the same way.
 */

export interface CompletionFlag {
  name: string
  char?: string
  /** Fixed values (e.g. --source all|war|workloadentry). */
  options?: readonly string[]
  /** Whether the flag takes a value. */
  takesValue: boolean
}

export interface CompletionCommand {
  /** Space-separated words, e.g. `war list`. */
  words: string
  flags: CompletionFlag[]
  /** Fixed values of the first argument (e.g. completion's shells). */
  argOptions?: readonly string[]
}

export const SHELLS = ['bash', 'zsh', 'fish'] as const
export type Shell = (typeof SHELLS)[number]

export type Dynamic = 'namespaces' | 'contexts' | 'workloadgroups' | 'registrations'

export interface Completion {
  /** Candidates, already filtered by what was typed. */
  values: string[]
  /** Values to read from the kubeconfig or the cluster (then filtered by `prefix`). */
  dynamic?: Dynamic
  /** What the typed word must start with; candidates are whole words (with `--flag=` prepended when typed so). */
  prefix: string
  /** The word is a path: let the shell complete file names. */
  files?: boolean
}

// Flags whose values come from the cluster or the kubeconfig, and positional arguments that name objects.
const FLAG_DYNAMIC: Record<string, Dynamic> = {namespace: 'namespaces', context: 'contexts', group: 'workloadgroups'}
const FILE_FLAGS = new Set(['kubeconfig', 'filename', 'output-dir', 'bundle'])
const ARG_DYNAMIC: Record<string, Dynamic> = {
  'war describe': 'registrations',
  'war delete': 'registrations',
  'war rollout': 'workloadgroups',
  onboard: 'workloadgroups',
  bundle: 'workloadgroups',
  precheck: 'workloadgroups',
}
const MANY_ARGS = new Set(['war describe', 'war delete'])
/** -o values offered (those with `=` take a template after them). */
export const OUTPUT_VALUES = ['table', 'wide', 'json', 'yaml', 'name', 'jsonpath=', 'jsonpath-as-json=', 'custom-columns=']

/** What to offer for the last word of `words` (the words after the program name; the last may be ''). */
export function complete(words: string[], commands: CompletionCommand[]): Completion {
  const cur = words.at(-1) ?? ''
  const before = words.slice(0, -1)
  // The command is the longest run of leading non-flag words that names one.
  let command: CompletionCommand | undefined
  let used = 0
  for (let n = 1; n <= before.length && !before[n - 1]!.startsWith('-'); n++) {
    const c = commands.find((x) => x.words === before.slice(0, n).join(' '))
    if (c) {
      command = c
      used = n
    }
  }
  const flagNamed = (word: string): CompletionFlag | undefined =>
    command?.flags.find((f) => (word.startsWith('--') ? f.name === word.slice(2) : f.char !== undefined && word === `-${f.char}`))
  // Which words are arguments (not flags, not flag values)?
  const args: string[] = []
  let pendingFlag: CompletionFlag | undefined
  for (const w of before.slice(used)) {
    if (pendingFlag) pendingFlag = undefined
    else if (w.startsWith('-') && !w.includes('=')) {
      const f = flagNamed(w)
      if (f?.takesValue) pendingFlag = f
    } else if (!w.startsWith('-')) args.push(w)
  }
  const filter = (values: readonly string[], prefix = cur): Completion => ({values: values.filter((v) => v.startsWith(prefix)), prefix})

  // --flag=value
  const eq = cur.startsWith('--') ? cur.indexOf('=') : -1
  if (eq > 0) {
    const f = flagNamed(cur.slice(0, eq))
    if (f) return valuesFor(f, cur.slice(eq + 1), cur.slice(0, eq + 1))
  }
  if (pendingFlag) return valuesFor(pendingFlag, cur, '')
  if (cur.startsWith('-')) {
    return filter(command ? command.flags.flatMap((f) => [`--${f.name}`, ...(f.char ? [`-${f.char}`] : [])]) : ['--help', '--version'])
  }
  const nextWords = (typed: string): string[] => {
    const next = new Set<string>()
    for (const c of commands) {
      if (typed === '') next.add(c.words.split(' ')[0]!)
      else if (c.words.startsWith(typed + ' ')) next.add(c.words.slice(typed.length + 1).split(' ')[0]!)
    }
    return [...next].sort()
  }
  // No command yet (or `help`): the next word of every command path that starts with the words typed.
  if (!command) return filter(nextWords(before.filter((w) => !w.startsWith('-')).join(' ')))
  if (command.words === 'help') return filter(nextWords(args.join(' ')))
  if (args.length === 0 && command.argOptions) return filter(command.argOptions)
  const dynamic = ARG_DYNAMIC[command.words]
  if (dynamic && (args.length === 0 || MANY_ARGS.has(command.words))) return {values: [], dynamic, prefix: cur}
  return {values: [], prefix: cur}

  function valuesFor(f: CompletionFlag, typedValue: string, lead: string): Completion {
    const withLead = (values: readonly string[]): Completion => ({values: values.filter((v) => v.startsWith(typedValue)).map((v) => lead + v), prefix: lead + typedValue})
    if (f.options) return withLead(f.options)
    if (f.name === 'output') return withLead(command?.words === 'version' ? ['json', 'yaml'] : OUTPUT_VALUES)
    const dynamic = FLAG_DYNAMIC[f.name]
    if (dynamic) return {values: [], dynamic, prefix: typedValue}
    if (FILE_FLAGS.has(f.name)) return {values: [], prefix: typedValue, files: true}
    return {values: [], prefix: typedValue}
  }
}

/** cobra's ShellCompDirective values used here. */
export const DIRECTIVE = {noFileComp: 4, default: 0} as const

/** The shell scripts: thin wrappers that ask `BIN __complete WORDS…` (as cobra's do). */
export function completionScript(shell: Shell, bin: string): string {
  if (shell === 'bash' || shell === 'zsh') {
    const body = `_${bin}() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" out directive line
  local -a values=()
  out=$("\${COMP_WORDS[0]}" __complete "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null) || return
  directive="\${out##*:}"
  while IFS= read -r line; do
    [[ -z "$line" || "$line" == :* ]] && continue
    values+=("$line")
  done <<< "$out"
  COMPREPLY=("\${values[@]}")
  # Directive 0: nothing known here, let the shell complete file names.
  if [[ \${#values[@]} -eq 0 && "$directive" == 0 ]]; then COMPREPLY=($(compgen -f -- "$cur")); fi
  # A value ending in = (-o jsonpath=) takes more text: no space after it.
  if [[ \${#COMPREPLY[@]} -eq 1 && "\${COMPREPLY[0]}" == *= ]]; then compopt -o nospace 2>/dev/null; fi
}
complete -F _${bin} ${bin}
`
    if (shell === 'bash') return `# ${bin} completion for bash. Load with: source <(${bin} completion bash)\n${body}`
    return `#compdef ${bin}\n# ${bin} completion for zsh. Load with: source <(${bin} completion zsh)\nautoload -U +X bashcompinit && bashcompinit\n${body}`
  }
  return `# ${bin} completion for fish. Load with: ${bin} completion fish | source
function __${bin}_complete
  set -l words (commandline -opc) (commandline -ct)
  set -l out ($words[1] __complete $words[2..-1] 2>/dev/null)
  for line in $out
    string match -q -- ':*' $line; or echo $line
  end
end
complete -c ${bin} -f -a '(__${bin}_complete)'
`
}

/** The kubectl plugin completion script (kubectl 1.26+ runs kubectl_complete-NAME with the words). */
export function cobraOutput(values: string[], files: boolean): string {
  return values.map((v) => v + '\n').join('') + `:${files ? DIRECTIVE.default : DIRECTIVE.noFileComp}\n`
}
