import {afterEach, describe, expect, it} from 'vitest'
import {invocation, keepInvocation, kubeFlagsOf, setInvocation} from '../../../src/lib/cli/invocation.js'
import {editDistance, suggestCommands} from '../../../src/lib/cli/suggest.js'

const COMMANDS = ['onboard', 'bundle', 'war list', 'war describe', 'war delete', 'war rollout', 'war prune', 'precheck', 'proxy-status']

describe('kubeFlagsOf', () => {
  it('reads --kubeconfig, --context and -n in every spelling, up to --', () => {
    expect(kubeFlagsOf(['war', 'list', '--context', 'c2', '-n', 'apps', '--kubeconfig=/k'])).toEqual({context: 'c2', namespace: 'apps', kubeconfig: '/k'})
    expect(kubeFlagsOf(['-napps', '--namespace=x', '--context=c3'])).toEqual({namespace: 'x', context: 'c3'})
    expect(kubeFlagsOf(['onboard', '--', '--context', 'no'])).toEqual({})
  })

  it('reads a value joined to -n as oclif does (everything after -n, or after -n=)', () => {
    expect(kubeFlagsOf(['-na=b'])).toEqual({namespace: 'a=b'})
    expect(kubeFlagsOf(['-n=apps'])).toEqual({namespace: 'apps'})
  })

  it('an empty value is no value (issue 27: -n "" is the default namespace, and hints do not repeat it)', () => {
    expect(kubeFlagsOf(['war', 'list', '-n', '', '--context=', '--kubeconfig', ''])).toEqual({})
    expect(kubeFlagsOf(['-n', 'apps', '-n', ''])).toEqual({namespace: 'apps'})
  })
})

describe('keepInvocation', () => {
  afterEach(() => setInvocation([], '/usr/bin/meshvm'))

  it("adds the user's --kubeconfig/--context/-n after the command words", () => {
    setInvocation(['war', 'rollout', 'ratings', '--context', 'cluster2', '-n', 'bookinfo', '--kubeconfig', '/tmp/my kube'], '/usr/bin/meshvm')
    expect(keepInvocation('resume with: meshvm war rollout ratings', COMMANDS)).toBe("resume with: meshvm war rollout --kubeconfig '/tmp/my kube' --context cluster2 -n bookinfo ratings")
  })

  it('quotes a value the shell would expand: a literal ~ stays a literal', () => {
    setInvocation(['war', 'list', '--kubeconfig', '~/kube'], '/usr/bin/meshvm')
    expect(keepInvocation('list them with: meshvm war list', COMMANDS)).toBe("list them with: meshvm war list --kubeconfig '~/kube'")
  })

  it('keeps a namespace the line already names, and leaves other text alone', () => {
    setInvocation(['war', 'describe', 'x', '--context', 'c2', '-n', 'apps'], '/usr/bin/meshvm')
    expect(keepInvocation('list the registrations with: meshvm war list -n other', COMMANDS)).toBe('list the registrations with: meshvm war list --context c2 -n other')
    expect(keepInvocation('create it: meshvm onboard web -n apps --port … --apply', COMMANDS)).toBe('create it: meshvm onboard --context c2 web -n apps --port … --apply')
    expect(keepInvocation('meshvm applies them to every WorkloadGroup', COMMANDS)).toBe('meshvm applies them to every WorkloadGroup')
  })

  it('says `kubectl meshvm` as a kubectl plugin', () => {
    setInvocation(['war', 'list'], '/home/u/bin/kubectl-meshvm')
    expect(invocation.bin).toBe('kubectl meshvm')
    expect(keepInvocation('list them with: meshvm war list', COMMANDS)).toBe('list them with: kubectl meshvm war list')
  })
})

describe('suggestCommands', () => {
  it('finds the command meant (cobra: distance 2, or a prefix)', () => {
    expect(editDistance('lsit', 'list')).toBe(2)
    expect(suggestCommands('war lsit', COMMANDS)[0]).toBe('war list')
    expect(suggestCommands('wat list', COMMANDS)[0]).toBe('war list')
    expect(suggestCommands('onbaord', COMMANDS)).toEqual(['onboard'])
    expect(suggestCommands('war lsit extra-arg', COMMANDS)[0]).toBe('war list')
    expect(suggestCommands('proxy', COMMANDS)).toEqual(['proxy-status'])
    expect(suggestCommands('zzzzzz', COMMANDS)).toEqual([])
  })
})
