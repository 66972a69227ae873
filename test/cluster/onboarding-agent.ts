/**
 * Tetrate's onboarding agent, for the simulated VMs that hold a WorkloadAutoRegistration (seeded
 * with `mesh.addVm({source: 'war'})`, as the demo's TSB-style VMs are).
 *
 * What TSB documents ("Managing Onboarded Workloads"): the agent on the VM keeps its workload
 * onboarded; when its registration is deleted while the agent is connected, the Workload Onboarding
 * Plane drops the session and the agent onboards again, which creates a new registration (same
 * name, `<group>-<identity>`, new UID) from the WorkloadGroup as it is now. That is what
 * `meshvm war delete` and `meshvm war rollout` rely on. An agent that is not connected is not
 * running, so its deleted registration stays gone; an agent whose group is gone cannot onboard.
 *
 * The VM keeps what it is: its address, istiod, proxy version and health (a VM whose application
 * fails its probe comes back unhealthy).
 */
import type {TestCluster} from './index.js'
import type {VmSpec} from './mesh.js'
import {resourceKey, type StoreEvent} from './store.js'
import {Timers} from './timers.js'

const WAR = resourceKey('runtime.onboarding.tetrate.io', 'workloadautoregistrations')
const WG = resourceKey('networking.istio.io', 'workloadgroups')

export class OnboardingAgents {
  private readonly vms = new Map<string, VmSpec>()
  private readonly timers = new Timers()
  private readonly unsubscribe: () => void
  /** Re-onboardings done, by `namespace/name` (for tests). */
  readonly reonboarded: string[] = []

  constructor(
    private readonly cluster: Pick<TestCluster, 'store' | 'mesh'>,
    /** How long the agent takes to notice and onboard again. */
    private readonly delayMs = 300,
  ) {
    this.unsubscribe = cluster.store.onEvent((e) => this.onEvent(e))
  }

  /** Adds a TSB-style VM (its WAR and WorkloadEntry) and runs its agent. */
  add(vm: VmSpec): void {
    const spec: VmSpec = {...vm, source: 'war'}
    this.cluster.mesh.addVm(spec)
    const connected = spec.agentConnected ?? spec.connectedTo !== undefined
    if (connected) this.vms.set(`${vm.namespace}/${vm.name}`, spec)
  }

  private onEvent(e: StoreEvent): void {
    if (e.type !== 'DELETED' || e.resource !== WAR) return
    const key = `${e.object.metadata.namespace}/${e.object.metadata.name}`
    const vm = this.vms.get(key)
    if (!vm) return
    this.timers.later(this.delayMs, () => {
      // Onboarded again meanwhile (by an earlier event), or the group is gone: nothing to do.
      if (this.cluster.store.get(WAR, vm.namespace, vm.name)) return
      if (!this.cluster.store.get(WG, vm.namespace, vm.group)) return
      this.cluster.mesh.addVm({...vm, stale: false})
      this.reonboarded.push(key)
    })
  }

  stop(): void {
    this.unsubscribe()
    this.timers.clear()
  }
}
