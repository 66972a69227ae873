/**
 * Decodes the same DiscoveryResponse bytes (own.cjs --raw) with meshvm's codec and with the library
 * glue (lib-codec.ts), and checks that both give the same protojson-shaped answer, deep-equal.
 *   npx tsx bench/prototypes/grpc-libraries/compare.ts FILE.bin…
 */
import {deepStrictEqual} from 'node:assert'
import {readFileSync} from 'node:fs'
import {decodeDiscoveryResponse, discoveryResponseJson} from '../../../src/lib/grpc/xds.js'
import {decodeResponseJson} from './lib-codec.js'

for (const file of process.argv.slice(2)) {
  const bytes = readFileSync(file)
  const own = discoveryResponseJson(decodeDiscoveryResponse(bytes))
  const lib = decodeResponseJson(bytes)
  deepStrictEqual(JSON.parse(JSON.stringify(lib)), JSON.parse(JSON.stringify(own)))
  const resources = own.resources as {genericXdsConfigs: {configStatus?: string; errorState?: unknown}[]}[]
  const statuses = new Set(resources.flatMap((r) => r.genericXdsConfigs.map((g) => g.configStatus ?? '(unset)')))
  process.stdout.write(`${bytes.length} bytes, ${resources.length} ClientConfigs, statuses ${[...statuses].join('/')}: equal\n`)
}
