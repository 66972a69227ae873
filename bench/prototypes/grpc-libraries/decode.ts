/**
 * Decode only, cold: the saved answers (own.cjs --raw) decoded to protojson's shape with meshvm's
 * codec (`own`) or the library glue (`lib`), `none` for the load alone.
 *   node decode.cjs own|lib|none FILE.bin…
 */
import {readFileSync} from 'node:fs'
import {decodeDiscoveryResponse, discoveryResponseJson} from '../../../src/lib/grpc/xds.js'
import {decodeResponseJson} from './lib-codec.js'

const [how, ...files] = process.argv.slice(2)
let n = 0
for (const f of files) {
  const bytes = readFileSync(f)
  if (how === 'own') n += (discoveryResponseJson(decodeDiscoveryResponse(bytes)).resources as unknown[]).length
  if (how === 'lib') n += (decodeResponseJson(bytes).resources as unknown[]).length
}
process.stdout.write(`${n}\n`)
