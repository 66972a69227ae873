/**
 * The script `doctor --vm-exec` sends to a VM, run for real by sh with stand-ins for curl, iptables-save
 * and getent on PATH (what a VM with a running sidecar answers), and the parser of its answer.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {execFileSync} from 'node:child_process'
import {chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {normalSerial, parseProbe, pemSerials, probeScript, runVmExec, safeProbePath} from '../../../src/lib/doctor/probe.js'

let bin: string
const ENVOY_CERTS = JSON.stringify({
  certificates: [
    {
      ca_cert: [{path: '<inline>', serial_number: '00c6a1f2', subject_alt_names: [], days_until_expiration: '3650', valid_from: '2026-01-01T00:00:00Z', expiration_time: '2036-01-01T00:00:00Z'}],
      cert_chain: [
        {
          path: '<inline>',
          serial_number: '7e5d',
          subject_alt_names: [{uri: 'spiffe://cluster.local/ns/apps/sa/web'}],
          days_until_expiration: '0',
          valid_from: '2026-11-27T00:00:00Z',
          expiration_time: '2026-11-28T09:00:00Z',
        },
      ],
    },
  ],
})

beforeAll(() => {
  bin = mkdtempSync(join(tmpdir(), 'meshvm-probe-'))
  const tool = (name: string, body: string) => {
    writeFileSync(join(bin, name), `#!/bin/sh\n${body}\n`)
    chmodSync(join(bin, name), 0o755)
  }
  writeFileSync(join(bin, 'certs.json'), ENVOY_CERTS)
  tool(
    'curl',
    `echo "$*" >> ${JSON.stringify(join(bin, 'calls'))}
case "$*" in
  *15021/healthz/ready*) printf 200 ;;
  *15000/certs*) cat ${JSON.stringify(join(bin, 'certs.json'))} ;;
  *15000/clusters*) printf 'xds-grpc::observability_name::xds-grpc\\nxds-grpc::203.0.113.10:15012::cx_active::1\\nxds-grpc::203.0.113.10:15012::health_flags::healthy\\noutbound|80||web.apps.svc.cluster.local::10.0.0.5:8080::cx_active::0\\n' ;;
  *127.0.0.1:8080/ready*) printf '200 1' ;;
  *telnet://127.0.0.1:8443*) printf '000 1'; exit 28 ;;
  *127.0.0.1:*) printf '000 0'; exit 7 ;;
  *) exit 7 ;;
esac`,
  )
  tool('iptables-save', `printf -- '-A OUTPUT -p tcp -j ISTIO_OUTPUT\\n-A ISTIO_OUTPUT -j ISTIO_REDIRECT\\n-A ISTIO_REDIRECT -p tcp -j REDIRECT --to-ports 15001\\n'`)
  tool('nft', 'exit 1')
  // The VM's mesh.yaml (as bundle writes it), read with cat.
  tool(
    'cat',
    `if [ "$1" = /etc/istio/config/mesh ]; then printf 'defaultConfig:\\n  proxyMetadata:\\n    ISTIO_META_CLUSTER_ID: east-1\\n    ISTIO_META_DNS_CAPTURE: "true"\\n'; else exec /bin/cat "$@"; fi`,
  )
  // ss as iproute2 prints `ss -tn state established '( dport = :15012 )'` (no State column for one state).
  tool(
    'ss',
    `echo "$*" >> ${JSON.stringify(join(bin, 'ss-calls'))}
printf 'Recv-Q Send-Q Local Address:Port Peer Address:Port Process\\n0      0          10.0.0.5:41234   203.0.113.10:15012\\n0      0          10.0.0.5:41240   [::ffff:203.0.113.10]:15012\\n'`,
  )
  tool('getent', `[ "$2" = "istiod.istio-system.svc" ] && echo "203.0.113.10    istiod.istio-system.svc"`)
})

afterAll(() => rmSync(bin, {recursive: true, force: true}))

describe('doctor --vm-exec probe', () => {
  it('the script, run by sh on a VM with a sidecar, gives every section, and parses to what Envoy reports', () => {
    const out = execFileSync('/bin/sh', ['-s'], {input: probeScript({istiodHost: 'istiod.istio-system.svc'}), env: {PATH: `${bin}:/usr/bin:/bin`}, encoding: 'utf8'})
    const p = parseProbe(out)
    expect(p.sections).toEqual(['ready', 'certs', 'istiod', 'interception', 'dns', 'mesh', 'end'])
    expect(p).toMatchObject({
      ready: '200',
      cert: {expires: '2026-11-28T09:00:00Z', daysLeft: 0, serial: '7e5d'},
      rootSerials: ['c6a1f2'],
      // pilot-agent's connections to istiod's port, by peer (the mapped IPv6 form is the same peer).
      istiod: {peers: ['203.0.113.10:15012'], port: 15012},
      interceptionRules: 3,
      dns: '203.0.113.10',
      // What a new mesh.yaml must keep: DNS capture and the cluster ID.
      mesh: {dnsCapture: true, clusterId: 'east-1'},
    })
    expect(parseProbe('@@meshvm-doctor mesh\nread\n    ISTIO_META_CLUSTER_ID: "c 1"\n@@meshvm-doctor end\n').mesh).toEqual({dnsCapture: false, clusterId: 'c 1'})
    // Not readable: unknown, not "no DNS capture".
    expect(parseProbe('@@meshvm-doctor mesh\n@@meshvm-doctor end\n').mesh).toBeUndefined()
    // A section starts on a line of its own: after \n, not after a lone \r or U+2028 the VM printed.
    expect(parseProbe('@@meshvm-doctor ready\n200\r@@meshvm-doctor end\u2028@@meshvm-doctor x\n').sections).toEqual(['ready'])
    // Only reads: GETs of the local admin and readiness ports.
    expect(
      readFileSync(join(bin, 'calls'), 'utf8')
        .trim()
        .split('\n')
        .every((c) => /http:\/\/127\.0\.0\.1:150(00|21)\//.test(c)),
    ).toBe(true)
    expect(readFileSync(join(bin, 'ss-calls'), 'utf8')).toBe('-tn state established ( dport = :15012 )\n')
  })

  it("istiod's connection: the discovery address's port; without ss, /proc/net/tcp's established connections to it", () => {
    // A host without ss (PATH has only the stand-ins and awk): the script reads /proc/net/tcp itself;
    // its parser, fed what a VM's /proc/net/tcp and tcp6 hold.
    const script = probeScript({istiodHost: 'istiod.istio-system.svc', istiodPort: 15443})
    expect(script).toContain("ss -tn state established '( dport = :15443 )'")
    expect(script).toContain('":3C53"')
    // The /proc branch, run on files shaped as /proc/net/tcp and tcp6 (state 01: established).
    const tcp = join(bin, 'tcp')
    const tcp6 = join(bin, 'tcp6')
    writeFileSync(
      tcp,
      '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0500000A:A0B2 0A0A000A:3C53 01 00000000:00000000 00:00000000 00000000     0        0 1\n   1: 0500000A:A0B4 0A0A000A:3C53 06 00000000:00000000 00:00000000 00000000     0        0 2\n   2: 0500000A:A0B6 0A0A000A:3AA4 01 00000000:00000000 00:00000000 00000000     0        0 3\n',
    )
    writeFileSync(tcp6, '  sl  local_address                         remote_address                        st\n   0: 0000000000000000FFFF00000500000A:A0B8 0000000000000000FFFF00000B0A000A:3C53 01\n')
    const local = script.replace('command -v ss', 'false').replaceAll('/proc/net/tcp6', tcp6).replaceAll('/proc/net/tcp', tcp)
    const out = execFileSync('/bin/sh', ['-s'], {input: local, env: {PATH: `${bin}:/usr/bin:/bin`}, encoding: 'utf8'})
    expect(parseProbe(out).istiod).toEqual({peers: ['10.0.10.10:15443', '10.0.10.11:15443'], port: 15443})
    const answer = (body: string) => `@@meshvm-doctor istiod\n${body}\n@@meshvm-doctor end\n`
    expect(parseProbe(answer('via proc 15012\n0A0A000A:3AA4\n0000000000000000FFFF00000A0A000A:3AA4\n0000000000000000FFFF00000100A8C0:3AA4\nB80D0120000000000000000001000000:3AA4')).istiod).toEqual({
      peers: ['10.0.10.10:15012', '192.168.0.1:15012', '[2001:db8::1]:15012'],
      port: 15012,
    })
    expect(parseProbe(answer('via ss 15012\nRecv-Q Send-Q Local Address:Port Peer Address:Port Process')).istiod).toEqual({peers: [], port: 15012})
    // Neither ss nor /proc/net/tcp: unknown (no check), not "no connection".
    expect(parseProbe(answer('')).istiod).toBeUndefined()
  })

  it('values in the script are quoted: a host name with shell syntax is data, never code', () => {
    const pwned = join(bin, 'pwned')
    const host = `x'; touch ${pwned}; echo '$(touch ${pwned})\`touch ${pwned}\``
    const script = probeScript({istiodHost: host})
    const out = execFileSync('/bin/sh', ['-c', `${script.split('\n').find((l) => l.startsWith('istiod_host='))}\nprintf %s "$istiod_host"`], {encoding: 'utf8'})
    expect(out).toBe(host)
    expect(existsSync(pwned)).toBe(false)
  })

  it('a VM without a sidecar, and answers that are not what Envoy prints, parse to "unknown", never throw', () => {
    expect(parseProbe('@@meshvm-doctor ready\nunreachable\n@@meshvm-doctor certs\n<html>\n@@meshvm-doctor end\n')).toEqual({ready: 'unreachable', rootSerials: [], sections: ['ready', 'certs', 'end']})
    expect(parseProbe('garbage')).toEqual({rootSerials: [], sections: []})
    expect(normalSerial('00:C6:A1:F2')).toBe('c6a1f2')
  })

  it('runs the template through sh with the VM environment, and bounds its output and time', async () => {
    const r = await runVmExec('echo "$MESHVM_VM_ADDRESS"; cat', {MESHVM_VM_ADDRESS: '10.0.0.5'}, 'script\n', {timeoutMs: 10_000})
    expect(r).toMatchObject({code: 0, stdout: '10.0.0.5\nscript\n'})
    const big = await runVmExec('yes', {}, '', {timeoutMs: 10_000, maxBytes: 4096})
    expect(big.truncated).toBe(true)
    const slow = await runVmExec('sleep 30', {}, '', {timeoutMs: 200})
    expect(slow.timedOut).toBe(true)
  })

  it("asks what answers on the probe's port (one GET) and the group's other ports (a TCP connection that sends nothing), parsed per port", () => {
    const out = execFileSync('/bin/sh', ['-s'], {
      input: probeScript({istiodHost: 'istiod.istio-system.svc', app: {kind: 'http', path: '/ready', ports: [9090, 8080, 8443]}}),
      env: {PATH: `${bin}:/usr/bin:/bin`},
      encoding: 'utf8',
    })
    const p = parseProbe(out)
    expect(p.sections).toEqual(['ready', 'certs', 'istiod', 'interception', 'dns', 'mesh', 'app', 'end'])
    // 8443 accepts the connection (curl gives up waiting: exit 28): connected; 8080 is not asked over HTTP.
    expect(p.app).toEqual([
      {port: 9090, code: '000', connected: false, exit: 7},
      {port: 8080, code: '000', connected: false, exit: 7},
      {port: 8443, code: '000', connected: true, exit: 28},
    ])
    const calls = readFileSync(join(bin, 'calls'), 'utf8')
      .split('\n')
      .filter((l) => l.includes('127.0.0.1:') && !/:1500[0-9]|:15021/.test(l))
    expect(calls).toEqual([
      '-s -o /dev/null -w %{http_code} %{num_connects} --max-time 3 http://127.0.0.1:9090/ready',
      '-s -o /dev/null -w %{http_code} %{num_connects} --max-time 1 telnet://127.0.0.1:8080',
      '-s -o /dev/null -w %{http_code} %{num_connects} --max-time 1 telnet://127.0.0.1:8443',
    ])
    // A probe path is URL text only (no space, control character or non-ASCII letter); URL text a shell
    // would read (quotes, $( )) is quoted in the script: data, never code.
    expect(safeProbePath('/ready?x=1')).toBe(true)
    for (const bad of ['ready', '/a b', '/\n', '/é']) expect(safeProbePath(bad), bad).toBe(false)
    const pwned = join(bin, 'pwned-path')
    execFileSync('/bin/sh', ['-s'], {
      input: probeScript({istiodHost: 'istiod.istio-system.svc', app: {kind: 'http', path: `/x'$(touch${'$'}{IFS}${pwned})'`, ports: [9090]}}),
      env: {PATH: `${bin}:/usr/bin:/bin`},
      encoding: 'utf8',
    })
    expect(existsSync(pwned)).toBe(false)
  })

  it('reads every root of a PEM bundle (istio-ca-root-cert holds two while a root is rotated)', async () => {
    const {createMeshCa} = await import('../../cluster/mesh-ca.js')
    const [a, b] = [createMeshCa('a'), createMeshCa('b')]
    const serials = pemSerials(a.rootPem + b.rootPem)
    expect(serials).toHaveLength(2)
    expect(serials[0]).not.toBe(serials[1])
    expect(pemSerials('not a certificate')).toEqual([])
  })
})
