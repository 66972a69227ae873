/**
 * Flags and small helpers shared by the `meshvm war` commands. No Kubernetes client here: commands
 * import this statically and load the cluster code lazily.
 */
import * as Flags from '@oclif/core/flags'
import {ExitCode, MeshvmError, UsageError} from '../errors.js'
import {parseSelector, selectorString} from '../kube/selector.js'
import {dns1123Subdomain} from '../validation/kube.js'

export const SOURCE_VALUES = ['all', 'war', 'workloadentry'] as const

export const listingFlags = {
  'all-namespaces': Flags.boolean({char: 'A', summary: 'List across all namespaces (adds a NAMESPACE column).'}),
  selector: Flags.string({
    char: 'l',
    summary: "Label selector on the registrations' own labels, e.g. app=web,version!=v1 (=, ==, !=, in, notin, exists, !key).",
  }),
  group: Flags.string({summary: 'Only registrations of this WorkloadGroup.'}),
  source: Flags.option({
    summary: 'Where rows come from: WorkloadAutoRegistrations, auto-registered WorkloadEntries, or both.',
    description:
      '"all" lists WorkloadAutoRegistrations (when the CRD is installed) and the auto-registered WorkloadEntries no WorkloadAutoRegistration owns; "workloadentry" lists every auto-registered or WAR-owned WorkloadEntry.',
    options: SOURCE_VALUES,
    default: 'all' as const,
  })(),
  'chunk-size': Flags.integer({
    summary: 'Objects per list request; 0 lists everything in one request.',
    default: 500,
    min: 0,
  }),
}

/** The output formats of the war listing commands. */
export const WAR_OUTPUT_KINDS = ['table', 'wide', 'json', 'yaml', 'name', 'jsonpath', 'jsonpath-as-json', 'custom-columns'] as const

/** -l checked before any request (a usage error names the flag), in the form sent to the API server. */
export function labelSelectorFlag(value: string | undefined): string | undefined {
  return value === undefined ? undefined : selectorString(parseSelector([value], '-l/--selector'))
}

export interface RegistrationRef {
  name: string
  /** From a TYPE/NAME argument (what -o name prints); otherwise a WAR is looked for first, then a WorkloadEntry. */
  source?: 'war' | 'workloadentry'
}

// The TYPE spellings kubectl accepts for these resources: kind, plural, short name, each optionally with its group.
const TYPES: Record<string, 'war' | 'workloadentry'> = {}
for (const [source, words, group] of [
  ['war', ['workloadautoregistration', 'workloadautoregistrations', 'war'], 'runtime.onboarding.tetrate.io'],
  ['workloadentry', ['workloadentry', 'workloadentries', 'we'], 'networking.istio.io'],
] as const) {
  for (const w of words) {
    TYPES[w] = source
    TYPES[`${w}.${group}`] = source
  }
}

/**
 * Registrations given as arguments: NAME, or TYPE/NAME as `meshvm war list -o name` prints them (commands
 * with several NAME arguments parse non-strictly, so a mistyped flag would arrive here as a name).
 */
export function registrationRefs(argv: unknown[], command: string): RegistrationRef[] {
  const args = argv.map(String)
  const flag = args.find((n) => n.startsWith('-'))
  if (flag !== undefined) throw new UsageError(`unknown flag ${flag}`, [`see meshvm ${command} --help for the flags this command takes`])
  if (args.length === 0) throw new UsageError('missing NAME: which registration?', [`list them with: meshvm war list`])
  const refs = new Map<string, RegistrationRef>()
  for (const arg of args) {
    const slash = arg.indexOf('/')
    const type = slash < 0 ? undefined : arg.slice(0, slash).toLowerCase()
    const name = slash < 0 ? arg : arg.slice(slash + 1)
    const source = type === undefined ? undefined : TYPES[type]
    if (type !== undefined && source === undefined) {
      throw new UsageError(`${JSON.stringify(arg)}: unknown TYPE ${JSON.stringify(type)}; expected NAME, or workloadautoregistration/NAME or workloadentry/NAME (as -o name prints them)`, [
        `list them with: meshvm war list -o name`,
      ])
    }
    const problem = dns1123Subdomain(name)
    if (problem) throw new UsageError(`NAME ${JSON.stringify(name)}: ${problem}`)
    refs.set(`${source ?? ''}/${name}`, {name, source})
  }
  return [...refs.values()]
}

/** The error of a run that did not delete some registrations: the first failure's, with exit 7 (partial) when others were deleted. */
export function notDeletedError(failures: MeshvmError[], total: number, deleted: number): MeshvmError {
  const first = failures[0]!
  return new MeshvmError(`${failures.length} of ${total} registration(s) not deleted: ${first.message}`, {exit: deleted > 0 ? ExitCode.PARTIAL : first.exit, code: first.code, hints: first.hints})
}
