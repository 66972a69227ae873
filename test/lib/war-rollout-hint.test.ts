/** war rollout's time-out hint names the service that re-registers each kind of registration. */
import {describe, expect, it} from 'vitest'
import {timeoutHint} from '../../src/lib/war/rollout.js'

describe('timeoutHint', () => {
  it('a WorkloadAutoRegistration: the TSB onboarding agent', () => {
    expect(
      timeoutHint([
        {name: 'vm-a', kind: 'war', result: 're-onboarded'},
        {name: 'vm-b', kind: 'war', result: 'timed out'},
      ]),
    ).toBe('check the onboarding agent (journalctl -u onboarding-agent) on VM vm-b, or raise --timeout')
  })
  it("an auto-registered WorkloadEntry: Istio's sidecar service (istio.io VM debugging docs)", () => {
    expect(timeoutHint([{name: 'web-10.0.0.7', kind: 'workloadentry', result: 'timed out'}])).toBe(
      "check Istio's sidecar service (journalctl -u istio; /var/log/istio/istio.log) on VM web-10.0.0.7, or raise --timeout",
    )
  })
  it('both kinds late: both places; none marked late: by the kinds of the group', () => {
    expect(
      timeoutHint([
        {name: 'a', kind: 'war', result: 'timed out'},
        {name: 'web-1', kind: 'workloadentry', result: 'timed out'},
      ]),
    ).toBe("check the onboarding agent (journalctl -u onboarding-agent) or Istio's sidecar service (journalctl -u istio; /var/log/istio/istio.log) on VMs a, web-1, or raise --timeout")
    expect(timeoutHint([{name: 'web-1', kind: 'workloadentry', result: 'planned'}])).toBe(
      "check Istio's sidecar service (journalctl -u istio; /var/log/istio/istio.log) on the VM that did not come back, or raise --timeout",
    )
  })
})
