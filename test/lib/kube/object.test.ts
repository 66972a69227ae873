/** The object kernel's readers (src/lib/kube/object.ts): conditions, owners, labels, from anything. */
import {describe, expect, it} from 'vitest'
import {annotationsOf, conditionOf, conditionsOf, conditionStatus, isOwnedBy, labelsOf, ownerOfKind, ownerReferencesOf} from '../../../src/lib/kube/object.js'

const we = {
  metadata: {
    name: 'web-10.0.0.5',
    labels: {app: 'web', version: 1, broken: {x: 1}},
    annotations: {'istio.io/autoRegistrationGroup': 'web'},
    ownerReferences: [
      {kind: 'WorkloadGroup', name: 'web-old', uid: 'u1'},
      {kind: 'WorkloadGroup', name: 'web', uid: 'u2', controller: true},
      'not an object',
      {kind: 'WorkloadAutoRegistration', name: 'vm-1', uid: 'u3'},
    ],
  },
  status: {conditions: [{type: 'Healthy', status: 'False', reason: 'HTTPGetFailed'}, null, {type: 'Healthy', status: 'True'}]},
}

describe('kube/object readers', () => {
  it('conditions: the object entries; the first of a type; status as True/False/Unknown (YAML booleans too)', () => {
    expect(conditionsOf(we)).toHaveLength(2)
    expect(conditionOf(we, 'Healthy')).toEqual({type: 'Healthy', status: 'False', reason: 'HTTPGetFailed'})
    expect(conditionOf(we, 'Ready')).toBeUndefined()
    expect(conditionsOf({status: {conditions: 'x'}})).toEqual([])
    expect(conditionsOf(undefined)).toEqual([])
    expect([conditionStatus({status: true}), conditionStatus({status: 'false'}), conditionStatus({status: 'maybe'}), conditionStatus(undefined)]).toEqual(['True', 'False', 'Unknown', 'Unknown'])
  })

  it('owners: the controller of a kind first, else the first; by UID', () => {
    expect(ownerReferencesOf(we)).toHaveLength(3)
    expect(ownerOfKind(we, 'WorkloadGroup')?.name).toBe('web')
    expect(ownerOfKind(we, 'WorkloadAutoRegistration')?.name).toBe('vm-1')
    expect(ownerOfKind(we, 'Deployment')).toBeUndefined()
    expect(ownerOfKind({metadata: {ownerReferences: {}}}, 'WorkloadGroup')).toBeUndefined()
    // A reference whose name or kind is not a string names no owner (fuzzing found one that crashed).
    expect(ownerOfKind({metadata: {ownerReferences: [{kind: 'WorkloadGroup', name: {__proto__: null}, uid: 'u'}]}}, 'WorkloadGroup')).toBeUndefined()
    expect(
      ownerReferencesOf({
        metadata: {
          ownerReferences: [
            {kind: 7, name: 'x'},
            {kind: 'WorkloadGroup', name: 'ok'},
          ],
        },
      }),
    ).toEqual([{kind: 'WorkloadGroup', name: 'ok'}])
    expect([isOwnedBy(we, 'u3'), isOwnedBy(we, 'u9'), isOwnedBy(we, undefined)]).toEqual([true, false, false])
  })

  it('labels and annotations: string maps (scalars of hand-written YAML as text, other values left out)', () => {
    expect(labelsOf(we)).toEqual({app: 'web', version: '1'})
    expect(annotationsOf(we)).toEqual({'istio.io/autoRegistrationGroup': 'web'})
    expect(labelsOf({metadata: {labels: null}})).toEqual({})
    expect(labelsOf('nope')).toEqual({})
  })
})
