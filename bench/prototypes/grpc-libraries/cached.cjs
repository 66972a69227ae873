// Runs a prototype bundle the way meshvm loads its vendor bundles: through bin/load.cjs's V8 code
// cache (saved at exit, reused by the next run), as a product build would load a gRPC vendor bundle.
//   node cached.cjs out/lib.cjs ARGS…   (XDG_CACHE_HOME: where the cache goes)
'use strict'
const path = require('node:path')
const bundle = path.resolve(process.argv[2])
process.argv.splice(1, 1)
require('../../../bin/load.cjs').loadVendor(bundle)
