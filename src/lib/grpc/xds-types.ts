/**
 * xDS type URLs, without the protobuf codec (xds.ts): the syncz parser needs the names, and must not
 * load the codec's vendor bundle for commands that never talk gRPC.
 */
export const CLIENT_CONFIG_TYPE = 'type.googleapis.com/envoy.service.status.v3.ClientConfig'
/** envoy.service.status.v3.ConfigStatus, by number. */
export const CONFIG_STATUS = ['UNKNOWN', 'SYNCED', 'NOT_SENT', 'STALE', 'ERROR'] as const
/** istiod's `TypeDebugSyncronization` (pilot/pkg/xds/statusgen.go). */
export const TYPE_DEBUG_SYNCZ = 'istio.io/debug/syncz'
