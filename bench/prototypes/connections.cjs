// What a TLS connection costs a Node client: 4 concurrent GETs to the API server through an agent
// with at most N sockets (1: one connection, the requests queued on it; 4: four connections, each
// handshake and certificate verification of its own). No meshvm code.
//   node bench/prototypes/connections.cjs N   (KUBECONFIG: the bench's, a token user)
'use strict'
const {readFileSync} = require('node:fs')
const https = require('node:https')
const text = readFileSync(process.env.KUBECONFIG, 'utf8')
const server = /server: (\S+)/.exec(text)[1]
const ca = Buffer.from(/certificate-authority-data: (\S+)/.exec(text)[1], 'base64')
const token = /token: (\S+)/.exec(text)[1]
const agent = new https.Agent({keepAlive: true, maxSockets: Number(process.argv[2] ?? 1), ca})
let left = 4
for (let i = 0; i < 4; i++) {
  https.get(new URL('/api/v1/namespaces/istio-system/configmaps/istio-ca-root-cert', server), {agent, headers: {Authorization: `Bearer ${token}`}}, (res) => {
    if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}`)
    res.resume().on('end', () => {
      if (--left === 0) agent.destroy()
    })
  })
}
