/**
 * What kind of east-west gateway a Service is, and whether a VM can join through it. Pure.
 *
 * - The classic (sidecar) east-west gateway of `samples/multicluster/gen-eastwest-gateway.sh`:
 *   15443 (mTLS AUTO_PASSTHROUGH to services), 15012 (istiod's xDS and CA, expose-istiod.yaml),
 *   15017 (webhooks), 15021 (status).
 * - The ambient east-west gateway: a Gateway API Gateway of class `istio-east-west` (ambient
 *   multicluster, `istioctl multicluster expose`) whose one listener is HBONE on 15008. Its Service
 *   carries the class in the GEP-1762 label `gateway.networking.k8s.io/gateway-class-name`.
 *
 * VMs join as sidecars (open-source Istio has no ztunnel on VMs), so a VM needs the classic
 * gateway: a sidecar pointed at an ambient-only gateway cannot reach istiod (no 15012) nor services
 * (no 15443), the failures users report in istio/istio#57878 and #59584; one gateway for both is
 * asked for in #60887. A Service with both 15443 and 15008 serves both kinds of client.
 */
import {serviceGatewayAddress, type ServiceLike} from '../bundle/fetch.js'

export const CLASSIC_PORTS = [15012, 15017, 15443] as const
export const HBONE_PORT = 15008
export const AMBIENT_EAST_WEST_CLASS = 'istio-east-west'
/** GEP-1762: the class of the Gateway a generated resource (Deployment, Service) belongs to. */
export const GATEWAY_CLASS_LABEL = 'gateway.networking.k8s.io/gateway-class-name'

export type GatewayKind = 'classic' | 'ambient' | 'both' | 'unknown'

export interface GatewayServiceLike {
  metadata?: {labels?: Record<string, string>}
  spec?: {ports?: {port?: number}[]}
}

export interface GatewayReading {
  kind: GatewayKind
  /** The Gateway API class, when the Service names one. */
  className?: string
  /** The classic ports it does not expose. */
  missingClassic: number[]
  hbone: boolean
}

export function eastWestGatewayKind(svc: GatewayServiceLike): GatewayReading {
  const ports = new Set((svc.spec?.ports ?? []).map((p) => p.port))
  const className = svc.metadata?.labels?.[GATEWAY_CLASS_LABEL] || undefined
  const hbone = ports.has(HBONE_PORT)
  const missingClassic = CLASSIC_PORTS.filter((p) => !ports.has(p))
  const passthrough = ports.has(15443)
  const ambient = className === AMBIENT_EAST_WEST_CLASS || (hbone && !passthrough)
  const kind: GatewayKind = ambient ? (passthrough ? 'both' : 'ambient') : passthrough ? (hbone ? 'both' : 'classic') : 'unknown'
  return {kind, ...(className ? {className} : {}), missingClassic, hbone}
}

export interface GatewayVerdict {
  status: 'pass' | 'fail'
  message: string
  hint?: string
}

/** The fix for a sidecar VM pointed at an ambient-only gateway. */
export const AMBIENT_GATEWAY_FIX =
  'VMs join as sidecars (there is no ztunnel on VMs): deploy a classic east-west gateway beside the ambient one (samples/multicluster/gen-eastwest-gateway.sh --network NETWORK | istioctl install -y -f -, then expose-istiod.yaml and expose-services.yaml) and point the VMs at it with --ingress-service NAME[.NAMESPACE] (istio/istio#57878, #60887)'

/** What a sidecar VM needs of the gateway at `where` (`NS/NAME`): the classic ports, whatever else it serves. */
export function eastWestGatewayVerdict(where: string, r: GatewayReading): GatewayVerdict {
  const cls = r.className ? `class ${r.className}, ` : ''
  if (r.kind === 'ambient') {
    return {
      status: 'fail',
      message: `${where} is an ambient east-west gateway (${cls}${r.hbone ? 'HBONE on 15008' : 'no HBONE port 15008 either'}): a sidecar VM needs the classic one, with 15443 (mTLS passthrough), 15012 (istiod) and 15017 (webhooks); it lacks ${r.missingClassic.join(', ')}`,
      hint: AMBIENT_GATEWAY_FIX,
    }
  }
  if (r.missingClassic.length > 0) {
    return {
      status: 'fail',
      message: `${where} does not expose port(s) ${r.missingClassic.join(', ')}`,
      hint: 'VMs need 15012 (istiod), 15017 (webhooks) and 15443 (mTLS); regenerate the gateway with gen-eastwest-gateway.sh',
    }
  }
  return {
    status: 'pass',
    message: `${where} is a classic east-west gateway exposing 15012, 15017 and 15443${r.kind === 'both' ? ` (and HBONE on 15008 for ambient${r.className ? `, ${cls.slice(0, -2)}` : ''})` : ''}`,
  }
}

/** The gateway's current address as a VM would reach it, as meshvm bundle chooses it (bundle/fetch.ts). */
export function gatewayAddress(svc: unknown): string | undefined {
  const a = serviceGatewayAddress(svc as ServiceLike | undefined)
  return a?.kind === 'ip' ? a.address : a?.kind === 'hostname' ? a.hostname : undefined
}
