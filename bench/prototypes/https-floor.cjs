// The floor of any Node CLI that talks to the API server: Node's start-up, node:https, one TLS
// connection verified against the kubeconfig's CA, and N sequential GETs on it (keep-alive). No
// kubeconfig library, no CLI framework: what is left when meshvm's own code is taken away.
//   node bench/prototypes/https-floor.cjs N [PATH]   (KUBECONFIG: the bench's, a token user)
'use strict'
const {readFileSync} = require('node:fs')
const https = require('node:https')
const text = readFileSync(process.env.KUBECONFIG, 'utf8')
const server = /server: (\S+)/.exec(text)[1]
const ca = Buffer.from(/certificate-authority-data: (\S+)/.exec(text)[1], 'base64')
const token = /token: (\S+)/.exec(text)[1]
const agent = new https.Agent({keepAlive: true, maxSockets: 1, ca})
const n = Number(process.argv[2] ?? 1)
const path = process.argv[3] ?? '/api/v1/namespaces/istio-system/configmaps/istio-ca-root-cert'
let left = n
const next = () => {
  if (left-- === 0) return agent.destroy()
  https.get(new URL(path, server), {agent, headers: {Authorization: `Bearer ${token}`, Accept: 'application/json'}}, (res) => {
    let body = ''
    res
      .setEncoding('utf8')
      .on('data', (d) => (body += d))
      .on('end', () => {
        if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}`)
        JSON.parse(body)
        next()
      })
  })
}
next()
