/**
 * Shared machinery of the benchmark: child servers, readiness, seeding through the sandbox API,
 * load with autocannon (request scenarios), multi-request flows with fetch (flow scenarios: the
 * payment lifecycles), the ledger closer's batch sizes, pgbench, RSS sampling, Markdown tables. The scenarios (bench/scenarios.ts)
 * and the orchestrator (bench/run.ts) are built from these; each topic is a module of bench/lib/.
 */

export * from './lib/backends.js'
export * from './lib/batches.js'
export * from './lib/flows.js'
export * from './lib/format.js'
export * from './lib/load.js'
export * from './lib/machine.js'
export * from './lib/postgres.js'
export * from './lib/sampling.js'
export * from './lib/scenario.js'
export * from './lib/seed.js'
export * from './lib/servers.js'
