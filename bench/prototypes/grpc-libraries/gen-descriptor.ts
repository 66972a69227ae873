/**
 * Writes descriptor.json: the protobufjs JSON descriptor of DiscoveryRequest/DiscoveryResponse and
 * envoy.service.status.v3.ClientConfig, from the upstream .proto files in test/fixtures/protos (what a
 * product build would generate at build time instead of shipping .proto files). Only the types those
 * messages reach are kept.
 *   npx tsx bench/prototypes/grpc-libraries/gen-descriptor.ts
 */
import {existsSync, writeFileSync} from 'node:fs'
import {isAbsolute, join} from 'node:path'
import protobuf from 'protobufjs'
import {PROTO_DIR} from '../../../test/fixtures/protos/load.js'

const root = new protobuf.Root()
root.resolvePath = (_origin, target) => {
  if (isAbsolute(target)) return target
  const local = join(PROTO_DIR, target)
  return existsSync(local) ? local : target
}
root.loadSync(['envoy/service/discovery/v3/discovery.proto', 'envoy/service/status/v3/csds.proto'], {keepCase: false})
root.resolveAll()
const full = JSON.stringify(root.toJSON())
// Keep only the types reachable from the three messages (fields and oneofs of each kept type).
const keep = new Set<protobuf.ReflectionObject>()
const visit = (t: protobuf.ReflectionObject): void => {
  if (keep.has(t)) return
  keep.add(t)
  if (t instanceof protobuf.Type) for (const f of t.fieldsArray) if (f.resolvedType) visit(f.resolvedType)
}
for (const n of ['envoy.service.discovery.v3.DiscoveryRequest', 'envoy.service.discovery.v3.DiscoveryResponse', 'envoy.service.status.v3.ClientConfig']) visit(root.lookup(n)!)
const pruned = new protobuf.Root()
for (const t of keep) {
  const ns = pruned.define(t.parent!.fullName.replace(/^\./, ''))
  const json = (t as protobuf.Type).toJSON() as {nested?: unknown}
  delete json.nested
  ns.add(t instanceof protobuf.Type ? protobuf.Type.fromJSON(t.name, json as protobuf.IType) : protobuf.Enum.fromJSON(t.name, json as protobuf.IEnum))
}
const out = JSON.stringify(pruned.toJSON())
writeFileSync(new URL('descriptor.json', import.meta.url), `${out}\n`)
process.stdout.write(`full ${full.length} bytes, pruned ${out.length} bytes, ${keep.size} types\n`)
