/**
 * war/hbone.ts and the model's ambient readers: which auto-registered entries stand for HBONE-capable
 * proxies and lack the tunnel label (Istio 1.31, release note 60788), and on what evidence.
 */
import {describe, expect, it} from 'vitest'
import {atLeast, meshEnablesHbone, missingTunnelLabels, type HboneEvidence} from '../../src/lib/war/hbone.js'
import {registrationFromWar, registrationFromWorkloadEntry, tunnelOf, waypointBoundOf, type WorkloadEntryObject} from '../../src/lib/war/model.js'

const entry = (name: string, o: {group?: string; tunnel?: string; specTunnel?: string; controller?: string; war?: boolean; auto?: boolean; conditions?: object[]} = {}): WorkloadEntryObject => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadEntry',
  metadata: {
    name,
    namespace: 'apps',
    labels: {app: 'web', ...(o.tunnel ? {'networking.istio.io/tunnel': o.tunnel} : {})},
    annotations: {
      ...(o.auto === false ? {} : {'istio.io/autoRegistrationGroup': o.group ?? 'web'}),
      ...(o.controller ? {'istio.io/workloadController': o.controller} : {}),
    },
    ...(o.war ? {ownerReferences: [{apiVersion: 'runtime.onboarding.tetrate.io/v1alpha1', kind: 'WorkloadAutoRegistration', name, uid: 'u', controller: true}]} : {}),
  },
  spec: {address: '10.0.0.1', ...(o.specTunnel ? {labels: {'networking.istio.io/tunnel': o.specTunnel}} : {})},
  ...(o.conditions ? {status: {conditions: o.conditions as never}} : {}),
})

const evidence = (revisions: string[], istiods: [string, string, string?][] = []): HboneEvidence => ({
  revisions: new Set(revisions),
  istiods: new Map(istiods.map(([name, revision, version]) => [name, {revision, ...(version ? {version} : {})}])),
})

describe('ambient readers', () => {
  it('tunnelOf reads the label from metadata, else from the spec; waypointBoundOf reads istio.io/WaypointBound (or WaypointBound)', () => {
    expect(tunnelOf(entry('a'))).toBe('')
    expect(tunnelOf(entry('a', {tunnel: 'http'}))).toBe('http')
    expect(tunnelOf(entry('a', {specTunnel: 'http'}))).toBe('http')
    expect(waypointBoundOf(entry('a'))).toBeUndefined()
    expect(waypointBoundOf(entry('a', {conditions: [{type: 'istio.io/WaypointBound', status: 'False', reason: 'WaypointNotFound'}]}))?.reason).toBe('WaypointNotFound')
    expect(waypointBoundOf(entry('a', {conditions: [{type: 'WaypointBound', status: 'True'}]}))?.status).toBe('True')
  })

  it('rows carry tunnel and WaypointBound; a WAR row without its entry leaves them unknown', () => {
    const we = entry('a', {tunnel: 'http', conditions: [{type: 'istio.io/WaypointBound', status: 'True'}]})
    expect(registrationFromWorkloadEntry(we)).toMatchObject({tunnel: 'http', waypointBound: 'True'})
    const war = {metadata: {name: 'a', namespace: 'apps'}, status: {conditions: [{type: 'AgentConnected', status: 'True'}]}}
    expect(registrationFromWar(war)).not.toHaveProperty('tunnel')
    expect(registrationFromWar(war, undefined, we)).toMatchObject({tunnel: 'http', waypointBound: 'True'})
  })
})

describe('meshEnablesHbone and atLeast', () => {
  it.each([
    ['defaultConfig:\n  proxyMetadata:\n    ISTIO_META_ENABLE_HBONE: "true"\n', true],
    ['defaultConfig:\n  proxyMetadata:\n    ISTIO_META_ENABLE_HBONE: true\n', true],
    ['defaultConfig:\n  proxyMetadata: {}\n', false],
    ['', false],
    ['{not yaml', false],
  ])('%j → %s', (mesh, want) => {
    expect(meshEnablesHbone(mesh)).toBe(want)
  })

  it('compares major.minor', () => {
    expect(atLeast('1.31.0', '1.31')).toBe(true)
    expect(atLeast('1.31.0-rc.1', '1.31')).toBe(true)
    expect(atLeast('1.32.1', '1.31')).toBe(true)
    expect(atLeast('2.0.0', '1.31')).toBe(true)
    expect(atLeast('1.30.9', '1.31')).toBe(false)
    expect(atLeast(undefined, '1.31')).toBe(false)
    expect(atLeast('latest', '1.31')).toBe(false)
  })
})

describe('missingTunnelLabels', () => {
  it('nothing without evidence of HBONE capability', () => {
    expect(missingTunnelLabels([entry('a'), entry('b')], evidence([]))).toEqual([])
  })

  it('a labelled sibling of the same group is evidence for the others (not for other groups)', () => {
    const found = missingTunnelLabels([entry('a', {tunnel: 'http'}), entry('b'), entry('c', {group: 'db'})], evidence([]))
    expect(found.map((m) => [m.name, m.because])).toEqual([['b', 'entry a of the same WorkloadGroup carries networking.istio.io/tunnel (the VMs of a group share their proxy metadata)']])
  })

  it("the mesh config of the holding istiod's revision (default revision when none is named); the istiod's version says whether re-registering adds the label", () => {
    const ev = evidence(
      ['canary'],
      [
        ['istiod-canary-1', 'canary', '1.31.0'],
        ['istiod-old', 'canary', '1.30.2'],
        ['istiod-1', 'default', '1.31.1'],
      ],
    )
    const found = missingTunnelLabels([entry('a', {controller: 'istiod-canary-1'}), entry('b', {controller: 'istiod-old'}), entry('c', {controller: 'istiod-1'}), entry('d')], ev)
    expect(found.map((m) => [m.name, m.istiod, m.labelsOnRegistration])).toEqual([
      ['a', 'istiod-canary-1', true],
      ['b', 'istiod-old', false],
    ])
    expect(found[0]!.because).toBe('the mesh config of revision canary sets proxyMetadata ISTIO_META_ENABLE_HBONE=true')
    const dflt = missingTunnelLabels([entry('d')], evidence(['default']))
    expect(dflt.map((m) => [m.name, m.because, m.labelsOnRegistration])).toEqual([['d', 'the mesh config of the default revision sets proxyMetadata ISTIO_META_ENABLE_HBONE=true', undefined]])
  })

  it('judges only Istio auto-registered entries: not WAR-owned, not hand-written, not labelled ones', () => {
    const ev = evidence(['default'])
    expect(missingTunnelLabels([entry('w', {war: true}), entry('h', {auto: false}), entry('l', {tunnel: 'http'})], ev)).toEqual([])
  })
})
