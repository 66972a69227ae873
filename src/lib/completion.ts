/**
 * Shell completion, one engine for every shell and for kubectl: the bash, zsh and fish scripts (and
 * kubectl, through the kubectl_complete-meshvm plugin) hand the words typed so far to the hidden
 * `meshvm __complete` command, which answers from the command list (commands, flags, fixed values,
 * -o formats) and, for namespaces, contexts, WorkloadGroup and registration names, from the kubeconfig
 * and the cluster within a short time limit (completion-fetch.ts). Cobra works the same way.
 */
import {shellQuote} from './cli/prompt.js'
import {FORMATS} from './output/formats.js'

interface CompletionFlag {
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
  /** For an alias (`ps`): the words of the command it stands for (`proxy-status`). */
  aliasOf?: string
}

export const SHELLS = ['bash', 'zsh', 'fish'] as const
export type Shell = (typeof SHELLS)[number]

export type Dynamic = 'namespaces' | 'contexts' | 'workloadgroups' | 'registrations' | 'proxies' | 'remote-secrets'

export interface Completion {
  /** Candidates, already filtered by what was typed. */
  values: string[]
  /** Values to read from the kubeconfig or the cluster (then filtered by `prefix`). */
  dynamic?: Dynamic
  /** What the typed word must start with; candidates are whole words (with `--flag=` prepended when typed so). */
  prefix: string
  /** The word is a path: let the shell complete file names (`file`) or directory names (`dir`). */
  files?: PathKind
}

export type PathKind = 'file' | 'dir'

// Flags whose values come from the cluster or the kubeconfig, and positional arguments that name objects.
const FLAG_DYNAMIC: Record<string, Dynamic> = {namespace: 'namespaces', context: 'contexts', group: 'workloadgroups'}
// Flags and arguments that name a file or a directory: the shell completes paths there.
const PATH_FLAGS: Record<string, PathKind> = {kubeconfig: 'file', filename: 'file', 'output-file': 'file', archive: 'file', 'output-dir': 'dir', bundle: 'dir'}
const ARG_PATHS: Record<string, PathKind> = {'bundle verify': 'dir'}
const ARG_DYNAMIC: Record<string, Dynamic> = {
  'war describe': 'registrations',
  'war delete': 'registrations',
  'war rollout': 'workloadgroups',
  onboard: 'workloadgroups',
  bundle: 'workloadgroups',
  precheck: 'workloadgroups',
  'proxy-status': 'proxies',
  'remote-secret status': 'remote-secrets',
  'remote-secret rotate': 'remote-secrets',
}
const MANY_ARGS = new Set(['war describe', 'war delete'])
/** -o values offered (those with `=` take a template after them). */
const OUTPUT_VALUES = Object.values(FORMATS).map((text) => text.replace(/=.*/, '='))

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
  const flagNamed = (word: string): CompletionFlag | undefined => command?.flags.find((f) => (word.startsWith('--') ? f.name === word.slice(2) : f.char !== undefined && word === `-${f.char}`))
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
  // --flag=value
  const eq = cur.startsWith('--') ? cur.indexOf('=') : -1
  if (eq > 0) {
    const f = flagNamed(cur.slice(0, eq))
    if (f) return valuesFor(f, cur.slice(eq + 1), cur.slice(0, eq + 1))
  }
  if (pendingFlag) return valuesFor(pendingFlag, cur, '')
  if (cur.startsWith('-')) {
    return offer(command ? command.flags.flatMap((f) => [`--${f.name}`, ...(f.char ? [`-${f.char}`] : [])]) : ['--help', '--version'], cur)
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
  if (!command) return offer(nextWords(before.filter((w) => !w.startsWith('-')).join(' ')), cur)
  if (command.words === 'help') return offer(nextWords(args.join(' ')), cur)
  if (args.length === 0 && command.argOptions) return offer(command.argOptions, cur)
  const id = command.aliasOf ?? command.words
  if (ARG_DYNAMIC[id] && (args.length === 0 || MANY_ARGS.has(id))) return lookUp(cur, ARG_DYNAMIC[id])
  return lookUp(cur, undefined, args.length === 0 ? ARG_PATHS[id] : undefined)

  function valuesFor(f: CompletionFlag, typedValue: string, lead: string): Completion {
    if (f.options) return offer(f.options, typedValue, lead)
    if (f.name === 'output') return offer(command?.words === 'version' ? ['json', 'yaml'] : OUTPUT_VALUES, typedValue, lead)
    return lookUp(typedValue, FLAG_DYNAMIC[f.name], PATH_FLAGS[f.name])
  }
}

/** The values that start with what was typed, each after `lead` (`--output=`). */
function offer(values: readonly string[], typed: string, lead = ''): Completion {
  return {values: values.filter((v) => v.startsWith(typed)).map((v) => lead + v), prefix: lead + typed}
}

/** No fixed values: names to look up (`dynamic`), paths for the shell (`files`), or nothing. */
function lookUp(prefix: string, dynamic?: Dynamic, files?: PathKind): Completion {
  return {values: [], prefix, ...(dynamic ? {dynamic} : {}), ...(files ? {files} : {})}
}

/** cobra's ShellCompDirective values used here. */
const DIRECTIVE = {default: 0, noFileComp: 4, filterDirs: 16} as const

/**
 * The command a completion script runs for candidates: the meshvm that generated it, by absolute
 * path (`node /…/bin/run.js`, or the standalone executable alone), so TAB works whatever the user
 * types to run meshvm: a name on the PATH, or an alias (`alias meshvm="node $PWD/bin/run.js"`: bash
 * never expands an alias in the words it hands the completion function).
 */
export function selfCommand(execPath: string, script: string | undefined): string[] {
  return script === undefined || script === '' || script === execPath ? [execPath] : [execPath, script]
}

/** fish quoting: in single quotes only \\ and \' are special. */
function fishQuote(word: string): string {
  return `'${word.replace(/[\\']/g, (c) => `\\${c}`)}'`
}

/**
 * The shell scripts: thin wrappers that ask `meshvm __complete WORDS…` (as cobra's do), through
 * `command` (see selfCommand), or the path typed when the command word is one (`./bin/run.js`).
 * Directive 0 completes file names, 16 directory names, 4 nothing more.
 */
export function completionScript(shell: Shell, bin: string, command: string[]): string {
  if (shell === 'bash' || shell === 'zsh') {
    const body = `_${bin}() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" out directive line
  local -a values=() cmd=(${command.map(shellQuote).join(' ')})
  [[ "\${COMP_WORDS[0]}" == */* ]] && cmd=("\${COMP_WORDS[0]}")
  out=$("\${cmd[@]}" __complete "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null) || return
  directive="\${out##*:}"
  while IFS= read -r line; do
    [[ -z "$line" || "$line" == :* ]] && continue
    values+=("$line")
  done <<< "$out"
  COMPREPLY=("\${values[@]}")
  # Nothing known here but a path: the shell completes file (0) or directory (16) names.
  if [[ \${#values[@]} -eq 0 && ( "$directive" == 0 || "$directive" == 16 ) ]]; then
    compopt -o filenames 2>/dev/null
    local kind=-f
    [[ "$directive" == 16 ]] && kind=-d
    while IFS= read -r line; do COMPREPLY+=("$line"); done < <(compgen "$kind" -- "$cur")
  fi
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
  set -l cmd ${command.map(fishQuote).join(' ')}
  string match -q -- '*/*' $words[1]; and set cmd $words[1]
  set -l out ($cmd __complete $words[2..-1] 2>/dev/null)
  set -l values
  for line in $out
    string match -q -- ':*' $line; or set -a values $line
  end
  if test (count $values) -gt 0
    printf '%s\\n' $values
  else if test "$out[-1]" = ':0'
    __fish_complete_path (commandline -ct)
  else if test "$out[-1]" = ':16'
    __fish_complete_directories (commandline -ct)
  end
end
complete -c ${bin} -f -a '(__${bin}_complete)'
`
}

/** What `__complete` prints: one candidate per line, then cobra's `:DIRECTIVE` line (kubectl reads it too). */
export function cobraOutput(values: string[], files: PathKind | undefined): string {
  const directive = files === 'dir' ? DIRECTIVE.filterDirs : files === 'file' ? DIRECTIVE.default : DIRECTIVE.noFileComp
  return values.map((v) => v + '\n').join('') + `:${directive}\n`
}
