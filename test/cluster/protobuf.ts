/**
 * Protobuf request bodies, as kubectl sends them for typed calls (`kubectl create token|
 * serviceaccount|configmap|secret|namespace`, `kubectl auth can-i [--list]`, `kubectl auth whoami`):
 * `Content-Type: application/vnd.kubernetes.protobuf` with an `Accept` that also lists
 * application/json, so the server answers in JSON.
 *
 * The body is kube's envelope (k8s.io/apimachinery/pkg/runtime/serializer/protobuf): the magic
 * bytes "k8s\0", then a runtime.Unknown {typeMeta = 1 {apiVersion = 1, kind = 2}, raw = 2,
 * contentEncoding = 3, contentType = 4} whose `raw` is the typed object. Only the types above are
 * decoded, with the field numbers of k8s.io/api's generated.proto (core/v1, authentication/v1,
 * authorization/v1) and apimachinery's meta/v1 ObjectMeta; another type is a 415, as a server
 * without that type's protobuf codec would answer.
 */

type Json = Record<string, unknown>

/** A message: field number → [json name, type]. `map` fields are repeated {key = 1, value = 2} entries. */
type FieldType = 'string' | 'bytes' | 'int' | 'bool' | 'strings' | 'map' | 'bytesMap' | Message | {repeated: Message}
interface Message {
  [field: number]: [string, FieldType]
}

const OwnerReference: Message = {1: ['kind', 'string'], 3: ['name', 'string'], 4: ['uid', 'string'], 5: ['apiVersion', 'string'], 6: ['controller', 'bool'], 7: ['blockOwnerDeletion', 'bool']}
const ObjectMeta: Message = {
  1: ['name', 'string'],
  2: ['generateName', 'string'],
  3: ['namespace', 'string'],
  5: ['uid', 'string'],
  6: ['resourceVersion', 'string'],
  11: ['labels', 'map'],
  12: ['annotations', 'map'],
  13: ['ownerReferences', {repeated: OwnerReference}],
  14: ['finalizers', 'strings'],
}
const ObjectReference: Message = {1: ['kind', 'string'], 2: ['namespace', 'string'], 3: ['name', 'string'], 4: ['uid', 'string'], 5: ['apiVersion', 'string']}

const TYPES: Record<string, Message> = {
  'v1/ConfigMap': {1: ['metadata', ObjectMeta], 2: ['data', 'map'], 3: ['binaryData', 'bytesMap'], 4: ['immutable', 'bool']},
  'v1/Secret': {1: ['metadata', ObjectMeta], 2: ['data', 'bytesMap'], 3: ['type', 'string'], 4: ['stringData', 'map'], 5: ['immutable', 'bool']},
  'v1/ServiceAccount': {
    1: ['metadata', ObjectMeta],
    2: ['secrets', {repeated: ObjectReference}],
    3: ['imagePullSecrets', {repeated: {1: ['name', 'string']}}],
    4: ['automountServiceAccountToken', 'bool'],
  },
  'v1/Namespace': {1: ['metadata', ObjectMeta], 2: ['spec', {1: ['finalizers', 'strings']}]},
  'authentication.k8s.io/v1/TokenRequest': {
    1: ['metadata', ObjectMeta],
    2: [
      'spec',
      {1: ['audiences', 'strings'], 4: ['expirationSeconds', 'int'], 3: ['boundObjectRef', {1: ['kind', 'string'], 2: ['apiVersion', 'string'], 3: ['name', 'string'], 4: ['uid', 'string']}]},
    ],
  },
  'authentication.k8s.io/v1/SelfSubjectReview': {1: ['metadata', ObjectMeta]},
  'authorization.k8s.io/v1/SelfSubjectAccessReview': {
    1: ['metadata', ObjectMeta],
    2: [
      'spec',
      {
        1: [
          'resourceAttributes',
          {1: ['namespace', 'string'], 2: ['verb', 'string'], 3: ['group', 'string'], 4: ['version', 'string'], 5: ['resource', 'string'], 6: ['subresource', 'string'], 7: ['name', 'string']},
        ],
        2: ['nonResourceAttributes', {1: ['path', 'string'], 2: ['verb', 'string']}],
      },
    ],
  },
  'authorization.k8s.io/v1/SelfSubjectRulesReview': {1: ['metadata', ObjectMeta], 2: ['spec', {1: ['namespace', 'string']}]},
}

export class ProtobufError extends Error {}

interface Field {
  no: number
  wire: number
  value: bigint | Buffer
}

function* fields(buf: Buffer): Generator<Field> {
  let i = 0
  const varint = (): bigint => {
    let result = 0n
    let shift = 0n
    for (;;) {
      if (i >= buf.length) throw new ProtobufError('truncated varint')
      const b = buf[i++]!
      result |= BigInt(b & 0x7f) << shift
      if ((b & 0x80) === 0) return result
      shift += 7n
    }
  }
  while (i < buf.length) {
    const key = Number(varint())
    const no = key >>> 3
    const wire = key & 7
    if (wire === 0) yield {no, wire, value: varint()}
    else if (wire === 2) {
      const len = Number(varint())
      if (i + len > buf.length) throw new ProtobufError('truncated field')
      yield {no, wire, value: buf.subarray(i, i + len)}
      i += len
    } else if (wire === 1) i += 8
    else if (wire === 5) i += 4
    else throw new ProtobufError(`unsupported wire type ${wire}`)
  }
}

function decodeMessage(buf: Buffer, message: Message): Json {
  const out: Json = {}
  for (const f of fields(buf)) {
    const spec = message[f.no]
    if (!spec) continue
    const [name, type] = spec
    const bytes = f.value as Buffer
    if (type === 'string') out[name] = bytes.toString('utf8')
    else if (type === 'bytes') out[name] = bytes.toString('base64')
    else if (type === 'int') out[name] = Number(BigInt.asIntN(64, f.value as bigint))
    else if (type === 'bool') out[name] = f.value !== 0n
    else if (type === 'strings') ((out[name] ??= []) as string[]).push(bytes.toString('utf8'))
    else if (type === 'map' || type === 'bytesMap') {
      let key = ''
      let value = ''
      for (const e of fields(bytes)) {
        if (e.no === 1) key = (e.value as Buffer).toString('utf8')
        if (e.no === 2) value = type === 'map' ? (e.value as Buffer).toString('utf8') : (e.value as Buffer).toString('base64')
      }
      ;((out[name] ??= {}) as Json)[key] = value
    } else if ('repeated' in type) ((out[name] ??= []) as Json[]).push(decodeMessage(bytes, type.repeated as Message))
    else out[name] = decodeMessage(bytes, type)
  }
  return out
}

const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00])

/** The JSON object a protobuf request body stands for; throws ProtobufError for anything else. */
export function decodeProtobufBody(body: Buffer): Json {
  if (body.length < 4 || !body.subarray(0, 4).equals(MAGIC)) throw new ProtobufError('provided object is not a protobuf envelope (missing "k8s\\0" prefix)')
  let apiVersion = ''
  let kind = ''
  let raw: Buffer = Buffer.alloc(0)
  for (const f of fields(body.subarray(4))) {
    if (f.no === 1) {
      for (const t of fields(f.value as Buffer)) {
        if (t.no === 1) apiVersion = (t.value as Buffer).toString('utf8')
        if (t.no === 2) kind = (t.value as Buffer).toString('utf8')
      }
    } else if (f.no === 2) raw = f.value as Buffer
  }
  const message = TYPES[`${apiVersion}/${kind}`]
  if (!message) throw new ProtobufError(`no protobuf decoding for ${apiVersion}, Kind=${kind}`)
  return {apiVersion, kind, ...decodeMessage(raw, message)}
}
