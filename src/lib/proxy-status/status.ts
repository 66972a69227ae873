/**
 * `istioctl proxy-status`, without the network: parse what each istiod says about its proxies
 * (`/debug/syncz`), merge in the VMs meshvm knows about, and draw istioctl's table. Pure: no
 * Kubernetes client, no I/O.
 *
 * The code is in model.ts (types, status text), syncz.ts (parsing the three syncz shapes), rows.ts
 * (rows) and render.ts (table, JSON); this module gathers them for callers.
 */
export * from './model.js'
export * from './syncz.js'
export * from './rows.js'
export * from './render.js'
