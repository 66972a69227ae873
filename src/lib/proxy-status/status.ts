/**
 * `istioctl proxy-status` without the network (pure: no Kubernetes client, no I/O), gathered for callers:
 * model.ts (types, status text), syncz.ts (the three syncz shapes), rows.ts (rows), render.ts (table, JSON).
 */
export * from './model.js'
export * from './syncz.js'
export * from './rows.js'
export * from './render.js'
