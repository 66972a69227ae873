/** doctor's fixes act on the cluster doctor read: every kubectl of a fix gets the user's --kubeconfig and the VM's context. */
import {describe, expect, it} from 'vitest'
import {kubectlInCluster} from '../../../src/lib/doctor/fix.js'

describe('kubectlInCluster', () => {
  it('adds --kubeconfig and --context to each kubectl command of a fix, quoted; nothing else changes', () => {
    const fix = `kubectl patch workloadgroup web -n apps --type=json -p '[]' && meshvm bundle web -n apps -d web-vm && { printf '%s\\n' x; } | sh -c 'ssh "$X"'`
    expect(kubectlInCluster(fix, {kubeconfig: '/home/me/k c', context: 'east'})).toBe(`kubectl --kubeconfig '/home/me/k c' --context east patch workloadgroup web -n apps --type=json -p '[]' && meshvm bundle web -n apps -d web-vm && { printf '%s\\n' x; } | sh -c 'ssh "$X"'`)
    expect(kubectlInCluster('kubectl delete envoyfilter a -n x && kubectl delete envoyfilter b -n y', {context: 'west'})).toBe('kubectl --context west delete envoyfilter a -n x && kubectl --context west delete envoyfilter b -n y')
    expect(kubectlInCluster('step 6 (sync): …; fix: kubectl delete envoyfilter a -n x', {context: 'west'})).toBe('step 6 (sync): …; fix: kubectl --context west delete envoyfilter a -n x')
    expect(kubectlInCluster('kubectl meshvm bundle web', {context: 'west'})).toBe('kubectl meshvm bundle web')
    expect(kubectlInCluster('kubectl delete x', {})).toBe('kubectl delete x')
  })
})
