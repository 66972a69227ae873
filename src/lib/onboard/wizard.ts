/**
 * The interactive `meshvm onboard` wizard: asks only for what the command line did not give, checks
 * each answer with the same parsers the flags use, and returns the completed input.
 */
import type {Prompter} from '../cli/prompt.js'
import {shellQuote} from '../cli/prompt.js'
import {dns1035Label, dns1123Label, dns1123Subdomain} from '../validation/kube.js'
import {HANDLERS, PROBE_FLAGS, parseLabels, parsePorts, splitCommand, type OnboardInput, type ProbeInput} from './spec.js'

/** An answer's validation: true, or the message of what `fn` throws. */
function check(fn: () => unknown): string | true {
  try {
    fn()
    return true
  } catch (err) {
    return (err as Error).message
  }
}

/** What the command line set explicitly, so the wizard does not ask for it again. */
export interface WizardGiven {
  serviceAccount?: boolean
  createNamespace?: boolean
  createServiceAccount?: boolean
  /** --apply, --dry-run, --diff or --output-dir: what to do with the objects is decided. */
  action?: boolean
}

export async function runOnboardWizard(given: OnboardInput, ask: Prompter, set: WizardGiven = {}): Promise<OnboardInput & {apply?: boolean}> {
  const input: OnboardInput & {apply?: boolean} = {...given}
  input.name ??= await ask.input("Workload group name (the VMs' service name):", {
    validate: (v) => (given.serviceEntry ? dns1123Label(v) : dns1035Label(v)) ?? true,
  })
  input.namespace ??= await ask.input('Namespace:', {default: 'default', validate: (v) => dns1123Label(v) ?? true})
  if (!input.ports || input.ports.length === 0) {
    const ports = await ask.input('Ports the VMs serve (name=port[:targetPort][/PROTOCOL], comma-separated):', {
      default: 'http=8080',
      validate: (v) => check(() => parsePorts([v])),
    })
    input.ports = [ports]
  }
  if (!input.labels || input.labels.length === 0) {
    const labels = await ask.input('Workload labels (key=value, comma-separated):', {
      default: `app=${input.name}`,
      validate: (v) => check(() => parseLabels([v])),
    })
    input.labels = labels === '' ? [] : [labels]
  }
  if (!HANDLERS.some((k) => input.probe?.[k] !== undefined)) {
    const kind = await ask.select(
      'Readiness probe (marks the VM ready in the mesh only when it passes):',
      [
        {value: 'none', name: 'none'},
        {value: 'http', name: 'HTTP GET'},
        {value: 'https', name: 'HTTPS GET'},
        {value: 'tcp', name: 'TCP connect'},
        {value: 'exec', name: 'run a command'},
      ],
      {default: 'none'},
    )
    const firstPort = () => String(parsePorts(input.ports ?? [])[0]?.targetPort ?? 8080)
    if (kind === 'http' || kind === 'https') {
      const target = await ask.input('Probe PORT[/PATH]:', {
        default: `${firstPort()}/healthz`,
        validate: (v) => (/^\d{1,5}(\/\S*)?$/.test(v) ? true : 'expected PORT[/PATH], e.g. 8080/healthz'),
      })
      input.probe = {...input.probe, [kind]: target}
    } else if (kind === 'tcp') {
      input.probe = {...input.probe, tcp: await ask.input('Probe PORT:', {default: firstPort(), validate: (v) => (/^\d{1,5}$/.test(v) ? true : 'expected a port number')})}
    } else if (kind === 'exec') {
      input.probe = {
        ...input.probe,
        exec: await ask.input('Probe command:', {validate: (v) => (check(() => splitCommand(v)) === true && v.trim() !== '' ? true : 'expected a command')}),
      }
    }
  }
  if (given.serviceEntry === undefined) {
    input.serviceEntry = await ask.confirm('Expose the VMs through a ServiceEntry instead of a Kubernetes Service (for hosts that are not Kubernetes Services)?', {
      default: false,
    })
    if (input.serviceEntry && (!input.hosts || input.hosts.length === 0)) {
      const host = await ask.input('Host name clients use:', {default: `${input.name}.${input.namespace}.svc.cluster.local`})
      input.hosts = [host]
    }
  }
  if (!set.serviceAccount) {
    input.serviceAccount = await ask.input('Service account the VMs run as (their mesh identity):', {
      default: input.serviceAccount ?? 'default',
      validate: (v) => dns1123Subdomain(v) ?? true,
    })
  }
  if (!set.createNamespace) input.createNamespace = await ask.confirm(`Also create the namespace ${input.namespace}?`, {default: false})
  if (!set.createServiceAccount && input.serviceAccount !== undefined && input.serviceAccount !== 'default') {
    input.createServiceAccount = await ask.confirm(`Also create the ServiceAccount ${input.serviceAccount}?`, {default: true})
  }
  if (!set.action) input.apply = await ask.confirm('Apply the objects to the cluster now (server-side apply)? No prints them.', {default: false})
  return input
}

/** The non-interactive command line that produces the same result, for scripts and docs. */
export function onboardCommandLine(input: OnboardInput, extra: string[] = []): string {
  const words = ['meshvm', 'onboard', input.name ?? 'NAME', '-n', input.namespace ?? 'default']
  const add = (flag: string, value: string | undefined) => {
    if (value !== undefined) words.push(flag, value)
  }
  for (const p of input.ports ?? []) add('--port', p)
  for (const l of input.labels ?? []) add('--label', l)
  for (const a of input.annotations ?? []) add('--annotation', a)
  if (input.serviceAccount !== 'default') add('--service-account', input.serviceAccount)
  add('--network', input.network)
  add('--locality', input.locality)
  add('--weight', input.weight)
  if (input.serviceEntry) words.push('--service-entry')
  for (const h of input.hosts ?? []) add('--host', h)
  if (input.createNamespace) words.push('--create-namespace')
  if (input.createServiceAccount) words.push('--create-service-account')
  for (const [key, flag] of Object.entries(PROBE_FLAGS)) {
    for (const value of [input.probe?.[key as keyof ProbeInput] ?? []].flat()) add(`--${flag}`, value)
  }
  return [...words, ...extra].map(shellQuote).join(' ')
}
